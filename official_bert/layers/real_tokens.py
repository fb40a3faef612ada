"""RealTokens: a batch's real (unpadded) tokens packed into rows, and back; the encoder's padding-free inference.

A layer's `call` takes either a (batch, seq) mask or a `RealTokens` (`token_layout`), and does the same math on
both: a mask is the `PaddedTokens` layout, whose packing and unpacking change nothing.

A served batch is padded to its longest text: on the SST-2 dev sentences in requests of 32, half the positions
are padding. Every dense layer of a transformer block works on each position alone, so it can run on the real
tokens only, packed into one row of (1, tokens, width): a batch of one sequence holding every real token, which
every layer takes as it takes a padded batch. Only the attention needs the (batch, seq) layout, and gets it by
gathering its queries, keys and values back (`unpack_for_attention`: at the padding, copies of a real token, which
the mask hides).

Training runs the same way (`for_training=True`): on TensorFlow, `pack` and `unpack_for_attention` then get
gradients that are gathers too, where autodiff would scatter-add (`UnsortedSegmentSum`: 57 of 805 ms of an
all-MiniLM-L6-v2 training step on MRPC-length batches, 2 CPU cores). And the attention runs in length groups: the
batch's sequences sorted by length into `ATTENTION_GROUPS` groups, each group's layout cut to its own longest
sequence. Attention is per sequence, so this changes no result; it changes the attention's cost, which grows with
the square of the layout's length: on SQuAD's training windows (seq 384, 40% real tokens) 4 groups of 8 have 0.37
of the full layout's (batch, seq, seq) scores, and `benchmarks.squad_finetune` trained at 11.3 windows/s with the
groups against 6.3 without (all-MiniLM-L6-v2, 2 CPU cores).
"""

import keras
from keras import ops

# For training on TensorFlow, packed rows are padded with zero rows to a multiple of this many: the XLA-compiled
# training kernels (`fused_training_ops`) compile once per shape, and the real tokens' count changes every batch.
TRAINING_ROW_MULTIPLE = 64

# For training on TensorFlow, the attention runs on this many groups of the batch's sequences, sorted by length.
ATTENTION_GROUPS = 4


def token_layout(mask_or_layout):
    """The layout a layer's `call` runs on: a `RealTokens` (or `PaddedTokens`) as it is; a (batch, seq) attention
    mask as `PaddedTokens(mask)`."""
    return mask_or_layout if isinstance(mask_or_layout, (RealTokens, PaddedTokens)) else PaddedTokens(mask_or_layout)


class PaddedTokens:
    """The padded batch itself as a layout with `RealTokens`' methods, each the identity: every position is a row.

    Args:
        attention_mask: (batch, seq) int; 1 for real tokens, 0 for padding.
    """

    def __init__(self, attention_mask):
        self.attention_mask = attention_mask
        self.attention_masks = [attention_mask]

    def pack(self, padded):
        return padded

    def unpack(self, packed):
        return packed

    def first_tokens(self, hidden_states):
        """(batch, seq, width) -> (batch, width)."""
        return hidden_states[:, 0]

    def unpack_for_attention(self, hidden_states):
        return [hidden_states]

    def pack_attention_output(self, outputs):
        (output,) = outputs
        return output


