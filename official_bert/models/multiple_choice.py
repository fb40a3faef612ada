"""BertMultipleChoice: a score per (context, choice) pair from the pooled output; a question's scores are its logits."""

import keras
from keras import ops

from official_bert.layers.attention import MASKED_LOGIT
from official_bert.layers.dropout import Dropout
from official_bert.layers.initializers import truncated_normal
from official_bert.models.task_model import TaskModel


@keras.saving.register_keras_serializable(package="official_bert")
class FlattenChoices(keras.layers.Layer):
    """(batch, choices, seq) -> (batch * choices, seq): every pair becomes one row for the encoder."""

    def call(self, inputs):
        return ops.reshape(inputs, (-1, ops.shape(inputs)[-1]))

    def compute_output_shape(self, input_shape):
        batch = None if input_shape[0] is None or input_shape[1] is None else input_shape[0] * input_shape[1]
        return (batch, input_shape[2])


@keras.saving.register_keras_serializable(package="official_bert")
class ChoiceLogits(keras.layers.Layer):
    """Pair scores (batch * choices, 1) -> logits (batch, choices); a choice whose `input_mask` row is all zeros
    (a missing choice) gets `MASKED_LOGIT`."""

    def call(self, scores, input_mask):
        shape = ops.shape(input_mask)  # (batch, choices, seq)
        logits = ops.reshape(scores, (shape[0], shape[1]))  # (batch, choices)
        present = ops.max(input_mask, axis=-1) > 0  # (batch, choices); no `Any`: serving graphs keep to Max
        return ops.where(present, logits, ops.cast(MASKED_LOGIT, logits.dtype))

    def compute_output_shape(self, scores_shape, input_mask_shape):
        return tuple(input_mask_shape[:2])


@keras.saving.register_keras_serializable(package="official_bert")
class BertMultipleChoice(TaskModel):
    """Scores each choice of a question: `[CLS] context [SEP] choice [SEP]` -> pooled output -> dropout -> dense(1).

    The BERT paper's SWAG model (section 4.4) and Hugging Face `BertForMultipleChoice` (`classifier.weight`
    [1, hidden] / `classifier.bias`): every (context, choice) pair runs through the encoder as its own sequence,
    and the scores of one question's pairs, side by side, are its logits; softmax over them and cross-entropy
    against the right choice's index train it. Any number of choices: a question with fewer than the batch's
    largest has its missing choices packed as all-zero rows (`input_mask` 0 everywhere), which get
    `MASKED_LOGIT` (-1e9): never chosen, probability 0, no share in the loss. Load a transformers
    checkpoint, or a plain encoder one, with `checkpoints.load_task_weights(model.encoder,
    checkpoints.head_specs(model), path)`. DistilBERT's head (`DistilBertForMultipleChoice`) puts a dense + ReLU
    layer (`pre_head`, its `pre_classifier`) on the first token before the dropout.

    Inputs: the encoder's dict with a choices axis (`input_word_ids`, `input_mask`, `input_type_ids`, each
    (batch, choices, seq) int32).
    Output: logits (batch, choices) in float32.

    Args:
        encoder: a `BertEncoder`.
        dropout_rate: dropout before the dense layer (default: the encoder config's
            `task_head_dropout("multiple_choice")`, as transformers' head of the family).

    Examples:
    ```python
    encoder, config = official_bert.checkpoints.load_encoder("all-MiniLM-L6-v2")
    model = official_bert.BertMultipleChoice(encoder)
    logits = model(packed_choices)  # (batch, choices)
    ```
    """

    def __init__(self, encoder, dropout_rate=None, **kwargs):
        if isinstance(encoder, dict):
            encoder = keras.saving.deserialize_keras_object(encoder)
        config = encoder.config
        dropout_rate = config.task_head_dropout("multiple_choice") if dropout_rate is None else dropout_rate
        inputs = {name: keras.Input(shape=(None, None), dtype="int32", name=name) for name in encoder.input}
        flatten = FlattenChoices(name="flatten_choices")
        pairs = {name: flatten(value) for name, value in inputs.items()}  # (batch * choices, seq) each
        pooled = encoder(pairs)["pooled_output"]  # (batch * choices, hidden)
        pre_head = None
        spec = config.family.choice_pre_head  # DistilBERT's (no pooler: pooled_output is the first token)
        if spec is not None:
            pre_head = keras.layers.Dense(config.hidden_size, activation=spec.activation,
                                          kernel_initializer=truncated_normal(config.initializer_range),
                                          name=spec.layer_name)
            pooled = pre_head(pooled)  # (batch * choices, hidden)
        dropout = Dropout(dropout_rate, name="classifier_dropout")
        head = keras.layers.Dense(1, kernel_initializer=truncated_normal(config.initializer_range), dtype="float32",
                                  name="classifier")  # float32 logits for a stable loss under mixed precision
        scores = head(dropout(pooled))  # (batch * choices, 1)
        logits = ChoiceLogits(dtype="float32", name="choice_logits")(scores, inputs["input_mask"])  # (batch, choices)
        super().__init__(inputs=inputs, outputs=logits, **kwargs)
        self.encoder = encoder
        self.dropout_rate = dropout_rate
        self.pre_head = pre_head
        self.head = head

    def default_loss(self):
        """Cross-entropy of the choice logits against the right choice's index."""
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def default_metrics(self):
        return [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]

    def get_config(self):
        return {"encoder": keras.saving.serialize_keras_object(self.encoder), "dropout_rate": self.dropout_rate,
                "name": self.name, "trainable": self.trainable}

    @classmethod
    def from_config(cls, config):
        return cls(**config)
