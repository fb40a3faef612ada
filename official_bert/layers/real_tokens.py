"""RealTokens: a batch's real (unpadded) tokens packed into rows, and back; the encoder's padding-free inference.

A served batch is padded to its longest text: on the SST-2 dev sentences in requests of 32, half the positions
are padding. Every dense layer of a transformer block works on each position alone, so it can run on the real
tokens only, packed into one row of (1, tokens, width): a batch of one sequence holding every real token, which
every layer takes as it takes a padded batch. Only the attention needs the (batch, seq) layout, and gets it by
scattering its queries, keys and values back (zeros at the padding, which the mask hides anyway).
"""

from keras import ops


class RealTokens:
    """Where a batch's real tokens are, from its (batch, seq) attention mask.

    Args:
        attention_mask: (batch, seq) int; 1 for real tokens, 0 for padding.

    Attributes:
        indices: (tokens,) int32, the flat position `b * seq + s` of every real token, batch-major.
    """

    def __init__(self, attention_mask):
        shape = ops.shape(attention_mask)
        self.batch, self.seq = shape[0], shape[1]
        flat_mask = ops.reshape(attention_mask, (-1,))  # (batch * seq,)
        self.indices = ops.cast(ops.nonzero(flat_mask)[0], "int32")  # (tokens,)

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