class RealTokens:
    """Where a batch's real tokens are, from its (batch, seq) attention mask.

    Args:
        attention_mask: (batch, seq) int; 1 for real tokens, 0 for padding.
        for_training: rows for a training step: on TensorFlow, `pack` adds zero rows up to a multiple of
            `TRAINING_ROW_MULTIPLE`, `pack`, `unpack_for_attention` and `pack_attention_output` take gather
            gradients, and the attention runs in `ATTENTION_GROUPS` length groups.

    Attributes:
        indices: (tokens,) int32, the flat position `b * seq + s` of every real token, batch-major.
        sources: (batch * seq,) int32, for every flat position the packed row it reads in `unpack_for_attention`
            (one layout): its own token's, or at the padding the last real token's before it.
        attention_masks: the mask of each attention layout, (sequences, length) int: one layout, the input's
            (batch, seq) mask; or in length groups, each group's sequences cut to its longest.
    """

    def __init__(self, attention_mask, for_training=False):
        shape = ops.shape(attention_mask)
        self.batch, self.seq = shape[0], shape[1]
        self.attention_mask = attention_mask
        flat_mask = ops.reshape(attention_mask, (-1,))  # (batch * seq,)
        self.indices = ops.cast(ops.nonzero(flat_mask)[0], "int32")  # (tokens,)
        real_before = ops.cumsum(ops.cast(flat_mask != 0, "int32"))  # (batch * seq,) real tokens up to here
        self.sources = ops.maximum(real_before - 1, 0)  # (batch * seq,)
        self.attention_masks = [attention_mask]
        self._gather_gradients = for_training and keras.backend.backend() == "tensorflow"
        if self._gather_gradients:
            tokens = ops.shape(self.indices)[0]
            rows = (tokens + TRAINING_ROW_MULTIPLE - 1) // TRAINING_ROW_MULTIPLE * TRAINING_ROW_MULTIPLE
            # What each packed row reads: a real token's flat position, then `batch * seq` (a zero row appended to
            # the flat tokens) up to `rows`.
            self._row_sources = ops.concatenate(
                [self.indices, ops.full((rows - tokens,), self.batch * self.seq, "int32")])  # (rows,)
            # For every flat position its packed row, or `rows` (a zero row appended) at the padding.
            self._rows = ops.where(flat_mask != 0, real_before - 1, rows)  # (batch * seq,)
            self._group_by_length(rows)

    def pack(self, padded):
        """(batch, seq, ...) -> (1, tokens, ...): the real tokens, in one row; for training on TensorFlow, then zero
        rows up to a multiple of `TRAINING_ROW_MULTIPLE` (so XLA's training kernels meet few shapes)."""
        trailing = tuple(padded.shape[2:])
        if self._gather_gradients:
            return self._pack_with_gathered_gradient(padded)
        return ops.take(ops.reshape(padded, (-1,) + trailing), self.indices, axis=0)[None]

    def first_tokens(self, packed):
        """(1, tokens, width) -> (batch, width): each sequence's first token (`[CLS]`); zeros for a sequence whose
        first position is padding."""
        starts = ops.take(self.sources, ops.arange(self.batch) * self.seq)  # (batch,) packed row of position 0
        is_real = ops.cast(self.attention_mask[:, :1] != 0, packed.dtype)  # (batch, 1)
        return ops.take(packed[0], starts, axis=0) * is_real

    def unpack(self, packed):
        """(1, tokens, ...) -> (batch, seq, ...): the tokens back in place, zeros at the padding."""
        trailing = tuple(packed.shape[2:])
        flat = ops.scatter(ops.expand_dims(self.indices, -1), packed[0, :ops.shape(self.indices)[0]],
                           (self.batch * self.seq,) + trailing)  # (batch * seq, ...)
        return ops.reshape(flat, (self.batch, self.seq) + trailing)

    def unpack_for_attention(self, packed):
        """(1, tokens, ...) -> one (sequences, length, ...) tensor per attention layout (`attention_masks`): the
        tokens back in place for the attention.

        One layout (inference): the input's (batch, seq), with a copy of a real token at each padding position (its
        key and value are masked out; its query's output is dropped by `pack_attention_output`). A gather:
        TensorFlow's CPU scatter behind `unpack` took 8 of 97 ms of a served batch of 32 SST-2 sentences (MiniLM),
        for the queries, keys and values. The batch needs at least one real token.

        Length groups (training on TensorFlow): each group's sequences at its own longest length, zeros at the
        padding; the gradient is a gather of the real positions' gradients (at the padding the attention's gradient
        is exactly zero: its keys and values have softmax weight 0, its queries' outputs are dropped), which equals
        the scatter-add autodiff gives.
        """
        if self._gather_gradients:
            return self._unpack_into_groups(packed)
        trailing = tuple(packed.shape[2:])
        return [ops.reshape(ops.take(packed[0], self.sources, axis=0), (self.batch, self.seq) + trailing)]

    def pack_attention_output(self, outputs):
        """The attention's outputs, one (sequences, length, ...) per layout of `unpack_for_attention`, -> (1, tokens,
        ...) packed as `pack` packs (zero rows up to the training multiple)."""
        if self._gather_gradients:
            return self._pack_groups(outputs)
        (output,) = outputs
        return self.pack(output)

    def _group_by_length(self, rows):
        """Sorts the batch's sequences by length into `ATTENTION_GROUPS` groups of `ceil(batch / groups)` (the last
        ones filled up with empty sequences) and sets, for training on TensorFlow:

        - `_group_rows`: per group, (sequences, length) int32, the packed row each position reads, or `rows` (a zero
          row appended) at the padding; length is the group's longest sequence (at least 2, at most seq);
        - `attention_masks`: per group, (sequences, length) int32, 1 at its real tokens;
        - `_row_positions`: (rows,) int32, each packed row's position in the groups' flattened layouts, one after
          the other; past the last one (a zero row appended) for the rows after the real tokens.

        Args:
            rows: the packed rows' count (real tokens, then zero rows up to `TRAINING_ROW_MULTIPLE`).
        """
        import tensorflow as tf

        batch, seq = self.batch, self.seq
        real = tf.convert_to_tensor(self.attention_mask) != 0  # (batch, seq) bool
        lengths = tf.reduce_max(tf.where(real, tf.range(1, seq + 1)[None], 0), axis=1)  # (batch,) last real + 1
        per_group = (batch + ATTENTION_GROUPS - 1) // ATTENTION_GROUPS
        empty = per_group * ATTENTION_GROUPS - batch  # sequences to fill the last group(s) with: index `batch`
        order = tf.concat([tf.argsort(lengths, direction="DESCENDING", stable=True),
                           tf.fill([empty], batch)], 0)  # (groups * per_group,)
        lengths = tf.concat([lengths, [0]], 0)  # (batch + 1,)
        # Each flat position's packed row, `rows` at the padding and in the empty sequence (index `batch`).
        flat_rows = tf.concat([self._rows, tf.fill([seq], rows)], 0)  # ((batch + 1) * seq,)
        self._group_rows = []
        for group in range(ATTENTION_GROUPS):
            members = order[group * per_group:(group + 1) * per_group]  # (per_group,)
            # At least 2 positions where the input has them: Keras warns of a softmax over one (an empty group, or
            # one-token sequences).
            length = tf.minimum(tf.maximum(tf.reduce_max(tf.gather(lengths, members)), 2), seq)
            positions = members[:, None] * seq + tf.range(length)[None]  # (per_group, length) flat positions
            self._group_rows.append(tf.gather(flat_rows, positions))
        self.attention_masks = [tf.cast(group_rows != rows, "int32") for group_rows in self._group_rows]
        laid_out = tf.concat([tf.reshape(group_rows, (-1,)) for group_rows in self._group_rows], 0)  # (laid out,)
        # Every padding position writes to index `rows`, which is dropped; each real row is written once.
        positions = tf.tensor_scatter_nd_update(tf.fill([rows + 1], tf.size(laid_out)), laid_out[:, None],
                                                tf.range(tf.size(laid_out)))
        self._row_positions = positions[:rows]

    def _unpack_into_groups(self, packed):
        """`unpack_for_attention` in length groups; its gradient is `_rows_from_groups` (TensorFlow)."""
        import tensorflow as tf

        @tf.custom_gradient
        def unpack(packed):
            return self._groups_from_rows(packed), lambda *upstreams: self._rows_from_groups(upstreams)

        return unpack(packed)

    def _pack_groups(self, outputs):
        """`pack_attention_output` of length groups; its gradient is `_groups_from_rows` (TensorFlow)."""
        import tensorflow as tf

        @tf.custom_gradient
        def pack(*outputs):
            return self._rows_from_groups(outputs), lambda upstream: self._groups_from_rows(upstream)

        return pack(*outputs)

    def _groups_from_rows(self, packed):
        """(1, rows, ...) -> per group (sequences, length, ...): each position's packed row, zeros at the padding."""
        import tensorflow as tf

        with_zero_row = _with_zero_row(packed[0])
        return [tf.gather(with_zero_row, group_rows) for group_rows in self._group_rows]

    def _rows_from_groups(self, layouts):
        """Per group (sequences, length, ...) -> (1, rows, ...): each packed row's position, zero rows after the real
        tokens. `_groups_from_rows` is this one's gradient; this one is `_groups_from_rows`'s for an upstream gradient
        that is zero at the padding, as the attention's is (each real token sits at one position)."""
        import tensorflow as tf

        trailing = tuple(layouts[0].shape[2:])
        laid_out = tf.concat([tf.reshape(layout, (-1,) + trailing) for layout in layouts], 0)  # (laid out, ...)
        return tf.gather(_with_zero_row(laid_out), self._row_positions)[None]

    def _pack_with_gathered_gradient(self, padded):
        """`pack` whose gradient puts the rows back with a gather from them and a zero row (TensorFlow)."""
        import tensorflow as tf

        trailing = tuple(padded.shape[2:])

        @tf.custom_gradient
        def pack(padded):
            def grad(upstream):  # (1, rows, ...) -> (batch, seq, ...), zeros at the padding
                return tf.reshape(tf.gather(_with_zero_row(upstream[0]), self._rows), tf.shape(padded))

            return tf.gather(_with_zero_row(tf.reshape(padded, (-1,) + trailing)), self._row_sources)[None], grad

        return pack(padded)


def _with_zero_row(flat):
    """(n, ...) -> (n + 1, ...): a zero row appended (TensorFlow)."""
    import tensorflow as tf

    return tf.concat([flat, tf.zeros(tf.concat([[1], tf.shape(flat)[1:]], axis=0), flat.dtype)], axis=0)  # n may be 0
