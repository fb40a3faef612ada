"""RealTokens: a batch's real (unpadded) tokens packed into rows, and back; the encoder's padding-free inference.

A served batch is padded to its longest text: on the SST-2 dev sentences in requests of 32, half the positions
are padding. Every dense layer of a transformer block works on each position alone, so it can run on the real
tokens only, packed into one row of (1, tokens, width): a batch of one sequence holding every real token, which
every layer takes as it takes a padded batch. Only the attention needs the (batch, seq) layout, and gets it by
gathering its queries, keys and values back (`unpack_for_attention`: at the padding, copies of a real token, which
the mask hides).
"""

from keras import ops


class RealTokens:
    """Where a batch's real tokens are, from its (batch, seq) attention mask.

    Args:
        attention_mask: (batch, seq) int; 1 for real tokens, 0 for padding.

    Attributes:
        indices: (tokens,) int32, the flat position `b * seq + s` of every real token, batch-major.
        sources: (batch * seq,) int32, for every flat position the packed row it reads in `unpack_for_attention`:
            its own token's, or at the padding the last real token's before it.
    """

    def __init__(self, attention_mask):
        shape = ops.shape(attention_mask)
        self.batch, self.seq = shape[0], shape[1]
        flat_mask = ops.reshape(attention_mask, (-1,))  # (batch * seq,)
        self.indices = ops.cast(ops.nonzero(flat_mask)[0], "int32")  # (tokens,)
        real_before = ops.cumsum(ops.cast(flat_mask != 0, "int32"))  # (batch * seq,) real tokens up to here
        self.sources = ops.maximum(real_before - 1, 0)  # (batch * seq,)

    def pack(self, padded):
        """(batch, seq, ...) -> (1, tokens, ...): the real tokens, in one row."""
        trailing = tuple(padded.shape[2:])
        return ops.take(ops.reshape(padded, (-1,) + trailing), self.indices, axis=0)[None]

    def unpack(self, packed):
        """(1, tokens, ...) -> (batch, seq, ...): the tokens back in place, zeros at the padding."""
        trailing = tuple(packed.shape[2:])
        flat = ops.scatter(ops.expand_dims(self.indices, -1), packed[0],
                           (self.batch * self.seq,) + trailing)  # (batch * seq, ...)
        return ops.reshape(flat, (self.batch, self.seq) + trailing)

    def unpack_for_attention(self, packed):
        """(1, tokens, ...) -> (batch, seq, ...): the tokens back in place for the attention, with a copy of a real
        token at each padding position (its key and value are masked out; its query's output is dropped by `pack`).

        A gather: TensorFlow's CPU scatter behind `unpack` took 8 of 97 ms of a served batch of 32 SST-2 sentences
        (MiniLM), for the queries, keys and values. The batch needs at least one real token.
        """
        trailing = tuple(packed.shape[2:])
        return ops.reshape(ops.take(packed[0], self.sources, axis=0), (self.batch, self.seq) + trailing)
