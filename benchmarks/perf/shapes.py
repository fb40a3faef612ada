"""Model shapes the performance suite measures, and their FLOPs.

FLOPs count a multiply-add as 2. Encoder forward per sequence of length s, per layer:
  projections q, k, v, output: 4 * 2 * s * h^2; feed-forward: 2 * 2 * s * h * i;
  attention scores and the weighted sum: 2 * 2 * s^2 * h.
Embeddings, LayerNorm, softmax, GELU and the pooler are left out (under 1% at these shapes).
A training step is counted as 3x the forward pass (backward = 2x forward), the usual convention.
"""

SHAPES = {
    # name: (layers, hidden, heads, intermediate)
    "minilm": (6, 384, 12, 1536),       # all-MiniLM-L6-v2
    "base": (12, 768, 12, 3072),        # BERT-Base
    "large": (24, 1024, 16, 4096),      # BERT-Large
}
VOCAB_SIZE = 30522


def encoder_forward_flops(shape, seq_length):
    """FLOPs of one sequence through the encoder (see the module notes)."""
    layers, hidden, _, intermediate = SHAPES[shape]
    per_layer = 8 * seq_length * hidden ** 2 + 4 * seq_length * hidden * intermediate + 4 * seq_length ** 2 * hidden
    return layers * per_layer
