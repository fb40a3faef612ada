"""Dense-op helpers: the row of each ragged value, and character offsets from byte offsets."""

import numpy as np
import tensorflow as tf

from official_bert.text.ragged_ops import characters_before, row_ids


def test_row_ids_with_empty_rows():
    splits = tf.constant([0, 0, 2, 2, 5, 5], tf.int64)
    np.testing.assert_array_equal(row_ids(splits, tf.constant(5, tf.int64)).numpy(), [1, 1, 3, 3, 3])
    assert row_ids(tf.constant([0], tf.int64), tf.constant(0, tf.int64)).shape == (0,)


def test_characters_before_byte_offsets_equal_python_string_indices():
    texts = ["Zürich café", "日本 x", ""]
    offsets = [[0, 1, 3, 13], [0, 3, 7, 8], [0, -1, -1, -1]]  # byte offsets; -1: padding
    expected = [[len(t.encode()[:o].decode()) if o >= 0 else -1 for o in row] for t, row in zip(texts, offsets)]
    got = characters_before(tf.constant(texts), tf.constant(offsets, tf.int64))
    assert got.numpy().tolist() == expected == [[0, 1, 2, 11], [0, 1, 3, 4], [0, -1, -1, -1]]
