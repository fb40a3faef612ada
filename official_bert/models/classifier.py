"""BertClassifier: dropout + dense on the pooled output (sequence classification and regression); RoBERTa's and
DistilBERT's heads add their dense layer on the first token."""

import keras
import numpy as np

from official_bert.layers.dropout import Dropout
from official_bert.layers.initializers import truncated_normal
from official_bert.models.sequence_output_model import SequenceOutputModel
from official_bert.models.task_model import RealTokenTraining


@keras.saving.register_keras_serializable(package="official_bert")
class BertClassifier(RealTokenTraining, SequenceOutputModel):
    """Classifies (or scores) a packed sequence from the encoder's pooled `[CLS]` output.

    Inputs: the encoder's dict (`input_word_ids`, `input_mask`, `input_type_ids`, each (batch, seq) int32).
    Output: logits (batch, num_classes) in float32; with `num_classes=1` a regression score (STS-B).

    The head is the family's (the encoder config's `model_type`), as transformers' `*ForSequenceClassification`:
    BERT: dropout, dense on `pooled_output`. RoBERTa: on the first token's `sequence_output`, dropout, dense + tanh
    (`pre_head`), dropout, dense (`out_proj`). DistilBERT: on the first token, dense + ReLU (`pre_classifier`),
    dropout, dense.

    Args:
        encoder: a `BertEncoder`.
        num_classes: number of labels; 1 for regression.
        dropout_rate: dropout before the dense layer (default: the encoder config's
            `task_head_dropout("classifier")`, as transformers' head of the family).
        multi_label: each example may have any number of the labels: one sigmoid output per label, binary
            cross-entropy (transformers' `problem_type="multi_label_classification"`).
        train_on_real_tokens: see `RealTokenTraining` (default True).

    Examples:
    ```python
    encoder, config = official_bert.checkpoints.load_encoder("all-MiniLM-L6-v2")
    classifier = official_bert.BertClassifier(encoder, num_classes=2)
    logits = classifier(packed_inputs)  # (batch, 2)
    ```
    """

    def __init__(self, encoder, num_classes, dropout_rate=None, multi_label=False, **kwargs):
        if isinstance(encoder, dict):
            encoder = keras.saving.deserialize_keras_object(encoder)
        config = encoder.config
        dropout_rate = config.task_head_dropout("classifier") if dropout_rate is None else dropout_rate
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name) for name in encoder.input}
        outputs = encoder(inputs)
        dropout = Dropout(dropout_rate, name="classifier_dropout")
        head = keras.layers.Dense(num_classes, kernel_initializer=truncated_normal(config.initializer_range),
                                  dtype="float32", name="classifier")  # float32 logits: a stable mixed-precision loss
        spec = config.family.classifier_pre_head  # RoBERTa's dense + tanh, DistilBERT's dense + relu, or None
        pre_head = None if spec is None else keras.layers.Dense(
            config.hidden_size, activation=spec.activation,
            kernel_initializer=truncated_normal(config.initializer_range), name=spec.layer_name)
        logits = _head_logits(config, outputs["sequence_output"][:, 0, :], outputs["pooled_output"], dropout,
                              pre_head, head)  # (batch, num_classes)
        super().__init__(inputs=inputs, outputs=logits, **kwargs)
        self.encoder = encoder
        self.num_classes = num_classes
        self.multi_label = bool(multi_label)
        self.dropout_rate = dropout_rate
        self.classifier_dropout = dropout
        self.pre_head = pre_head
        self.head = head
        self.reads_pooler = not (spec and spec.from_first_token)  # RoBERTa's reads the first token: no pooler

    def real_token_outputs(self, inputs, rows, layout, training):
        """The head on the encoder's packed rows (`RealTokenTraining.call` with `real_tokens`).

        Args:
            inputs: the encoder's dict of (batch, seq) int32 inputs.
            rows: (1, tokens, hidden), `BertEncoder.encode_packed`'s.
            layout: the batch's `RealTokens`.
            training: whether to apply dropout.

        Returns: logits (batch, num_classes) float32.
        """
        first_token = layout.first_tokens(rows)  # (batch, hidden)
        return _head_logits(self.encoder.config, first_token, self.encoder.pool(first_token), self.classifier_dropout,
                            self.pre_head, self.head, training=training)

    def default_loss(self):
        """Cross-entropy of the logits (binary, of each label, for `multi_label`); mean squared error for regression
        (`num_classes=1`)."""
        if self.multi_label:
            return keras.losses.BinaryCrossentropy(from_logits=True)
        if self.num_classes == 1:
            return keras.losses.MeanSquaredError()
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def default_metrics(self):
        if self.multi_label:  # of each label's decision at probability 0.5 (logit 0)
            return [keras.metrics.BinaryAccuracy(name="binary_accuracy", threshold=0.0)]
        if self.num_classes == 1:
            return [keras.metrics.MeanSquaredError(name="mse")]
        return [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]

    label_count_argument = "num_classes"  # the constructor argument that `from_pretrained(labels=...)` sets

    def task_fields(self):
        """task.json's fields of the head (`TextInputs.export`): its label names (GLUE's "0", "1", ... where none
        were given), regression or not, multi-label (with the export's default threshold) or not."""
        regression = self.num_classes == 1 and not self.multi_label
        names = list(self.label_names or ([] if regression else map(str, range(self.num_classes))))
        multi_label = {"multi_label": True} if self.multi_label else {}  # (task.json has it only when true)
        return {"label_names": names, "is_regression": regression, **multi_label}

    def label_ids(self, y):
        """`TextInputs.label_ids`; multi-label: each example's labels (names or ids, any number) as a 0/1 row
        (examples, num_classes) float32."""
        if not self.multi_label or y is None or isinstance(y, np.ndarray) and y.ndim == 2:
            return super().label_ids(y)
        rows = np.zeros((len(y), self.num_classes), np.float32)
        for row, labels in zip(rows, y):
            ids = super().label_ids(list(labels)) if len(labels) else []
            outside = [int(i) for i in ids if not 0 <= int(i) < self.num_classes]
            if outside:
                raise ValueError(f"label ids {outside} outside 0..{self.num_classes - 1}")
            row[list(ids)] = 1
        return rows

    def get_config(self):
        return {"encoder": keras.saving.serialize_keras_object(self.encoder), "num_classes": self.num_classes,
                "multi_label": self.multi_label,
                "dropout_rate": self.dropout_rate, "train_on_real_tokens": self.train_on_real_tokens, "name": self.name,
                "trainable": self.trainable, **self.text_inputs_config()}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _head_logits(config, first_token, pooled_output, dropout, pre_head, head, training=None):
    """The family's head (see `BertClassifier`) on the encoder's first-token `sequence_output` and its
    `pooled_output`, both (batch, hidden): (batch, num_classes) logits. `dropout`: the head's Dropout layer, applied
    where `training` (None: the call's own flag)."""
    def drop(x):
        return dropout(x, training=training)

    spec = config.family.classifier_pre_head
    if spec is not None and spec.from_first_token:
        features = drop(pre_head(drop(first_token)))
    elif spec is not None:  # DistilBERT's: its pooled_output is the first token
        features = drop(pre_head(pooled_output))
    else:
        features = drop(pooled_output)  # (batch, hidden)
    return head(features)
