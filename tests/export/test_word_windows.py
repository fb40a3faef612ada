"""`export.word_windows` packs words into the windows `tagging_dataset.build_windows` packs (the entity tagger's)."""

import numpy as np
import pytest
import tensorflow as tf

from export.word_windows import word_windows
from official_bert.data.tagging_dataset import build_windows

SPECIAL = {"start_of_sequence_id": 1, "end_of_segment_id": 2, "padding_id": 0}


def _reference(texts, seq_length):
    """(window, offset) of every word from `build_windows`: the window row and its first piece's position - 1."""
    pieces = [[[5] * size for size in sizes] for sizes in texts]
    windows = build_windows(pieces, seq_length, SPECIAL)
    found = {}
    for row, position in zip(*np.nonzero(windows.word_index >= 0)):
        found[windows.sentence[row], windows.word_index[row, position]] = (row, position - 1)
    return [found[t, w] for t, sizes in enumerate(texts) for w in range(len(sizes))]


def _ours(texts, seq_length):
    budget = seq_length - 2
    sizes = [min(size, budget) for text in texts for size in text]
    ends = [sum(len(t) for t in texts[:i + 1]) for i, text in enumerate(texts) for _ in text]
    window, offset, starts = word_windows(tf.constant(sizes, tf.int64), tf.constant(ends, tf.int64), budget)
    assert starts.numpy().sum() == (window.numpy().max() + 1 if sizes else 0)
    return list(zip(window.numpy().tolist(), offset.numpy().tolist()))


@pytest.mark.parametrize("seed", range(6))
def test_windows_equal_build_windows_on_random_texts(seed):
    rng = np.random.default_rng(seed)
    seq_length = int(rng.integers(3, 40))
    texts = [rng.integers(1, 6 if seed % 2 else 2 * seq_length, size=rng.integers(0, 60)).tolist()
             for _ in range(rng.integers(1, 8))]  # empty texts, words longer than a window, many windows
    assert _ours(texts, seq_length) == _reference(texts, seq_length)


def test_no_words_and_one_word():
    assert _ours([[], []], 10) == [] == _reference([[], []], 10)
    assert _ours([[], [30], []], 10) == [(0, 0)] == _reference([[], [30], []], 10)
