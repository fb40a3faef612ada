"""BertSpanLabeler: start and end logits per token from the sequence output (SQuAD question answering)."""

import keras

from official_bert.layers.attention import MASKED_LOGIT
from official_bert.layers.dropout import Dropout
from official_bert.layers.initializers import truncated_normal
from official_bert.models.sequence_output_model import SequenceOutputModel
from official_bert.models.task_model import RealTokenTraining

SPAN_OUTPUTS = ("start_logits", "end_logits")


@keras.saving.register_keras_serializable(package="official_bert")
class BertSpanLabeler(RealTokenTraining, SequenceOutputModel):
    """Scores every token of a packed sequence as the start and as the end of the answer span.

    Inputs: the encoder's dict (`input_word_ids`, `input_mask`, `input_type_ids`, each (batch, seq) int32).
    Outputs: dict of `start_logits` and `end_logits`, each (batch, seq) in float32. A dense layer of 2 units on
    `sequence_output`, without dropout (DistilBERT: after its config's `qa_dropout_prob`), as Google's
    `run_squad.py` (`cls/squad/output_weights` [2, hidden], `cls/squad/output_bias`) and Hugging Face
    `BertForQuestionAnswering` (`qa_outputs.weight` [2, hidden], `qa_outputs.bias`); load either, or a plain
    encoder checkpoint, with `checkpoints.load_task_weights(model.encoder, checkpoints.head_specs(model), path,
    optional_pooler=True)`.
    The pooler is not trained (see `SequenceOutputModel`). Built by `from_pretrained(path)`, it also takes raw
    (question, context) pairs (`TextInputs`), packed as one sequence each (no SQuAD windows): `predict((questions,
    contexts))` gives the start and end logits of each packed piece.

    Training on TensorFlow runs on the batch's real tokens only (`RealTokenTraining.trains_on_real_tokens` says
    where): SQuAD v1.1's windows at seq 384 are 47% real tokens. Its softmax over start (end) positions then
    leaves out the padding (`MASKED_LOGIT`), which the padded model's softmax, like Google's and Hugging Face's,
    takes in with whatever logits the padding gets; `train_on_real_tokens=False` trains on that padded objective.

    Args:
        encoder: a `BertEncoder`.
        train_on_real_tokens: see `RealTokenTraining` (default True).

    Examples:
    ```python
    encoder, config = official_bert.checkpoints.load_encoder("all-MiniLM-L6-v2")
    model = BertSpanLabeler(encoder)
    model.compile(optimizer="adam")  # the mean of the start and end cross-entropies
    outputs = model(packed_inputs)  # {"start_logits": (batch, seq), "end_logits": (batch, seq)}
    ```
    """

    def __init__(self, encoder, **kwargs):
        if isinstance(encoder, dict):
            encoder = keras.saving.deserialize_keras_object(encoder)
        config = encoder.config
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name) for name in encoder.input}
        sequence = encoder(inputs)["sequence_output"]  # (batch, seq, hidden)
        # DistilBERT's `DistilBertForQuestionAnswering` drops before its head; BERT's, RoBERTa's and ALBERT's do not.
        dropout = None if config.qa_dropout_prob is None else Dropout(config.qa_dropout_prob, name="qa_dropout")
        head = keras.layers.Dense(
            2, kernel_initializer=truncated_normal(config.initializer_range),
            dtype="float32", name="qa_outputs")  # float32 logits for a stable loss under mixed precision
        super().__init__(inputs=inputs, outputs=_span_outputs(head(_dropped(dropout, sequence))), **kwargs)
        self.encoder = encoder
        self.qa_dropout = dropout
        self.head = head

    def real_token_outputs(self, inputs, rows, layout, training):
        """The head on the encoder's packed rows (`RealTokenTraining.call` with `real_tokens`): the padded model's
        logits at the real tokens up to float rounding (and dropout), `MASKED_LOGIT` at the padding, so a softmax
        over the positions of a sequence gives the padding no share.

        Args:
            inputs: the encoder's dict of (batch, seq) int32 inputs.
            rows: (1, tokens, hidden), `BertEncoder.encode_packed`'s.
            layout: the batch's `RealTokens`.
            training: whether to apply the head's dropout (DistilBERT's).

        Returns: dict of `start_logits` and `end_logits`, each (batch, seq) float32.
        """
        logits = layout.unpack(self.head(_dropped(self.qa_dropout, rows, training)))  # (batch, seq, 2), 0 at padding
        is_real = keras.ops.expand_dims(keras.ops.cast(inputs["input_mask"], "bool"), -1)  # (batch, seq, 1)
        return _span_outputs(keras.ops.where(is_real, logits, MASKED_LOGIT))

    def default_loss(self):
        """Sparse cross-entropy of the start and of the end logits; with `default_loss_weights` (0.5 each) the loss
        is their mean, as Google's `run_squad.py` and Hugging Face's `BertForQuestionAnswering`. Labels are dicts
        keyed by the output names (see `data.squad.squad_dataset`)."""
        return {name: keras.losses.SparseCategoricalCrossentropy(from_logits=True) for name in SPAN_OUTPUTS}

    def default_loss_weights(self):
        return {name: 0.5 for name in SPAN_OUTPUTS}

    def task_fields(self):
        """Nothing beyond the `task_settings` of the `tasks.run_squad` model_dir it was read from (its windows,
        question and answer lengths, which a SQuAD export serves); refuses without them."""
        if not self.task_settings:
            raise ValueError("BertSpanLabeler.export: a SQuAD export serves the answer settings of a tasks.run_squad "
                             "model_dir; train it there, then export BertSpanLabeler.from_pretrained(model_dir)")
        return {}

    def get_config(self):
        return {"encoder": keras.saving.serialize_keras_object(self.encoder),
                "train_on_real_tokens": self.train_on_real_tokens, "name": self.name, "trainable": self.trainable,
                **self.text_inputs_config()}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _dropped(dropout, hidden, training=None):
    """`hidden` through the head's `dropout`, or unchanged where the head has none."""
    return hidden if dropout is None else dropout(hidden, training=training)


def _span_outputs(logits):
    """(batch, seq, 2) logits -> {"start_logits", "end_logits"}, each (batch, seq)."""
    start_logits, end_logits = keras.ops.unstack(logits, 2, axis=-1)
    return {"start_logits": start_logits, "end_logits": end_logits}
