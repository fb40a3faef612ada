"""TransformerBlock: one BERT encoder layer, post-LayerNorm (BERT) or pre-LayerNorm (`norm_first`)."""

import keras

from official_bert.layers import fused_training_ops
from official_bert.layers.activations import get_activation, get_fusable_activation
from official_bert.layers.attention import BertSelfAttention
from official_bert.layers.dropout import Dropout
from official_bert.layers.initializers import truncated_normal
from official_bert.layers.matmul_dense import dense_2d


class TransformerBlock(keras.layers.Layer):
    """Self-attention and feed-forward sublayers, each `LayerNorm(x + dropout(sublayer(x)))` (post-LN), or with
    `norm_first` each `x + dropout(sublayer(LayerNorm(x)))` (pre-LN, as GPT-2 and ViT; the same weights).

    Under mixed precision the block itself is float32 (its sublayers follow the global policy), so its
    input is not cast down: the residual stream and both LayerNorms stay in float32, as in BERT's
    reference mixed-precision recipes; the matmuls run in the policy's compute dtype.

    Args:
        hidden_size: model width H.
        num_heads: attention heads.
        intermediate_size: feed-forward inner width.
        hidden_act: feed-forward activation name (see `official_bert.layers.get_activation`).
        hidden_dropout_prob: dropout on both residual branches.
        attention_probs_dropout_prob: dropout on attention probabilities.
        layer_norm_eps: LayerNorm epsilon.
        initializer_range: stddev of the truncated-normal kernel initializer.
        num_kept_heads: attention heads the block keeps after head pruning; None: all `num_heads`.
        fused_attention: the attention's `keras.ops.dot_product_attention` path (see `BertSelfAttention`).
        fused_training_kernels: training calls on TensorFlow run the GELU and LayerNorms as XLA kernels
            (`official_bert.layers.fused_training_ops`).
        norm_first: pre-LN: each LayerNorm normalises its sublayer's input instead of the residual sum.
    """

    def __init__(self, hidden_size, num_heads, intermediate_size, hidden_act, hidden_dropout_prob,
                 attention_probs_dropout_prob, layer_norm_eps, initializer_range, num_kept_heads=None,
                 fused_attention=False, fused_training_kernels=True, norm_first=False, **kwargs):
        kwargs.setdefault("dtype", "float32")
        super().__init__(**kwargs)
        self.norm_first = bool(norm_first)
        self.fused_attention = bool(fused_attention)
        self.fused_training_kernels = bool(fused_training_kernels)
        self.hidden_size = hidden_size
        self.num_heads = num_heads
        self.intermediate_size = intermediate_size
        self.hidden_act = hidden_act
        self.hidden_dropout_prob = hidden_dropout_prob
        self.attention_probs_dropout_prob = attention_probs_dropout_prob
        self.layer_norm_eps = layer_norm_eps
        self.initializer_range = initializer_range
        self.num_kept_heads = num_heads if num_kept_heads is None else int(num_kept_heads)
        self.attention = BertSelfAttention(hidden_size, num_heads, attention_probs_dropout_prob, initializer_range,
                                           num_kept_heads=self.num_kept_heads, fused_attention=fused_attention,
                                           name="attention")
        self.attention_dropout = Dropout(hidden_dropout_prob, name="attention_dropout")
        self.attention_layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_eps, dtype="float32", name="attention_layer_norm")
        self.intermediate = keras.layers.Dense(
            intermediate_size, activation=get_activation(hidden_act),
            kernel_initializer=truncated_normal(initializer_range), name="intermediate")
        self.output_dense = keras.layers.Dense(hidden_size, kernel_initializer=truncated_normal(initializer_range),
                                               name="output_dense")
        self.output_dropout = Dropout(hidden_dropout_prob, name="output_dropout")
        self.output_layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_eps, dtype="float32", name="output_layer_norm")

    def build(self, input_shape):
        hidden_shape = (None, None, self.hidden_size)
        self.attention.build(hidden_shape)
        self.attention_layer_norm.build(hidden_shape)
        self.intermediate.build(hidden_shape)
        self.output_dense.build((None, None, self.intermediate_size))
        self.output_layer_norm.build(hidden_shape)
        self.built = True

    def call(self, hidden_states, attention_mask, training=None):
        """Args:
            hidden_states: (batch, seq, hidden) float32; or (1, tokens, hidden), a batch's real tokens packed in one
                row (`RealTokens.pack`).
            attention_mask: (batch, seq) int, 1 for real tokens and 0 for padding; or the batch's
                `official_bert.layers.real_tokens.RealTokens` for packed rows.
        Returns: hidden_states' shape, float32.
        """
        # The sublayers' LayerNorms and GELU as one XLA kernel each way in a training call on TensorFlow.
        use_kernels = fused_training_ops.applies(self.fused_training_kernels, training)

        def attention_branch(inputs):  # dropout(attention(inputs)), float32
            # A keyword: Keras takes only tensors positionally, and a `RealTokens` is not one.
            attention_output = self.attention(inputs, attention_mask=attention_mask, training=training)
            return keras.ops.cast(self.attention_dropout(attention_output, training=training), "float32")

        def feed_forward_branch(inputs):  # dropout(feed_forward(inputs)), float32
            layer_output = self.output_dropout(self._feed_forward(inputs, training, use_kernels), training=training)
            return keras.ops.cast(layer_output, "float32")

        def attention_norm(inputs):
            return fused_training_ops.layer_norm(self.attention_layer_norm, inputs, use_kernels)

        def output_norm(inputs):
            return fused_training_ops.layer_norm(self.output_layer_norm, inputs, use_kernels)

        if self.norm_first:
            hidden_states = hidden_states + attention_branch(attention_norm(hidden_states))
            return hidden_states + feed_forward_branch(output_norm(hidden_states))
        hidden_states = attention_norm(hidden_states + attention_branch(hidden_states))
        return output_norm(hidden_states + feed_forward_branch(hidden_states))

    def _feed_forward(self, hidden_states, training, use_kernels):
        """intermediate dense + activation, output dense: (..., hidden) -> (..., hidden) in the compute dtype."""
        on_tensorflow = keras.backend.backend() == "tensorflow"
        if not training and on_tensorflow:  # the GELU as the plain op, fused with the matmul and bias (`dense_2d`)
            activation = get_fusable_activation(self.hidden_act)
        elif use_kernels:  # one XLA kernel each way (None: the layer's own)
            activation = fused_training_ops.gelu(self.hidden_act)
        else:
            activation = None
        intermediate = dense_2d(self.intermediate, hidden_states, activation)  # (..., intermediate)
        return dense_2d(self.output_dense, intermediate)

    def compute_output_shape(self, hidden_states_shape, attention_mask_shape=None):
        return hidden_states_shape

    def get_config(self):
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, num_heads=self.num_heads,
                      intermediate_size=self.intermediate_size, hidden_act=self.hidden_act,
                      hidden_dropout_prob=self.hidden_dropout_prob,
                      attention_probs_dropout_prob=self.attention_probs_dropout_prob,
                      layer_norm_eps=self.layer_norm_eps, initializer_range=self.initializer_range,
                      num_kept_heads=self.num_kept_heads, fused_attention=self.fused_attention,
                      fused_training_kernels=self.fused_training_kernels, norm_first=self.norm_first)
        return config
