"""BertEmbeddings: word + position + token-type embeddings, then LayerNorm and dropout (BERT, RoBERTa, DistilBERT)."""

import keras
import numpy as np
from keras import ops

from official_bert import keras_compat
from official_bert.layers import fused_training_ops
from official_bert.layers.dropout import Dropout
from official_bert.layers.initializers import truncated_normal


class BertEmbeddings(keras.layers.Layer):
    """Sums the three BERT embedding tables and normalises the result.

    Args:
        vocab_size: rows of the word-piece table.
        hidden_size: embedding width H.
        max_position_embeddings: rows of the position table; longer inputs are an error.
        type_vocab_size: rows of the token-type (segment) table; 0: no table, `input_type_ids` unused (DistilBERT).
        layer_norm_eps: LayerNorm epsilon.
        dropout_rate: dropout after the LayerNorm.
        initializer_range: stddev of the truncated-normal initializer.
        padding_id: the [PAD] word-piece id (0 in every BERT vocab). Its row gets no gradient through the lookup,
            as Hugging Face's `nn.Embedding(padding_idx=pad_token_id)`: otherwise a loss over padded positions
            (SQuAD's span logits) trains it and its gradient enlarges the global norm that clipping divides by.
        positions_after_padding: RoBERTa's position ids: `padding_id + 1 + i` on the i-th non-padding token and
            `padding_id` on padding (transformers' `create_position_ids_from_input_ids`); else `i` (BERT).
        fused_training_kernels: training calls on TensorFlow run the LayerNorm as XLA kernels
            (`official_bert.layers.fused_training_ops`).
    """

    def __init__(self, vocab_size, hidden_size, max_position_embeddings, type_vocab_size, layer_norm_eps,
                 dropout_rate, initializer_range, padding_id=0, positions_after_padding=False,
                 fused_training_kernels=True, **kwargs):
        super().__init__(**kwargs)
        self.fused_training_kernels = bool(fused_training_kernels)
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.layer_norm_eps = layer_norm_eps
        self.dropout_rate = dropout_rate
        self.initializer_range = initializer_range
        self.padding_id = padding_id
        self.positions_after_padding = positions_after_padding
        # LayerNorm kept in float32 under mixed precision.
        self.layer_norm = keras.layers.LayerNormalization(epsilon=layer_norm_eps, dtype="float32", name="layer_norm")
        self.dropout = Dropout(dropout_rate, name="dropout")

    def build(self, input_shape=None):
        # Not autocast: under mixed precision the looked-up rows are cast, not the whole (vocab, hidden) table,
        # and the lookup's gradient is summed into the float32 table in float32.
        self.word_embeddings = self.add_weight(
            name="word_embeddings", shape=(self.vocab_size, self.hidden_size),
            initializer=truncated_normal(self.initializer_range), autocast=False)
        self.position_embeddings = self.add_weight(
            name="position_embeddings", shape=(self.max_position_embeddings, self.hidden_size),
            initializer=truncated_normal(self.initializer_range))
        self.token_type_embeddings = None
        if self.type_vocab_size:
            self.token_type_embeddings = self.add_weight(
                name="token_type_embeddings", shape=(self.type_vocab_size, self.hidden_size),
                initializer=truncated_normal(self.initializer_range))
        self.layer_norm.build((None, None, self.hidden_size))
        self.built = True

    def call(self, input_word_ids, input_type_ids, training=None):
        """(batch, seq) int ids -> (batch, seq, hidden): `normalize(sum_tables(...))`."""
        return self.normalize(self.sum_tables(input_word_ids, input_type_ids), training)

    def sum_tables(self, input_word_ids, input_type_ids):
        """The word, position and token-type rows of each token, summed: (batch, seq) int -> (batch, seq, hidden)
        in the compute dtype."""
        seq_length = input_word_ids.shape[1]
        skipped = self.padding_id + 1 if self.positions_after_padding else 0  # RoBERTa's first position ids
        if seq_length is not None and seq_length + skipped > self.max_position_embeddings:
            less = f" less {skipped} padding positions" if skipped else ""
            raise ValueError(f"Sequence length {seq_length} exceeds max_position_embeddings="
                             f"{self.max_position_embeddings}{less}")
        seq_length = ops.shape(input_word_ids)[1]
        if self.word_embeddings is None:  # int8 table (quantize_word_table): each taken row times its scale
            words = ops.cast(ops.take(self.word_embeddings_int8, input_word_ids, axis=0), "float32")
            words = words * ops.expand_dims(ops.take(self.word_embeddings_scale, input_word_ids, axis=0), -1)
        else:
            words = ops.take(self.word_embeddings, input_word_ids, axis=0)  # (batch, seq, hidden) float32
        words = ops.cast(words, self.compute_dtype)
        is_padding = ops.expand_dims(ops.equal(input_word_ids, self.padding_id), -1)  # (batch, seq, 1)
        words = ops.where(is_padding, ops.stop_gradient(words), words)
        # A one-hot product, as Google's BERT: its gradient is a matmul. A lookup's gradient scatter-adds every
        # token onto two rows, which XLA runs as contended atomics (25 ms of a 145 ms BERT-Large SQuAD step on an
        # H100). An id outside [0, type_vocab_size) selects no row (a zero embedding, as a GPU lookup gives);
        # the input packers only write 0 and 1.
        if self.positions_after_padding:
            not_padding = ops.cast(ops.logical_not(is_padding[..., 0]), "int32")  # (batch, seq)
            position_ids = ops.cumsum(not_padding, axis=1) * not_padding + self.padding_id  # (batch, seq)
            positions = ops.take(self.position_embeddings, position_ids, axis=0)  # (batch, seq, hidden)
        else:
            positions = ops.expand_dims(self.position_embeddings[:seq_length], 0)  # (1, seq, hidden)
        if self.token_type_embeddings is None:
            return words + positions
        one_hot_types = ops.one_hot(input_type_ids, self.type_vocab_size, dtype=self.compute_dtype)  # (b, s, types)
        types = ops.matmul(one_hot_types, self.token_type_embeddings)  # (batch, seq, hidden)
        return words + types + positions

    def normalize(self, embeddings, training=None):
        """The LayerNorm, then dropout: (..., hidden) summed embeddings -> (..., hidden) in the compute dtype. The
        LayerNorm is one XLA kernel each way in a training call on TensorFlow (`fused_training_ops`)."""
        use_kernels = fused_training_ops.applies(self.fused_training_kernels, training)
        return self.dropout(fused_training_ops.layer_norm(self.layer_norm, embeddings, use_kernels), training=training)

    def quantize_word_table(self):
        """Stores the word-piece table in int8 with a float32 scale per row (its largest magnitude / 127, as
        Keras' int8 `Embedding`); a lookup multiplies the rows it takes by their scales. For int8 serving: the
        table no longer trains, and nothing else may read `word_embeddings` (a masked-LM head decodes with it)."""
        table = ops.convert_to_numpy(self.word_embeddings).astype(np.float32)  # (vocab, hidden)
        scale = np.maximum(np.abs(table).max(axis=1), np.finfo(np.float32).tiny) / 127.0  # (vocab,)
        with keras_compat.unlocked_state(self):  # the built layer swaps its variables (as Keras' own quantize)
            keras_compat.untrack_variable(self, self.word_embeddings)
            self.word_embeddings = None
            self.word_embeddings_int8 = self.add_weight(name="word_embeddings_int8", shape=table.shape,
                                                        dtype="int8", initializer="zeros", trainable=False)
            self.word_embeddings_scale = self.add_weight(name="word_embeddings_scale", shape=scale.shape,
                                                         initializer="ones", trainable=False, autocast=False)
        self.word_embeddings_int8.assign(np.clip(np.round(table / scale[:, None]), -127, 127).astype(np.int8))
        self.word_embeddings_scale.assign(scale)

    def compute_output_shape(self, input_word_ids_shape, input_type_ids_shape=None):
        return tuple(input_word_ids_shape) + (self.hidden_size,)

    def get_config(self):
        config = super().get_config()
        config.update(vocab_size=self.vocab_size, hidden_size=self.hidden_size,
                      max_position_embeddings=self.max_position_embeddings, type_vocab_size=self.type_vocab_size,
                      layer_norm_eps=self.layer_norm_eps, dropout_rate=self.dropout_rate,
                      initializer_range=self.initializer_range, padding_id=self.padding_id,
                      positions_after_padding=self.positions_after_padding,
                      fused_training_kernels=self.fused_training_kernels)
        return config
