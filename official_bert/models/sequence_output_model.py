"""SequenceOutputModel: the base of task models that read only the encoder's `sequence_output`."""

from official_bert.models.task_model import TaskModel


class SequenceOutputModel(TaskModel):
    """A task model whose outputs come from the encoder's `sequence_output` alone (token classifier, span labeler).

    The encoder's pooler is off the path to the outputs. The model leaves the pooler's weights out of its own
    trainable weights, so training gives them no optimizer slots and no "Gradients do not exist" warning, and
    lists them as non-trainable, so they are still saved and loaded. The encoder object is not changed: the
    caller's encoder, and any other model built on it, still trains its pooler.

    Subclasses set `self.encoder`, the `BertEncoder` the model is built on, and `self.reads_pooler = True` when
    their outputs do depend on the pooler (then nothing is split off).
    """

    def _split_pooler(self, variables):
        """`(variables without the pooler's, the pooler's among them)`; all of them where the encoder has no pooler
        (DistilBERT) or the model reads it (`reads_pooler`, e.g. BERT's `BertClassifier`)."""
        if self.encoder.pooler is None or getattr(self, "reads_pooler", False):
            return list(variables), []
        pooler = {id(v) for v in self.encoder.pooler.weights}
        return [v for v in variables if id(v) not in pooler], [v for v in variables if id(v) in pooler]

    @property
    def trainable_weights(self):
        return self._split_pooler(super().trainable_weights)[0]

    @property
    def non_trainable_weights(self):
        return super().non_trainable_weights + self._split_pooler(super().trainable_weights)[1]

    @property
    def trainable_variables(self):
        return self._split_pooler(super().trainable_variables)[0]

    @property
    def non_trainable_variables(self):
        return super().non_trainable_variables + self._split_pooler(super().trainable_variables)[1]
