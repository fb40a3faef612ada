"""Synthetic packed inputs: the same token ids for every peer (speed does not depend on the values)."""

import numpy as np

from benchmarks.perf.shapes import VOCAB_SIZE


def packed_inputs(batch_size, seq_length, seed=0):
    """`(input_word_ids, input_mask, input_type_ids, labels)` as int32/int64 NumPy arrays.

    Full-length sequences (no padding): [CLS] ids... [SEP] ids... [SEP], segment B the second half.
    """
    rng = np.random.default_rng(seed)
    ids = rng.integers(1000, VOCAB_SIZE, size=(batch_size, seq_length), dtype=np.int32)  # (batch, seq)
    half = seq_length // 2
    ids[:, 0], ids[:, half - 1], ids[:, -1] = 101, 102, 102
    mask = np.ones_like(ids)
    types = np.zeros_like(ids)
    types[:, half:] = 1
    labels = rng.integers(0, 2, size=(batch_size,), dtype=np.int32)
    return ids, mask, types, labels
