"""RealTokens: a batch's real (unpadded) tokens packed into rows, and back; the encoder's padding-free inference.

A served batch is padded to its longest text: on the SST-2 dev sentences in requests of 32, half the positions
are padding. Every dense layer of a transformer block works on each position alone, so it can run on the real
tokens only, packed into one row of (1, tokens, width): a batch of one sequence holding every real token, which
every layer takes as it takes a padded batch. Only the attention needs the (batch, seq) layout, and gets it by
gathering its queries, keys and values back (`unpack_for_attention`: at the padding, copies of a real token, which
the mask hides).

Training runs the same way (`for_training=True`): on TensorFlow, `pack` and `unpack_for_attention` then get
gradients that are gathers too, where autodiff would scatter-add (`UnsortedSegmentSum`: 57 of 805 ms of an
all-MiniLM-L6-v2 training step on MRPC-length batches, 2 CPU cores).
"""

import keras
from keras import ops

# For training on TensorFlow, packed rows are padded with zero rows to a multiple of this many: the XLA-compiled
# training kernels (`fused_training_ops`) compile once per shape, and the real tokens' count changes every batch.
TRAINING_ROW_MULTIPLE = 64


class RealTokens:
    """Where a batch's real tokens are, from its (batch, seq) attention mask.

    Args:
        attention_mask: (batch, seq) int; 1 for real tokens, 0 for padding.
        for_training: rows for a training step: on TensorFlow, `pack` adds zero rows up to a multiple of
            `TRAINING_ROW_MULTIPLE`, and `pack` and `unpack_for_attention` take gather gradients.

    Attributes:
        indices: (tokens,) int32, the flat position `b * seq + s` of every real token, batch-major.
        sources: (batch * seq,) int32, for every flat position the packed row it reads in `unpack_for_attention`:
            its own token's, or at the padding the last real token's before it.
    """

    def __init__(self, attention_mask, for_training=False):
        shape = ops.shape(attention_mask)
        self.batch, self.seq = shape[0], shape[1]
        self.attention_mask = attention_mask
        flat_mask = ops.reshape(attention_mask, (-1,))  # (batch * seq,)
        self.indices = ops.cast(ops.nonzero(flat_mask)[0], "int32")  # (tokens,)
        real_before = ops.cumsum(ops.cast(flat_mask != 0, "int32"))  # (batch * seq,) real tokens up to here
        self.sources = ops.maximum(real_before - 1, 0)  # (batch * seq,)
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
        """(1, tokens, ...) -> (batch, seq, ...): the tokens back in place for the attention, with a copy of a real
        token at each padding position (its key and value are masked out; its query's output is dropped by `pack`).

        A gather: TensorFlow's CPU scatter behind `unpack` took 8 of 97 ms of a served batch of 32 SST-2 sentences
        (MiniLM), for the queries, keys and values. The batch needs at least one real token.
        """
        trailing = tuple(packed.shape[2:])
        if self._gather_gradients:
            return self._unpack_for_attention_with_packed_gradient(packed)
        return ops.reshape(ops.take(packed[0], self.sources, axis=0), (self.batch, self.seq) + trailing)

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

    def _unpack_for_attention_with_packed_gradient(self, packed):
        """`unpack_for_attention` whose gradient is `pack` of the upstream gradient: it takes the real positions'
        gradients only. At the padding the attention's gradient is exactly zero (its keys and values have softmax
        weight 0; its queries' outputs are dropped by `pack`), so this equals the scatter-add autodiff gives."""
        import tensorflow as tf

        trailing = tuple(packed.shape[2:])

        @tf.custom_gradient
        def unpack(packed):
            def grad(upstream):  # (batch, seq, ...) -> (1, rows, ...), zeros at the rows after the real tokens
                return tf.gather(_with_zero_row(tf.reshape(upstream, (-1,) + trailing)), self._row_sources)[None]

            unpacked = tf.gather(packed[0], self.sources)  # (batch * seq, ...)
            return tf.reshape(unpacked, (self.batch, self.seq) + trailing), grad

        return unpack(packed)


def _with_zero_row(flat):
    """(n, ...) -> (n + 1, ...): a zero row appended (TensorFlow)."""
    import tensorflow as tf

    return tf.concat([flat, tf.zeros_like(flat[:1])], axis=0)
