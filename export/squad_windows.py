"""Doc-stride windows of SQuAD contexts, in-graph: the windows `official_bert.data.squad.build_features` packs, and
the window that gives each piece its maximum context, with dense core ops only (no `RaggedRange`).

A context of `c` pieces after a question of `q` pieces has room for `room = seq_length - q - 3` pieces a window
(RoBERTa: `- 4`). Window `w` holds the pieces `[w * step, w * step + min(c - w * step, room))`, where
`step = min(room, doc_stride)`, and windows follow one another until one reaches the context's end (`doc_spans`);
an empty context has one empty window. `max_windows` caps the windows of one context: the pieces after the last
kept window are not read, and `cut` says so.

Examples:

>>> windows = doc_stride_windows(context_ids, room, doc_stride=128, max_windows=64)
>>> windows.context  # RaggedTensor [windows, (pieces)]: each window's context pieces
"""

import dataclasses

import tensorflow as tf

from official_bert.text.ragged_ops import row_ids, row_lengths, slice_rows


def first_argmax(values, axis):
    """The index of the first maximum along `axis` (of the last axis or the one before it), with Max and Equal:
    LiteRT's ArgMax does not keep the first of equal values (of -inf ones, for instance).

    Args:
        values: a float or int Tensor of rank 2 or 3.
        axis: the axis reduced: 1 or 2 (the last).

    Returns:
        int32, `values` without `axis`.
    """
    size = tf.shape(values)[axis]
    index = tf.range(size)  # (size,) along `axis`
    if axis == 1 and values.shape.rank == 3:
        index = index[:, None]
    top = tf.reduce_max(values, axis=axis, keepdims=True)
    return -tf.reduce_max(-tf.where(tf.equal(values, top), index, size), axis=axis)  # the smallest such index


@dataclasses.dataclass
class Windows:
    """The doc-stride windows of a batch of contexts, one row each (window rows of an example are consecutive).

    Attributes:
        context: RaggedTensor [windows, (pieces)], each window's context pieces.
        example: int64 [windows], the context (batch row) of each window.
        window: int64 [windows], its index among its context's windows.
        start: int64 [windows], its first piece's index in the context's pieces.
        length: int64 [windows], its pieces.
        row_splits: int64 [batch + 1], the first window row of each context.
        step: int64 [batch], pieces between the starts of a context's windows.
        room: int64 [batch], pieces a window holds.
        context_length: int64 [batch], the context's pieces.
        cut: bool [batch], windows beyond `max_windows` were dropped.
    """

    context: tf.RaggedTensor
    example: tf.Tensor
    window: tf.Tensor
    start: tf.Tensor
    length: tf.Tensor
    row_splits: tf.Tensor
    step: tf.Tensor
    room: tf.Tensor
    context_length: tf.Tensor
    cut: tf.Tensor

    @property
    def count(self):
        """int64 [batch]: each context's windows."""
        return self.row_splits[1:] - self.row_splits[:-1]


def doc_stride_windows(context_ids, room, doc_stride, max_windows):
    """Cuts each context into the windows `build_features` packs (see the module notes).

    Args:
        context_ids: RaggedTensor [batch, (pieces)], the contexts' pieces.
        room: int64 [batch], context pieces a window of that row holds (at least 1).
        doc_stride: Python int, the step between window starts (at most `room`).
        max_windows: Python int, the most windows of one context.

    Returns:
        a `Windows`.
    """
    context_length = row_lengths(context_ids)  # (batch,)
    step = tf.minimum(room, tf.constant(doc_stride, tf.int64))  # (batch,)
    # Window j + 1 exists when window j (starting at j * step) does not reach the end: j * step + room < length.
    later = tf.cast(tf.range(max_windows, dtype=tf.int64)[None, :] * step[:, None] + room[:, None]
                    < context_length[:, None], tf.int64)  # (batch, max_windows) 1 or 0 (TFLite slices no bools)
    count = 1 + tf.reduce_sum(later[:, :-1], axis=1)  # (batch,) kept windows
    row_splits = tf.concat([tf.zeros([1], tf.int64), tf.cumsum(count)], axis=0)  # (batch + 1,)
    example = row_ids(row_splits, row_splits[-1])  # (windows,)
    window = tf.range(row_splits[-1]) - tf.gather(row_splits, example)  # (windows,)
    start = window * tf.gather(step, example)  # (windows,)
    length = tf.minimum(tf.gather(context_length, example) - start, tf.gather(room, example))  # (windows,)
    return Windows(context=slice_rows(context_ids, example, start, length), example=example, window=window,
                   start=start, length=length, row_splits=row_splits, step=step, room=room,
                   context_length=context_length, cut=tf.equal(later[:, -1], 1))


