"""BertSelfAttention: multi-head self-attention with the softmax in float32, or Keras' fused attention on request.

By default the scores, mask and softmax are computed by einsums in float32 (BERT's numerics, checked against
transformers). A layer built with `fused_attention=True` (`BertEncoder(..., fused_attention=True)`) calls
`keras.ops.dot_product_attention` instead in inference and dropout-free training: one fused op that the backend may
run as flash attention (JAX on GPU with bfloat16 inputs: cuDNN's kernel), at the backend's own softmax precision;
`keras.config.disable_flash_attention()` still forbids the flash kernel inside it. Attention dropout has no fused
form, so training with it keeps the einsum path.
"""

import math

import keras
from keras import ops

from official_bert.layers.dropout import Dropout
from official_bert.layers.initializers import truncated_normal
from official_bert.layers.matmul_dense import dense_2d
from official_bert.layers.real_tokens import token_layout

# The logit of what a softmax leaves out (attention to padding, a missing choice, a span labeler's padding): far
# below any real score, so exp() of it is exactly 0 in float32, yet finite, so a loss, its gradient and a JSON
# answer stay finite. Applied in float32: in half precision it would be -inf.
MASKED_LOGIT = -1e9


class BertSelfAttention(keras.layers.Layer):
    """Multi-head scaled dot-product self-attention, BERT's `attention.self` + `attention.output.dense`.

    The same projections as `keras.layers.MultiHeadAttention` (EinsumDense query/key/value with kernels
    `(hidden, heads, head_size)` and an output kernel `(heads, head_size, hidden)`), but the scores,
    mask and softmax are computed in float32 under mixed precision, as BERT's numerics require.

    A head-pruned layer (transformers' `prune_heads`) keeps `num_kept_heads` of the `num_heads` heads: its kernels are
    `(hidden, kept, head_size)` and `(kept, head_size, hidden)`, and `head_size` stays `hidden_size // num_heads`.

    Args:
        hidden_size: model width H.
        num_heads: attention heads A of the unpruned layer; H must be divisible by A.
        dropout_rate: dropout on the attention probabilities.
        initializer_range: stddev of the truncated-normal kernel initializer.
        num_kept_heads: heads this layer has, in 1..A; None: all A.
        fused_attention: use `keras.ops.dot_product_attention` where there is no attention dropout to apply (see
            the module notes).
    """

    def __init__(self, hidden_size, num_heads, dropout_rate, initializer_range, num_kept_heads=None,
                 fused_attention=False, **kwargs):
        super().__init__(**kwargs)
        self.fused_attention = bool(fused_attention)
        self.hidden_size = hidden_size
        self.num_heads = num_heads
        self.num_kept_heads = num_heads if num_kept_heads is None else int(num_kept_heads)
        if not 1 <= self.num_kept_heads <= num_heads:
            raise ValueError(f"num_kept_heads={num_kept_heads} must be in 1..{num_heads}")
        self.head_size = hidden_size // num_heads
        self.dropout_rate = dropout_rate
        self.initializer_range = initializer_range
        projection = dict(output_shape=(None, self.num_kept_heads, self.head_size), bias_axes="de")
        self.query = keras.layers.EinsumDense("abc,cde->abde", name="query", **projection,
                                              kernel_initializer=truncated_normal(initializer_range))
        self.key = keras.layers.EinsumDense("abc,cde->abde", name="key", **projection,
                                            kernel_initializer=truncated_normal(initializer_range))
        self.value = keras.layers.EinsumDense("abc,cde->abde", name="value", **projection,
                                              kernel_initializer=truncated_normal(initializer_range))
        self.output_dense = keras.layers.EinsumDense(
            "abcd,cde->abe", output_shape=(None, hidden_size), bias_axes="e",
            kernel_initializer=truncated_normal(initializer_range), name="output_dense")
        self.dropout = Dropout(dropout_rate, name="dropout")

    def build(self, input_shape):
        for layer in (self.query, self.key, self.value):
            layer.build(input_shape)
        self.output_dense.build((None, None, self.num_kept_heads, self.head_size))
        self.built = True

    def uses_fused_attention(self, training):
        """Whether a call runs `keras.ops.dot_product_attention`: `fused_attention` and no attention dropout to
        apply."""
        return self.fused_attention and (not training or self.dropout_rate == 0)

    def call(self, hidden_states, attention_mask, training=None):
        """Args:
            hidden_states: (batch, seq, hidden); or (1, tokens, hidden), a batch's real tokens packed in one row
                (`RealTokens.pack`).
            attention_mask: (batch, seq) int, 1 for real tokens and 0 for padding (never attended to); or the
                batch's `official_bert.layers.real_tokens.RealTokens` for packed rows.

        Returns: hidden_states' shape, (..., hidden).
        """
        layout = token_layout(attention_mask)
        # Per attention layout (`unpack_for_attention`: the padded batch, or length groups of the real tokens):
        # (sequences, length, kept heads, head_size).
        query, key, value = (layout.unpack_for_attention(dense_2d(layer, hidden_states))
                             for layer in (self.query, self.key, self.value))
        contexts = [self._attend(*attention_inputs, training=training)
                    for attention_inputs in zip(query, key, value, layout.attention_masks)]
        return dense_2d(self.output_dense, layout.pack_attention_output(contexts))  # (..., hidden)

    def _attend(self, query, key, value, attention_mask, training):
        """The heads' attention-weighted values, (batch, seq, kept heads, head_size), from the projected
        query / key / value (batch, seq, kept heads, head_size) and the (batch, seq) mask."""
        if self.uses_fused_attention(training):
            # cuDNN's flash kernel (JAX on GPU) takes a mask of the scores' own (seq, seq) shape only; with a
            # (batch, 1, 1, seq) mask Keras falls back to plain XLA attention (measured on an H200: 336 against
            # 421 BERT-Large training sequences/s).
            batch, seq = ops.shape(query)[:2]
            attend = ops.broadcast_to(_over_heads_and_queries(ops.cast(attention_mask, "bool")),
                                      (batch, 1, seq, seq))  # (batch, 1, seq, seq): True where attended
            return ops.dot_product_attention(query, key, value, mask=attend, scale=1.0 / math.sqrt(self.head_size),
                                             flash_attention=None if keras.config.is_flash_attention_enabled() is
                                             not False else False)
        # Additive mask in float32 (`MASKED_LOGIT`): (batch, 1, 1, seq).
        attention_bias = _over_heads_and_queries((1.0 - ops.cast(attention_mask, "float32")) * MASKED_LOGIT)
        scores = self._scaled_scores(query, key) + attention_bias  # (batch, kept heads, seq, seq) float32
        probs = ops.softmax(scores, axis=-1)  # float32
        probs = self.dropout(ops.cast(probs, value.dtype), training=training)
        return ops.einsum("bnqk,bknd->bqnd", probs, value)

    def _scaled_scores(self, query, key):
        """`q.k / sqrt(head_size)` in float32: (batch, kept heads, seq, seq)."""
        query = query * ops.cast(1.0 / math.sqrt(self.head_size), query.dtype)
        return ops.cast(ops.einsum("bqnd,bknd->bnqk", query, key), "float32")

    def attention_scores(self, hidden_states, attention_mask):
        """The layer's attention scores before the softmax (TinyBERT's attention-distillation target), with the
        padded keys' scores 0 instead of masked.

        Args:
            hidden_states: (batch, seq, hidden), the layer's input.
            attention_mask: (batch, seq) int; 1 for real tokens.

        Returns:
            float32 (batch, kept heads, seq, seq).
        """
        scores = self._scaled_scores(dense_2d(self.query, hidden_states), dense_2d(self.key, hidden_states))
        return scores * _over_heads_and_queries(ops.cast(attention_mask, "float32"))

    def compute_output_shape(self, hidden_states_shape, attention_mask_shape=None):
        return hidden_states_shape

    def get_config(self):
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, num_heads=self.num_heads, dropout_rate=self.dropout_rate,
                      initializer_range=self.initializer_range, num_kept_heads=self.num_kept_heads,
                      fused_attention=self.fused_attention)
        return config


def _over_heads_and_queries(mask):
    """(batch, keys) -> (batch, 1, 1, keys). ExpandDims, not `mask[:, None, None, :]`: TFLite has no kernel for that
    StridedSlice when the length is known only at run time (the LiteRT export runs each request at its own length)."""
    return ops.expand_dims(ops.expand_dims(mask, 1), 1)
