"""BertTokenClassifier: dropout + dense on every token of the sequence output (NER, tagging)."""

import keras

from official_bert.labels import IGNORE_LABEL
from official_bert.layers.dropout import Dropout
from official_bert.layers.initializers import truncated_normal
from official_bert.models.sequence_output_model import SequenceOutputModel
from official_bert.models.task_model import RealTokenTraining


@keras.saving.register_keras_serializable(package="official_bert")
class BertTokenClassifier(RealTokenTraining, SequenceOutputModel):
    """Labels every token of a packed sequence from the encoder's `sequence_output`.

    Inputs: the encoder's dict (`input_word_ids`, `input_mask`, `input_type_ids`, each (batch, seq) int32).
    Output: logits (batch, seq, num_labels) in float32. Its default loss (`compile(loss="auto")`) skips
    positions labeled `IGNORE_LABEL` (-100). Built by `from_pretrained(path, labels=[...])`, it also takes
    sentences of words (`TextInputs`): `fit([["EU", "rejects", "German", "call"]], [["B-ORG", "O", "B-MISC", "O"]])`
    packs them as `tasks.run_ner` does (windows of whole words, the tag on each word's first piece) and `predict`
    gives each word's logits; raw texts: `predict(["EU rejects German call"])` gives the logits of each packed
    piece; `export(dir)` writes the tagger's raw-text SavedModel (entities as words and character spans).

    The pooler is not trained (see `SequenceOutputModel`). The head is Hugging Face
    `BertForTokenClassification`'s (`classifier.weight` / `.bias`); load such a checkpoint, or a plain encoder
    one, with `checkpoints.load_task_weights(model.encoder, checkpoints.head_specs(model), path,
    optional_pooler=True)` (HF's token classifiers are saved without a pooler).

    Args:
        encoder: a `BertEncoder`.
        num_labels: number of tags.
        dropout_rate: dropout before the dense layer (default: the encoder config's
            `task_head_dropout("tagger")`, as transformers' head of the family).
        train_on_real_tokens: see `RealTokenTraining` (default True).

    Examples:
    ```python
    encoder, config = official_bert.checkpoints.load_encoder("all-MiniLM-L6-v2")
    tagger = BertTokenClassifier(encoder, num_labels=9)
    logits = tagger(packed_inputs)  # (batch, seq, 9)
    ```
    """

    def __init__(self, encoder, num_labels, dropout_rate=None, **kwargs):
        if isinstance(encoder, dict):
            encoder = keras.saving.deserialize_keras_object(encoder)
        config = encoder.config
        dropout_rate = config.task_head_dropout("tagger") if dropout_rate is None else dropout_rate
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name) for name in encoder.input}
        sequence = encoder(inputs)["sequence_output"]  # (batch, seq, hidden)
        dropout = Dropout(dropout_rate, name="classifier_dropout")
        head = keras.layers.Dense(
            num_labels, kernel_initializer=truncated_normal(config.initializer_range),
            dtype="float32", name="classifier")  # float32 logits for a stable loss under mixed precision
        logits = _tag_logits(head, dropout, sequence)  # (batch, seq, num_labels)
        super().__init__(inputs=inputs, outputs=logits, **kwargs)
        self.encoder = encoder
        self.num_labels = num_labels
        self.dropout_rate = dropout_rate
        self.classifier_dropout = dropout
        self.head = head

    def real_token_outputs(self, inputs, rows, layout, training):
        """The head on the encoder's packed rows (`RealTokenTraining.call` with `real_tokens`): logits at the real
        tokens, 0 at the padding (the loss skips the padding's `IGNORE_LABEL`).

        Args:
            inputs: the encoder's dict of (batch, seq) int32 inputs.
            rows: (1, tokens, hidden), `BertEncoder.encode_packed`'s.
            layout: the batch's `RealTokens`.
            training: whether to apply dropout.

        Returns: logits (batch, seq, num_labels) float32.
        """
        return layout.unpack(_tag_logits(self.head, self.classifier_dropout, rows, training))

    def default_loss(self):
        """Mean cross-entropy over the positions whose label is not `IGNORE_LABEL` (as PyTorch's ignore_index)."""
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=IGNORE_LABEL)

    label_count_argument = "num_labels"  # the constructor argument that `from_pretrained(labels=...)` sets
    takes_words = True  # fit / evaluate / predict take sentences as lists of words (`TextInputs`)

    def task_fields(self):
        """task.json's fields of the head (`TextInputs.export`): the tag names ("0", "1", ... where none were
        given)."""
        return {"label_names": list(self.label_names or map(str, range(self.num_labels)))}

    def get_config(self):
        return {"encoder": keras.saving.serialize_keras_object(self.encoder), "num_labels": self.num_labels,
                "dropout_rate": self.dropout_rate, "train_on_real_tokens": self.train_on_real_tokens, "name": self.name,
                "trainable": self.trainable, **self.text_inputs_config()}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _tag_logits(head, dropout, sequence, training=None):
    """The head: dropout, then the dense layer: (..., hidden) -> (..., num_labels) float32 logits. `training`: None
    is the call's own flag."""
    return head(dropout(sequence, training=training))
