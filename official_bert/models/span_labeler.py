"""BertSpanLabeler: start and end logits per token from the sequence output (SQuAD question answering)."""

import keras

from official_bert.models.sequence_output_model import SequenceOutputModel

SPAN_OUTPUTS = ("start_logits", "end_logits")


@keras.saving.register_keras_serializable(package="official_bert")
class BertSpanLabeler(SequenceOutputModel):
    """Scores every token of a packed sequence as the start and as the end of the answer span.

    Inputs: the encoder's dict (`input_word_ids`, `input_mask`, `input_type_ids`, each (batch, seq) int32).
    Outputs: dict of `start_logits` and `end_logits`, each (batch, seq) in float32. A dense layer of 2 units on
    `sequence_output`, without dropout, as Google's `run_squad.py` (`cls/squad/output_weights` [2, hidden],
    `cls/squad/output_bias`) and Hugging Face `BertForQuestionAnswering` (`qa_outputs.weight` [2, hidden],
    `qa_outputs.bias`); load either, or a plain encoder checkpoint, with
    `checkpoints.load_task_weights(model.encoder, checkpoints.head_specs(model), path, optional_pooler=True)`.
    The pooler is not trained (see `SequenceOutputModel`).

    Args:
        encoder: a `BertEncoder`.

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
        head = keras.layers.Dense(
            2, kernel_initializer=keras.initializers.TruncatedNormal(stddev=config.initializer_range),
            dtype="float32", name="qa_outputs")  # float32 logits for a stable loss under mixed precision
        logits = head(sequence)  # (batch, seq, 2)
        start_logits, end_logits = keras.ops.unstack(logits, 2, axis=-1)  # (batch, seq) each
        super().__init__(inputs=inputs, outputs={"start_logits": start_logits, "end_logits": end_logits}, **kwargs)
        self.encoder = encoder
        self.head = head

    def default_loss(self):
        """Sparse cross-entropy of the start and of the end logits; with `default_loss_weights` (0.5 each) the loss
        is their mean, as Google's `run_squad.py` and Hugging Face's `BertForQuestionAnswering`. Labels are dicts
        keyed by the output names (see `data.squad.squad_dataset`)."""
        return {name: keras.losses.SparseCategoricalCrossentropy(from_logits=True) for name in SPAN_OUTPUTS}

    def default_loss_weights(self):
        return {name: 0.5 for name in SPAN_OUTPUTS}

    def get_config(self):
        return {"encoder": keras.saving.serialize_keras_object(self.encoder), "name": self.name,
                "trainable": self.trainable}

    @classmethod
    def from_config(cls, config):
        return cls(**config)
