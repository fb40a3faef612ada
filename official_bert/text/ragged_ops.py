"""Dense-op helpers for tokenized text: the row of each ragged value, and character offsets from byte offsets.

Only core ops that TFLite's builtins and stock TF Serving have (no `RaggedRange`).
"""

import tensorflow as tf


def row_ids(row_splits, num_values):
    """Row index of each value of a ragged tensor.

    Args:
        row_splits: int64 [rows + 1].
        num_values: int64 scalar, row_splits[-1].

    Returns:
        int64 [num_values].
    """
    # +1 at the start of every row after the first; empty rows stack their +1s on one position.
    bumps = tf.scatter_nd(tf.reshape(row_splits[1:-1], [-1, 1]), tf.ones_like(row_splits[1:-1]),
                          tf.reshape(num_values + 1, [1]))
    return tf.cumsum(bumps)[:-1]


def characters_before(text, byte_offsets):
    """How many characters of `text[row]` come before each byte offset; -1 stays -1.

    Characters are counted as UTF-8 lead bytes (`Substr` + `StringLength(unit="UTF8_CHAR")`).

    Args:
        text: string [batch].
        byte_offsets: int64 [batch, n], offsets into the UTF-8 bytes of their row's text, or -1.

    Returns:
        int64 [batch, n].
    """
    rows = tf.broadcast_to(tf.range(tf.shape(byte_offsets, out_type=tf.int64)[0])[:, None], tf.shape(byte_offsets))
    prefix = tf.strings.substr(tf.gather(text, rows), tf.zeros_like(byte_offsets), tf.maximum(byte_offsets, 0))
    count = tf.cast(tf.strings.length(prefix, unit="UTF8_CHAR"), tf.int64)
    return tf.where(byte_offsets < 0, tf.constant(-1, tf.int64), count)
