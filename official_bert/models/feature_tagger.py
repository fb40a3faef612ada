"""FeatureTagger: a BiLSTM tagger over frozen BERT features (the BERT paper's feature-based NER, Section 5.3).

The paper feeds the features of the first piece of each word, taken from one or more layers of a BERT that is
not fine-tuned, to "a randomly initialized two-layer 768-dimensional BiLSTM before the classification layer".
The layers are combined here: "concat" joins them (the paper's "Concat Last Four Hidden"), "sum" is a weighted
sum with learned softmax-normalised weights and a learned scale (ELMo's scalar mix; the paper's "Weighted Sum"),
"mean" averages them. One layer is used as it is with any of them.
"""

import keras
from keras import ops

from official_bert import keras_compat
from official_bert.labels import IGNORE_LABEL
from official_bert.layers.dropout import Dropout
from official_bert.models.matmul_precision import Float32Matmuls

COMBINES = ("concat", "sum", "mean")


@keras.saving.register_keras_serializable(package="official_bert")
class ScalarMix(keras.layers.Layer):
    """`gamma * sum_j softmax(w)_j * layer_j` over axis -2 of (batch, words, layers, hidden) input."""

    def build(self, input_shape):
        self.layer_weights = self.add_weight(name="layer_weights", shape=(input_shape[-2],), initializer="zeros")
        self.gamma = self.add_weight(name="gamma", shape=(), initializer="ones")
        self.built = True

    def call(self, features):
        weights = ops.softmax(self.layer_weights)  # (layers,)
        return self.gamma * ops.einsum("bwlh,l->bwh", features, weights)  # (batch, words, hidden)


@keras.saving.register_keras_serializable(package="official_bert")
class FeatureTagger(Float32Matmuls, keras.Model):
    """Tags words from cached per-layer features.

    Inputs: a dict of `features` (batch, words, layers, hidden) float32 and `word_mask` (batch, words) int32
    (1 on real words). Output: logits (batch, words, num_labels) float32. Its default loss skips positions
    labeled `IGNORE_LABEL` (padding).

    Args:
        num_labels: number of tags.
        num_layers: layers per word in `features`.
        hidden_size: width of each layer's vector.
        combine: "concat", "sum" (learned weighted sum) or "mean".
        lstm_units: units per direction of each BiLSTM layer (768 in the paper).
        lstm_layers: BiLSTM layers (2 in the paper).
        dropout_rate: dropout on the combined features and before the classifier.

    Examples:
    ```python
    tagger = FeatureTagger(num_labels=9, num_layers=4, hidden_size=384, combine="concat", lstm_units=128)
    logits = tagger({"features": features, "word_mask": mask})  # (batch, words, 9)
    ```
    """

    def __init__(self, num_labels, num_layers, hidden_size, combine="concat", lstm_units=768, lstm_layers=2,
                 dropout_rate=0.1, **kwargs):
        if combine not in COMBINES:
            raise ValueError(f"combine must be one of {', '.join(COMBINES)}, got {combine!r}")
        inputs = {"features": keras.Input(shape=(None, num_layers, hidden_size), dtype="float32", name="features"),
                  "word_mask": keras.Input(shape=(None,), dtype="int32", name="word_mask")}
        features = inputs["features"]  # (batch, words, layers, hidden)
        if combine == "concat":
            x = keras.layers.Reshape((-1, num_layers * hidden_size), name="concat")(features)
        elif combine == "sum":
            x = ScalarMix(name="scalar_mix")(features)
        else:
            x = keras.layers.Lambda(lambda f: ops.mean(f, axis=2), name="mean")(features)
        mask = ops.cast(inputs["word_mask"], "bool")  # (batch, words)
        x = Dropout(dropout_rate, name="feature_dropout")(x)
        for i in range(lstm_layers):
            lstm = keras.layers.LSTM(lstm_units, return_sequences=True, name=f"lstm_{i}")
            x = keras.layers.Bidirectional(lstm, name=f"bilstm_{i}")(x, mask=mask)  # (batch, words, 2 * units)
        x = Dropout(dropout_rate, name="classifier_dropout")(x)
        logits = keras.layers.Dense(num_labels, dtype="float32", name="classifier")(x)  # (batch, words, labels)
        super().__init__(inputs=inputs, outputs=logits, **kwargs)
        self.num_labels = num_labels
        self.num_layers = num_layers
        self.hidden_size = hidden_size
        self.combine = combine
        self.lstm_units = lstm_units
        self.lstm_layers = lstm_layers
        self.dropout_rate = dropout_rate

    def default_loss(self):
        """Mean cross-entropy over the real words (labels of padding are `IGNORE_LABEL`)."""
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=IGNORE_LABEL)

    def _maybe_symbolic_build(self, iterator=None, data_batch=None):
        # A private hook that Keras' TF trainer calls from fit/evaluate, so it stays a method with Keras' name: Keras'
        # own build, then the optimizer's variables before the train step's first trace (`keras_compat`).
        keras_compat.symbolic_build(self, super(), iterator=iterator, data_batch=data_batch)

    def get_config(self):
        return {"num_labels": self.num_labels, "num_layers": self.num_layers, "hidden_size": self.hidden_size,
                "combine": self.combine, "lstm_units": self.lstm_units, "lstm_layers": self.lstm_layers,
                "dropout_rate": self.dropout_rate, "name": self.name, "trainable": self.trainable}

    @classmethod
    def from_config(cls, config):
        return cls(**config)
