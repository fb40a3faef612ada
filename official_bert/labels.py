"""Label conventions shared by the data pipelines, which write labels, and the task losses, which read them."""

# Label id of positions the token-classification loss and metrics skip: [CLS], [SEP], padding and non-first
# word pieces (PyTorch's `ignore_index`).
IGNORE_LABEL = -100
