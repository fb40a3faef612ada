"""What both sides of the serving suite share: the checkpoint, the classifier head and the raw texts.

The serving suite times raw text -> label: all-MiniLM-L6-v2 (the real checkpoint and vocab) with a two-class
head whose weights are drawn from one seeded generator, so ours and Hugging Face's compute the same function
(the suite reports how often their labels agree). The texts are the SST-2 dev sentences, as a user would send.
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


def head_weights(hidden_size, seed=0):
    """`(kernel [hidden, 2], bias [2])` float32: the classifier head both sides load."""
    rng = np.random.default_rng(seed)
    kernel = rng.normal(0.0, 0.02, size=(hidden_size, len(LABELS))).astype(np.float32)
    return kernel, np.array([0.01, -0.01], dtype=np.float32)


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