def max_context_mask(windows, first, seq_length):
    """Where a window gives a context piece its maximum context, as `official_bert.data.squad.max_context_windows`:
    among the windows holding the piece, the one with the largest `100 * min(left, right) + length` (the first on
    ties).

    Args:
        windows: `Windows`.
        first: int64 [windows], the packed position of each window's first context piece.
        seq_length: Python int, the packed length.

    Returns:
        bool [windows, seq_length]: True at the packed positions of the pieces whose maximum-context window it is
        (other positions: not meaningful, mask them with the context).
    """
    def small(values):  # int32: what TFLite's kernels take (positions and lengths are below 2**31)
        return tf.cast(values, tf.int32)

    most = tf.maximum(small(tf.reduce_max(windows.count)), 1)  # the most windows of one context in the batch
    k = tf.range(most)[None, :]  # (1, most)
    example = windows.example
    starts = k * small(tf.gather(windows.step, example))[:, None]  # (windows, most) each sibling window's start
    lengths = tf.minimum(small(tf.gather(windows.context_length, example))[:, None] - starts,
                         small(tf.gather(windows.room, example))[:, None])  # (windows, most)
    exists = k < small(tf.gather(windows.count, example))[:, None]  # (windows, most)
    piece = small(windows.start - first)[:, None] + tf.range(seq_length)[None, :]  # (windows, seq)
    # (w, seq, 1) against (w, 1, most); ExpandDims, not a middle new axis: TFLite's StridedSlice has none
    piece, starts, lengths, exists = (piece[:, :, None], tf.expand_dims(starts, 1), tf.expand_dims(lengths, 1),
                                      tf.expand_dims(exists, 1))
    holds = tf.logical_and(exists, tf.logical_and(piece >= starts, piece < starts + lengths))
    score = 100 * tf.minimum(piece - starts, starts + lengths - 1 - piece) + lengths  # (windows, seq, most)
    best = first_argmax(tf.where(holds, score, -1), axis=2)  # (windows, seq)
    return tf.equal(best, small(windows.window)[:, None])


def _grouped(row_splits):
    """(groups, most) row indices of each group of consecutive rows, its last row repeated where it has fewer rows
    than the most: a repeat changes neither a group's maximum, its minimum, nor which row comes first. (No -inf
    filler: LiteRT's converter turns a -inf constant into the lowest float, above a computed -inf.)

    Args:
        row_splits: int64 [groups + 1], each group's first row; every group has at least one row.
    """
    count = row_splits[1:] - row_splits[:-1]  # (groups,)
    k = tf.range(tf.maximum(tf.reduce_max(count), 1))[None, :]  # (1, most)
    return row_splits[:-1, None] + tf.minimum(k, count[:, None] - 1)  # (groups, most)


def best_rows(scores, row_splits):
    """The row of the highest score among each group of consecutive rows (the first on ties).

    Args:
        scores: float32 [rows].
        row_splits: int64 [groups + 1], each group's first row; every group has at least one row.

    Returns:
        int64 [groups], a row index.
    """
    return row_splits[:-1] + tf.cast(first_argmax(tf.gather(scores, _grouped(row_splits)), axis=1), tf.int64)


def smallest(values, row_splits):
    """The smallest value of each group of consecutive rows.

    Args:
        values: float32 [rows].
        row_splits: int64 [groups + 1]; every group has at least one row.

    Returns:
        float32 [groups].
    """
    return -tf.reduce_max(-tf.gather(values, _grouped(row_splits)), axis=1)
