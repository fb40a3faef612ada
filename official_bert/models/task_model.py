"""TaskModel: the base of the fine-tuning models (classifier, token classifier, span labeler), and
RealTokenTraining, the training call of those that can run on a batch's real tokens only.

One loss convention for all of them, keras-hub's: `compile(loss="auto", metrics="auto")` fills in the model's
own `default_loss()` and `default_metrics()`; pass a loss or metrics to override them. (`BertPretrainer` computes
its two-part loss in `compute_loss` instead.)
"""

import keras

from official_bert import keras_compat
from official_bert.models.distribution import reducible_across_workers
from official_bert.models.matmul_precision import Float32Matmuls, float32_matmuls
from official_bert.models.text_inputs import TextInputs


class TaskModel(Float32Matmuls, TextInputs, keras.Model):
    """A Keras model with a default loss and metrics, and a build that works under every tf.distribute strategy;
    with a preprocessor, it takes raw strings (`TextInputs`)."""

    def default_loss(self):
        """The loss `compile(loss="auto")` uses."""
        raise NotImplementedError

    def default_loss_weights(self):
        """The `loss_weights` that go with the default loss of a model with several outputs (default: none)."""
        return None

    def default_metrics(self):
        """The metrics `compile(metrics="auto")` uses (default: none)."""
        return None

    def compile(self, optimizer="adam", loss="auto", metrics="auto", **kwargs):
        """`keras.Model.compile`, with "auto" meaning the model's own loss (and its loss weights) and metrics.

        Raises:
            ValueError: a loss that reads the model's outputs as probabilities (a cross-entropy without
                `from_logits=True`): the outputs are logits, and it would train on the wrong values.
        """
        if loss == "auto":
            loss = self.default_loss()
            kwargs.setdefault("loss_weights", self.default_loss_weights())
        for each in loss.values() if isinstance(loss, dict) else loss if isinstance(loss, (list, tuple)) else [loss]:
            if _reads_probabilities(each):
                shown = each if isinstance(each, str) else getattr(each, "__name__", type(each).__name__)
                raise ValueError(f"{type(self).__name__} outputs logits, but the loss {shown!r} reads probabilities "
                                 "(from_logits=False): pass its from_logits=True form (e.g. keras.losses."
                                 "SparseCategoricalCrossentropy(from_logits=True)), or leave loss out for the "
                                 "model's own")
        metrics = self.default_metrics() if metrics == "auto" else metrics
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)

    def compile_from_config(self, config):
        """Compiles a model read back by `keras.saving.load_model` as it was saved (Keras skips a model whose
        `compile` is overridden unless it defines this); Keras then restores the optimizer's state."""
        self.compile(**keras.saving.deserialize_keras_object(config))
        if self.built:
            self.optimizer.build(self.trainable_variables)

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        return reducible_across_workers(super().compute_metrics(x, y, y_pred, sample_weight))

    def _maybe_symbolic_build(self, iterator=None, data_batch=None):
        # A private hook that Keras' TF trainer calls from fit/evaluate, so it stays a method with Keras' name. Keras
        # builds the compiled loss and metrics from a sample batch that it first `strategy.reduce`s across
        # replicas; under MultiWorkerMirroredStrategy that reduce fails on a dict of inputs. Only the batch's shapes
        # and dtypes matter: this replica's share gives them (see `keras_compat`).
        keras_compat.symbolic_build_from_local_batch(self, super(), iterator=iterator, data_batch=data_batch)


def _reads_probabilities(loss):
    """Whether a Keras loss (a name, a function or a `keras.losses.Loss`) reads predictions as probabilities: a
    cross-entropy without `from_logits=True`. Keras' loss functions and names take probabilities by default."""
    if isinstance(loss, str):
        try:
            loss = keras.losses.get(loss)
        except ValueError:  # not a Keras name: Keras' own compile says so
            return False
    if isinstance(loss, keras.losses.Loss):
        return loss.get_config().get("from_logits") is False
    return "crossentropy" in getattr(loss, "__name__", "")


class RealTokenTraining:
    """Mixin (before `TaskModel` in the bases) for a task model that can run on a batch's real tokens only: its
    `call` takes `real_tokens`, and by default a training call runs on the real tokens where
    `trains_on_real_tokens()`; every other call runs the padded functional graph. The model defines
    `real_token_outputs(inputs, rows, layout, training)`: its head on the encoder's packed rows
    (`BertEncoder.encode_packed`).

    Args (the model's constructor's, saved by its `get_config`):
        train_on_real_tokens: whether training calls run on each batch's real tokens only where
            `trains_on_real_tokens()` (default True); False trains on the padded batch.
    """

    def __init__(self, *args, train_on_real_tokens=True, **kwargs):
        super().__init__(*args, **kwargs)
        self._train_on_real_tokens = bool(train_on_real_tokens)

    @property
    def train_on_real_tokens(self):
        """The constructor's `train_on_real_tokens`."""
        return self._train_on_real_tokens

    def trains_on_real_tokens(self):
        """Whether a training call runs the encoder on the batch's real tokens only: `train_on_real_tokens`, on
        TensorFlow, without XLA and not on a TPU (XLA needs static shapes; the real tokens' count varies from batch
        to batch).

        Measured on 2 CPU cores, all-MiniLM-L6-v2, batches of 32 MRPC-length pairs (a third of each padded batch is
        padding): 1011 -> 805 ms a training step."""
        if not (self.train_on_real_tokens and keras.backend.backend() == "tensorflow") or self.jit_compile:
            return False
        import tensorflow as tf

        return not isinstance(tf.distribute.get_strategy(), tf.distribute.TPUStrategy)

    def call(self, inputs, training=None, mask=None, real_tokens=None):
        """Args:
            inputs: the encoder's dict of (batch, seq) int32 inputs.
            training: whether to apply dropout.
            mask: unused (Keras' argument).
            real_tokens: run the encoder (and a per-token head) on the batch's real tokens only: the same outputs
                up to float rounding (and dropout) at the real tokens' share of the padded batch's compute. For
                served batches of unequal texts, and for training. None: where `training` and
                `trains_on_real_tokens()`.
        """
        if real_tokens is None:
            real_tokens = bool(training) and self.trains_on_real_tokens()
        if not real_tokens:
            return super().call(inputs, training=training, mask=mask)
        with float32_matmuls(self.compute_dtype):
            rows, layout = self.encoder.encode_packed(inputs, training=bool(training))
            return self.real_token_outputs(inputs, rows, layout, training=bool(training))
