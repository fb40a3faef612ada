"""What both sides of the serving suite share: the checkpoint, the classifier head and the raw texts.

The serving suite times raw text -> label: all-MiniLM-L6-v2 (the real checkpoint and vocab) fine-tuned once a run as a
two-class sentiment classifier (`fine_tune`: one epoch on `TRAINING_TEXTS` SST-2 training sentences) and loaded by
every worker from that directory, so ours and Hugging Face's compute the same function (the suite reports how often
their labels agree). A trained model puts most sentences far from its decision boundary, as a served model does; a
random head left them near it, where any rounding (int8 above all) flipped labels. The texts are the SST-2 dev
sentences, as a user would send.
"""

import csv
import os
import time

import numpy as np

from benchmarks.perf.timing import measure

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED_DATA = os.environ.get("OFFICIAL_BERT_SHARED_DATA", os.path.join(REPO_ROOT, "..", "shared", "data"))
CHECKPOINT = os.path.join(SHARED_DATA, "all-MiniLM-L6-v2")
TEXTS_TSV = os.path.join(SHARED_DATA, "glue", "SST-2", "dev.tsv")
CALIBRATION_TSV = os.path.join(SHARED_DATA, "glue", "SST-2", "train.tsv")  # full-int8 LiteRT: 100 training sentences
CALIBRATION_TEXTS = 100
TRAINING_TEXTS = 4000  # the model is fine-tuned on the first SST-2 training sentences
LABELS = ("negative", "positive")
MAX_SEQ_LENGTH = 128


def serving_texts(path=TEXTS_TSV):
    """The `sentence` column of a GLUE SST-2 TSV, in file order."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: the SST-2 dev TSV the serving suite sends (set OFFICIAL_BERT_SHARED_DATA)")
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    if not rows or "sentence" not in rows[0]:
        raise ValueError(f"{path}: expected a header with a 'sentence' column")
    return [row["sentence"] for row in rows]


def serving_labels(path=TEXTS_TSV):
    """The `label` column of a GLUE SST-2 TSV as ints, in file order."""
    with open(path, encoding="utf-8", newline="") as f:
        return [int(row["label"]) for row in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)]


def fine_tune(directory):
    """Fine-tunes the suite's model and saves it to `directory`: a Hugging Face checkpoint directory
    (`BertForSequenceClassification`, the tokenizer files) plus `head.npz` (`head_weights`' arrays).

    The recipe of the fine-tuning benchmarks (`benchmarks/pytorch_loop.py`: AdamW at 5e-5, 10% warmup, batch 32),
    one epoch over the first `TRAINING_TEXTS` SST-2 training sentences, seed 0, head drawn by transformers.

    Returns: its accuracy on the SST-2 dev sentences.
    """
    import shutil

    import torch
    import transformers

    from benchmarks.pytorch_loop import train_pytorch
    from benchmarks.start_checkpoint import TOKENIZER_FILES

    torch.manual_seed(0)
    tokenizer = transformers.AutoTokenizer.from_pretrained(CHECKPOINT)
    model = transformers.BertForSequenceClassification.from_pretrained(CHECKPOINT, num_labels=len(LABELS))

    def encode(texts):
        return tokenizer(texts, truncation=True, max_length=MAX_SEQ_LENGTH, padding="max_length", return_tensors="pt")

    texts = serving_texts(CALIBRATION_TSV)[:TRAINING_TEXTS]
    labels = torch.tensor(serving_labels(CALIBRATION_TSV)[:TRAINING_TEXTS])
    train_pytorch(model, encode(texts), labels, len(texts), 1, 5e-5, 0, log_every=50, trim_padding=True)
    model.eval()
    model.save_pretrained(directory)
    for name in TOKENIZER_FILES:
        if os.path.isfile(os.path.join(CHECKPOINT, name)):
            shutil.copy(os.path.join(CHECKPOINT, name), directory)
    np.savez(os.path.join(directory, "head.npz"), kernel=model.classifier.weight.detach().numpy().T,
             bias=model.classifier.bias.detach().numpy())
    predicted = []
    with torch.no_grad():
        for batch in batches(serving_texts(), 64):
            predicted += model(**tokenizer(batch, padding=True, truncation=True, max_length=MAX_SEQ_LENGTH,
                                           return_tensors="pt")).logits.argmax(-1).tolist()
    return float(np.mean(np.array(predicted) == np.array(serving_labels())))


def head_weights(directory):
    """`(kernel [hidden, 2], bias [2])` float32: the classifier head of `fine_tune`'s model."""
    with np.load(os.path.join(directory, "head.npz")) as head:
        return head["kernel"].astype(np.float32), head["bias"].astype(np.float32)


def batches(texts, batch_size):
    """Consecutive slices of `texts` of `batch_size` (the last may be shorter)."""
    return [texts[start:start + batch_size] for start in range(0, len(texts), batch_size)]


def time_classifier(classify, texts, latency_texts, batch_size, repeats):
    """Times a raw-text classifier both ways a server is used.

    Args:
        classify: list of strings -> int labels [len].
        texts: all the texts; the first `latency_texts` are also sent one at a time.
        latency_texts: how many single-text requests to time (after 5 warm-up requests).
        batch_size: texts per request of the throughput passes.
        repeats: timed passes over all `texts` (after 2 warm-up passes).

    Returns: dict with `latencies_s` (one per single request), the `measure` timing of one pass over all texts,
    `num_texts`, `batch_size`, and the label of every text (from the last pass).
    """
    for text in texts[:5]:
        classify([text])
    latencies = []
    for text in texts[:latency_texts]:
        start = time.perf_counter()
        classify([text])
        latencies.append(time.perf_counter() - start)
    labels = []
    timing = measure(lambda: labels.append(np.concatenate([classify(b) for b in batches(texts, batch_size)])), repeats)
    return {"batch_size": batch_size, "num_texts": len(texts), "latencies_s": latencies,
            "labels": [int(label) for label in labels[-1]], **timing}
