"""MaskedLMHead: BERT's masked-LM prediction head, with the decoder tied to the word embeddings."""

import keras
from keras import ops

from official_bert.layers.activations import get_activation
from official_bert.layers.initializers import truncated_normal


class MaskedLMHead(keras.layers.Layer):
    """Predicts the word pieces at the masked positions of a sequence.

    Gathers the hidden states at `masked_positions`, then `LayerNorm(activation(dense(x)))` (Google's
    `cls/predictions/transform`, HF's `cls.predictions.transform`), then logits against the transposed word
    embedding table (the decoder is tied: no new matrix) plus a per-token output bias. The transform maps the
    encoder's width to the embedding table's (the same in BERT; ALBERT's H -> E).

    Under mixed precision the dense layer and the decoder matmul run in the compute dtype; the LayerNorm, the
    bias and the returned logits are float32.

    Args:
        embedding_layer: the encoder's `BertEmbeddings`, whose `word_embeddings` (vocab, hidden) is the decoder.
        hidden_act: activation of the transform (a `BertConfig.hidden_act` name).
        layer_norm_eps: LayerNorm epsilon of the transform.
        initializer_range: stddev of the truncated-normal kernel initializer.
        input_size: width of the encoder output (ALBERT's hidden size H); None: the embedding width.

    Examples:
    ```python
    head = MaskedLMHead(encoder.embeddings, "gelu", 1e-12, 0.02)
    logits = head(outputs["sequence_output"], masked_lm_positions)  # (batch, max_predictions, vocab)
    ```
    """

    def __init__(self, embedding_layer, hidden_act="gelu", layer_norm_eps=1e-12, initializer_range=0.02,
                 input_size=None, **kwargs):
        super().__init__(**kwargs)
        self.embedding_layer = embedding_layer
        self.hidden_act = hidden_act
        self.layer_norm_eps = layer_norm_eps
        self.initializer_range = initializer_range
        self.vocab_size = embedding_layer.vocab_size
        self.hidden_size = embedding_layer.hidden_size  # the embedding width: the transform's output
        self.input_size = input_size or self.hidden_size
        self.dense = keras.layers.Dense(
            self.hidden_size, activation=get_activation(hidden_act),
            kernel_initializer=truncated_normal(initializer_range), name="dense")
        self.layer_norm = keras.layers.LayerNormalization(epsilon=layer_norm_eps, dtype="float32", name="layer_norm")

    def build(self, sequence_output_shape=None, masked_positions_shape=None):
        self.dense.build((None, None, self.input_size))
        self.layer_norm.build((None, None, self.hidden_size))
        self.output_bias = self.add_weight(name="output_bias", shape=(self.vocab_size,), initializer="zeros",
                                           dtype="float32", autocast=False)  # added to the float32 logits
        self.built = True

    def call(self, sequence_output, masked_positions):
        """Args:
            sequence_output: (batch, seq, input_size) encoder output.
            masked_positions: (batch, max_predictions) int indices into seq (padding positions are 0).
        Returns: float32 logits (batch, max_predictions, vocab).
        """
        positions = ops.cast(masked_positions, "int32")[:, :, None]  # (batch, max_predictions, 1)
        hidden = ops.take_along_axis(sequence_output, positions, axis=1)  # (batch, max_predictions, input_size)
        hidden = self.layer_norm(self.dense(hidden))  # float32 (batch, max_predictions, embedding)
        table = self.embedding_layer.word_embeddings  # (vocab, embedding), shared with the encoder
        logits = ops.matmul(ops.cast(hidden, self.compute_dtype),
                            ops.transpose(ops.cast(table, self.compute_dtype)))  # (batch, max_predictions, vocab)
        return ops.cast(logits, "float32") + self.output_bias

    def compute_output_shape(self, sequence_output_shape, masked_positions_shape):
        return tuple(masked_positions_shape) + (self.vocab_size,)

    def compute_output_spec(self, sequence_output, masked_positions):
        return keras.KerasTensor(tuple(masked_positions.shape) + (self.vocab_size,), dtype="float32")

    def get_config(self):
        # The embedding layer is shared with the encoder and rebuilt by the model that owns both
        # (`BertPretrainer.from_config`); it is not serialised here.
        config = super().get_config()
        config.update(hidden_act=self.hidden_act, layer_norm_eps=self.layer_norm_eps,
                      initializer_range=self.initializer_range, input_size=self.input_size)
        return config
