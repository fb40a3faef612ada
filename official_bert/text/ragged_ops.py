"""Dense-op helpers for tokenized text: the row of each ragged value, row lengths, slices of rows, and character
offsets from byte offsets.

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


def slice_rows(ragged, rows, starts, lengths):
    """A ragged tensor whose row `i` is `ragged[rows[i]][starts[i]:starts[i] + lengths[i]]`, with dense ops.

    Args:
        ragged: a RaggedTensor [batch, (n)].
        rows: int64 [m], a row of `ragged` for each new row.
        starts: int64 [m], the first value taken of that row.
        lengths: int64 [m], values taken (they must lie inside the row).

    Returns:
        a RaggedTensor [m, (lengths)].
    """
    splits = tf.concat([tf.zeros([1], tf.int64), tf.cumsum(lengths)], axis=0)  # (m + 1,)
    total = splits[-1]
    row = row_ids(splits, total)  # (total,) the new row of each value
    position = tf.range(total) - tf.gather(splits, row)  # (total,) its index within the new row
    source = tf.gather(tf.cast(ragged.row_splits, tf.int64), tf.gather(rows, row)) + tf.gather(starts, row) + position
    return tf.RaggedTensor.from_row_splits(tf.gather(ragged.values, source), splits, validate=False)


def row_lengths(ragged):
    """int64 [batch]: the number of values of each row of a RaggedTensor."""
    splits = tf.cast(ragged.row_splits, tf.int64)
    return splits[1:] - splits[:-1]
