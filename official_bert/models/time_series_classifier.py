"""BertTimeSeriesClassifier: a class per sequence of feature vectors, read at the encoder's classification
position."""

import keras
import numpy as np
from keras import ops

from official_bert.layers.dropout import Dropout
from official_bert.layers.initializers import truncated_normal
from official_bert.models.feature_encoder import FEATURE_INPUTS, fan_in_uniform
from official_bert.models.task_model import TaskModel


@keras.saving.register_keras_serializable(package="official_bert")
class FeatureStandardization(keras.layers.Layer):
    """`(features - mean) / scale` per channel, from constants in the config: (batch, time, channels) float32.

    Args:
        mean: (channels,) floats.
        scale: (channels,) positive floats.
    """

    def __init__(self, mean, scale, **kwargs):
        kwargs.setdefault("dtype", "float32")
        super().__init__(**kwargs)
        self.mean = [float(v) for v in mean]
        self.scale = [float(v) for v in scale]
        if len(self.mean) != len(self.scale) or min(self.scale, default=1.0) <= 0:
            raise ValueError(f"mean and scale must be of one length, scale positive; got {len(self.mean)} and "
                             f"{len(self.scale)} values, smallest scale {min(self.scale, default=None)}")

    def call(self, features):
        mean = np.asarray(self.mean, np.float32)
        inverse = np.asarray([1.0 / v for v in self.scale], np.float32)
        return (ops.cast(features, "float32") - mean) * inverse

    def compute_output_shape(self, features_shape):
        return features_shape

    def get_config(self):
        config = super().get_config()
        config.update(mean=self.mean, scale=self.scale)
        return config


@keras.saving.register_keras_serializable(package="official_bert")
class BertTimeSeriesClassifier(TaskModel):
    """Classifies sequences of feature vectors: `BertFeatureEncoder` -> the classification position's output ->
    dropout -> dense (no tanh pooler), the late temporal model of Kalfaoglu et al. 2020.

    Inputs: the encoder's dict, `input_features` (batch, time, channels) float32 and `input_mask` (batch, time)
    int32. Output: logits (batch, num_classes) in float32.

    Args:
        encoder: a `BertFeatureEncoder`.
        num_classes: classes.
        dropout_rate: dropout before the dense layer (the paper: 0.8).
        feature_mean: per-channel means subtracted first (the training split's, `standardize`d runs); None: none.
        feature_scale: per-channel standard deviations divided by after, with `feature_mean`.

    Examples:
    ```python
    model = official_bert.BertTimeSeriesClassifier(encoder, num_classes=4)
    logits = model({"input_features": features, "input_mask": mask})  # (batch, 4)
    ```
    """

    def __init__(self, encoder, num_classes, dropout_rate=0.8, feature_mean=None, feature_scale=None, **kwargs):
        if isinstance(encoder, dict):
            encoder = keras.saving.deserialize_keras_object(encoder)
        if (feature_mean is None) != (feature_scale is None):
            raise ValueError("feature_mean and feature_scale go together")
        inputs = {name: keras.Input(shape=tensor.shape[1:], dtype=tensor.dtype, name=name)
                  for name, tensor in zip(FEATURE_INPUTS, (encoder.input[name] for name in FEATURE_INPUTS))}
        features = inputs["input_features"]  # (batch, time, channels)
        standardization = None
        if feature_mean is not None:
            standardization = FeatureStandardization(feature_mean, feature_scale, name="standardization")
            features = standardization(features)
        pooled = encoder({"input_features": features, "input_mask": inputs["input_mask"]})["pooled_output"]
        dropout = Dropout(dropout_rate, name="classifier_dropout")
        hidden_size = encoder.config.hidden_size
        initializers = {"kernel_initializer": truncated_normal(encoder.config.initializer_range)}
        if encoder.init_scheme == "fan_in":  # the encoder's scheme, as PyTorch's nn.Linear
            initializers = {"kernel_initializer": fan_in_uniform(hidden_size),
                            "bias_initializer": fan_in_uniform(hidden_size)}
        head = keras.layers.Dense(num_classes, dtype="float32", name="classifier", **initializers)  # float32 logits
        logits = head(dropout(pooled))  # (batch, num_classes)
        super().__init__(inputs=inputs, outputs=logits, **kwargs)
        self.encoder = encoder
        self.num_classes = int(num_classes)
        self.dropout_rate = float(dropout_rate)
        self.standardization = standardization
        self.head = head

    def default_loss(self):
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def default_metrics(self):
        return [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]

    def get_config(self):
        standardization = self.standardization
        return {"encoder": keras.saving.serialize_keras_object(self.encoder), "num_classes": self.num_classes,
                "dropout_rate": self.dropout_rate,
                "feature_mean": standardization.mean if standardization else None,
                "feature_scale": standardization.scale if standardization else None,
                "name": self.name, "trainable": self.trainable}

    @classmethod
    def from_config(cls, config):
        return cls(**config)
