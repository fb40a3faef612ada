"""The input side of an encoder over sequences of feature vectors (Kalfaoglu et al. 2020, "Late Temporal Modeling
in 3D CNN Architectures with BERT for Action Recognition"): `FeatureEmbeddings` and `KeyKeepMask`."""

import keras
from keras import ops

from official_bert.layers import fused_training_ops
from official_bert.layers.dropout import Dropout, uniform
from official_bert.layers.initializers import truncated_normal


class FeatureEmbeddings(keras.layers.Layer):
    """(batch, time, channels) feature vectors -> (batch, 1 + time, hidden): projected to `hidden_size` (no layer
    when `input_channels == hidden_size`), a learned classification vector before them, learned position embeddings
    added, a LayerNorm (`normalize`: BERT's post-LN embeddings) and dropout. There is no segment embedding.

    Args:
        input_channels: channels of each time step's feature vector.
        hidden_size: the encoder's width.
        max_positions: rows of the position table: the classification position and up to `max_positions - 1` steps.
        dropout_rate: dropout on the output.
        initializer_range: stddev of the classification vector's normal initializer (N(0, 0.02) in the paper) and
            of the truncated-normal position table and projection.
        normalize: a LayerNorm before the dropout (post-LN encoders); a pre-LN encoder's first block normalises.
        layer_norm_eps: its epsilon.
        fused_training_kernels: training calls on TensorFlow run the LayerNorm as XLA kernels
            (`official_bert.layers.fused_training_ops`).
    """

    def __init__(self, input_channels, hidden_size, max_positions, dropout_rate, initializer_range, normalize=True,
                 layer_norm_eps=1e-12, fused_training_kernels=True, **kwargs):
        super().__init__(**kwargs)
        self.input_channels = input_channels
        self.hidden_size = hidden_size
        self.max_positions = max_positions
        self.dropout_rate = dropout_rate
        self.initializer_range = initializer_range
        self.normalize = bool(normalize)
        self.layer_norm_eps = layer_norm_eps
        self.fused_training_kernels = bool(fused_training_kernels)
        self.projection = None
        if input_channels != hidden_size:
            self.projection = keras.layers.Dense(hidden_size, kernel_initializer=truncated_normal(initializer_range),
                                                 name="projection")
        self.layer_norm = None
        if self.normalize:  # float32 under mixed precision
            self.layer_norm = keras.layers.LayerNormalization(epsilon=layer_norm_eps, dtype="float32",
                                                              name="layer_norm")
        self.dropout = Dropout(dropout_rate, name="dropout")

    def build(self, input_shape=None):
        if self.projection is not None:
            self.projection.build((None, None, self.input_channels))
        self.classification_vector = self.add_weight(
            name="classification_vector", shape=(self.hidden_size,),
            initializer=keras.initializers.RandomNormal(stddev=self.initializer_range))
        self.position_embeddings = self.add_weight(
            name="position_embeddings", shape=(self.max_positions, self.hidden_size),
            initializer=truncated_normal(self.initializer_range))
        if self.layer_norm is not None:
            self.layer_norm.build((None, None, self.hidden_size))
        self.built = True

    def call(self, features, training=None):
        """(batch, time, channels) float -> (batch, 1 + time, hidden) in the compute dtype."""
        time = features.shape[1]
        if time is not None and time + 1 > self.max_positions:
            raise ValueError(f"{time} time steps exceed the encoder's {self.max_positions - 1} (max_positions="
                             f"{self.max_positions}, the classification position included)")
        features = ops.cast(features, self.compute_dtype)
        hidden = self.projection(features) if self.projection is not None else features  # (batch, time, hidden)
        batch = ops.shape(hidden)[0]
        # (reshape, not [None] indexing: TFLite has no kernel for the strided slice that adds axes)
        first = ops.broadcast_to(ops.reshape(ops.cast(self.classification_vector, hidden.dtype), (1, 1, -1)),
                                 (batch, 1, self.hidden_size))  # (batch, 1, hidden)
        hidden = ops.concatenate([first, hidden], axis=1)  # (batch, 1 + time, hidden)
        hidden = hidden + ops.expand_dims(self.position_embeddings[:ops.shape(hidden)[1]], 0)
        if self.layer_norm is not None:
            use_kernels = fused_training_ops.applies(self.fused_training_kernels, training)
            hidden = fused_training_ops.layer_norm(self.layer_norm, hidden, use_kernels)
        return self.dropout(hidden, training=training)

    def compute_output_shape(self, features_shape):
        time = None if features_shape[1] is None else features_shape[1] + 1
        return (features_shape[0], time, self.hidden_size)

    def get_config(self):
        config = super().get_config()
        config.update(input_channels=self.input_channels, hidden_size=self.hidden_size,
                      max_positions=self.max_positions, dropout_rate=self.dropout_rate,
                      initializer_range=self.initializer_range, normalize=self.normalize,
                      layer_norm_eps=self.layer_norm_eps, fused_training_kernels=self.fused_training_kernels)
        return config


class KeyKeepMask(keras.layers.Layer):
    """The attention mask of the classification position and the time steps: (batch, time) int `input_mask` ->
    (batch, 1 + time) int32, 1 at the classification position. In training each time step stays an attention key
    with probability `key_keep_prob` (the paper's Bernoulli mask, one draw per example and step, shared by every
    query); the classification position always stays, so no row attends to nothing.

    Args:
        key_keep_prob: in (0, 1]; 1: every real step is kept.
        seed: the draws' seed (None: Keras' global one).
    """

    def __init__(self, key_keep_prob=1.0, seed=None, **kwargs):
        super().__init__(**kwargs)
        if not 0.0 < key_keep_prob <= 1.0:
            raise ValueError(f"key_keep_prob={key_keep_prob} must be in (0, 1]")
        self.key_keep_prob = float(key_keep_prob)
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)

    def call(self, input_mask, training=None):
        mask = ops.cast(input_mask, "int32")  # (batch, time)
        if training and self.key_keep_prob < 1.0:
            draws = uniform(ops.shape(mask), self.seed_generator)  # (batch, time)
            mask = mask * ops.cast(draws < self.key_keep_prob, "int32")
        return ops.pad(mask, [[0, 0], [1, 0]], constant_values=1)  # (batch, 1 + time)

    def compute_output_shape(self, input_mask_shape):
        time = None if input_mask_shape[1] is None else input_mask_shape[1] + 1
        return (input_mask_shape[0], time)

    def get_config(self):
        config = super().get_config()
        config.update(key_keep_prob=self.key_keep_prob, seed=self.seed)
        return config
