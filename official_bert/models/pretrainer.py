"""BertPretrainer: the encoder with BERT's masked-LM and next-sentence heads, and their losses and metrics.

Objectives: `mlm_nsp` (BERT: masked LM + next-sentence prediction), `mlm` (RoBERTa: masked LM only, no
sentence head) and `mlm_sop` (ALBERT: masked LM + sentence-order prediction, the same 2-way head on the
pooled output, trained on sentence-order labels).
"""

import keras
from keras import ops

from official_bert import keras_compat
from official_bert.layers.dropout import Dropout
from official_bert.layers.initializers import truncated_normal
from official_bert.layers.masked_lm_head import MaskedLMHead
from official_bert.models.distribution import reducible_across_workers, tf_distribute
from official_bert.models.matmul_precision import Float32Matmuls

PRETRAINER_INPUTS = ("input_word_ids", "input_mask", "input_type_ids", "masked_lm_positions")
PRETRAINING_LABELS = ("masked_lm_ids", "masked_lm_weights", "next_sentence_labels")
MLM_NSP, MLM, MLM_SOP = "mlm_nsp", "mlm", "mlm_sop"
OBJECTIVES = (MLM_NSP, MLM, MLM_SOP)


def split_features(features):
    """Splits a pre-training batch (the dict of `official_bert.data.pretraining_dataset`) into the model's
    inputs and the labels `BertPretrainer.compute_loss` reads: `(inputs, labels)`."""
    inputs = {name: features[name] for name in PRETRAINER_INPUTS}
    labels = {name: features[name] for name in PRETRAINING_LABELS}
    return inputs, labels


@keras.saving.register_keras_serializable(package="official_bert")
class BertPretrainer(Float32Matmuls, keras.Model):
    """BERT with the pre-training heads: masked LM on the masked positions and next-sentence prediction.

    Inputs: the encoder's dict (`input_word_ids`, `input_mask`, `input_type_ids`, each (batch, seq) int32)
    plus `masked_lm_positions` (batch, max_predictions) int32.
    Outputs: a dict of float32 `mlm_logits` (batch, max_predictions, vocab) and, unless the objective is `mlm`,
    `nsp_logits` (batch, 2) (class 0: B follows A, class 1: B is random, as Google's data and HF's
    `next_sentence_label`; with `mlm_sop` class 1 is A and B swapped, as ALBERT's `sentence_order_label`).

    Training: `compile(optimizer)` without a loss and `fit` on `(inputs, labels)` pairs (see `split_features`),
    labels holding `masked_lm_ids`, `masked_lm_weights`, `next_sentence_labels`. The loss is, as in Google's
    `run_pretraining.py`, the masked-LM cross-entropy averaged with `masked_lm_weights` over the global batch
    (the same value on one device or many) plus the mean next-sentence cross-entropy. Metrics:
    `masked_lm_loss`, `masked_lm_accuracy` (weighted), `next_sentence_loss`, `next_sentence_accuracy` (named
    `sentence_order_*` with `mlm_sop`; absent with `mlm`, whose loss is the masked LM's alone).

    Checkpoints: `official_bert.checkpoints.load_pretrainer_weights` loads Google's (`cls/predictions/*`,
    `cls/seq_relationship/*`) and Hugging Face's (`cls.predictions.*`, `cls.seq_relationship.*`) heads, each
    optional, and `save_pretrainer` writes a Hugging Face `BertForPreTraining` directory.

    Args:
        encoder: a `BertEncoder`.
        objective: one of `OBJECTIVES`: "mlm_nsp" (default), "mlm" or "mlm_sop".

    Examples:
    ```python
    encoder, config = official_bert.checkpoints.load_encoder("all-MiniLM-L6-v2")
    pretrainer = BertPretrainer(encoder)
    outputs = pretrainer({**packed_inputs, "masked_lm_positions": positions})
    outputs["mlm_logits"]  # (batch, max_predictions, 30522)
    ```
    """

    def __init__(self, encoder, objective=MLM_NSP, **kwargs):
        if objective not in OBJECTIVES:
            raise ValueError(f"objective={objective!r}: expected one of {', '.join(OBJECTIVES)}")
        if isinstance(encoder, dict):
            encoder = keras.saving.deserialize_keras_object(encoder)
        config = encoder.config
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name) for name in PRETRAINER_INPUTS}
        outputs = encoder({name: inputs[name] for name in encoder.input})
        masked_lm = MaskedLMHead(encoder.embeddings, config.hidden_act, config.layer_norm_eps,
                                 config.initializer_range, input_size=config.hidden_size, name="masked_lm")
        mlm_logits = masked_lm(outputs["sequence_output"], inputs["masked_lm_positions"])  # (batch, preds, vocab)
        model_outputs = {"mlm_logits": mlm_logits}
        next_sentence = None
        if objective != MLM:
            next_sentence = keras.layers.Dense(
                2, kernel_initializer=truncated_normal(config.initializer_range),
                dtype="float32", name="next_sentence")  # float32 logits for a stable loss under mixed precision
            pooled = outputs["pooled_output"]  # (batch, hidden)
            if config.family.sentence_head_dropout:  # transformers' AlbertSOPHead: dropout, then the classifier
                pooled = Dropout(config.head_dropout_prob, name="sentence_order_dropout")(pooled)
            model_outputs["nsp_logits"] = next_sentence(pooled)  # (batch, 2)
        super().__init__(inputs=inputs, outputs=model_outputs, **kwargs)
        self.encoder = encoder
        self.objective = objective
        self.masked_lm = masked_lm
        self.next_sentence = next_sentence  # the NSP or SOP head; None with the "mlm" objective
        self.masked_lm_loss_tracker = keras.metrics.Mean(name="masked_lm_loss")
        self.masked_lm_accuracy_tracker = keras.metrics.Mean(name="masked_lm_accuracy")
        self.next_sentence_loss_tracker = self.next_sentence_accuracy_tracker = None
        if next_sentence is not None:
            prefix = "sentence_order" if objective == MLM_SOP else "next_sentence"
            self.next_sentence_loss_tracker = keras.metrics.Mean(name=f"{prefix}_loss")
            self.next_sentence_accuracy_tracker = keras.metrics.Mean(name=f"{prefix}_accuracy")

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """Masked-LM weighted mean cross-entropy plus next-sentence (or sentence-order) mean cross-entropy (as
        Google's `run_pretraining.py`), both averaged over the global batch; the masked LM's alone with "mlm".

        Under a `tf.distribute` strategy each replica returns its share of the global loss (Keras sums the
        replicas' gradients): the weight and example totals are all-reduced first, so the loss does not depend
        on how the batch is split.
        """
        del x, sample_weight, training
        labels = PRETRAINING_LABELS if self.next_sentence is not None else PRETRAINING_LABELS[:2]
        if not isinstance(y, dict) or any(name not in y for name in labels):
            raise ValueError(f"BertPretrainer trains on (inputs, labels) with labels a dict of "
                             f"{', '.join(labels)}; got {y!r}")
        terms = pretraining_terms(y, y_pred)
        weight_total, example_total = ops.unstack(_global_sum(ops.stack([
            ops.sum(terms["masked_lm_weights"]),
            ops.cast(ops.shape(terms["masked_lm_weights"])[0], "float32")])))
        # this replica's share of each loss; the shares sum to the global loss
        loss = ops.sum(terms["masked_lm_weights"] * terms["masked_lm_loss"]) / (weight_total + 1e-5)
        if self.next_sentence is not None:
            loss = loss + ops.sum(terms["next_sentence_loss"]) / ops.maximum(example_total, 1.0)
        for extra in self.losses:  # regularisers, if any: a mean over replicas, as Keras adds them
            loss = loss + ops.sum(extra) / _num_replicas()
        return loss

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        """Updates the four metrics with this step's global-batch figures (all-reduced, so every replica adds the
        same numbers and the reported values are those of the whole batch, not a mean of replica means)."""
        terms = pretraining_terms(y, y_pred)
        weights = terms["masked_lm_weights"]
        sentence = self.next_sentence is not None
        zero = ops.zeros((), "float32")
        sums = _global_sum(ops.stack([
            ops.sum(weights * terms["masked_lm_loss"]), ops.sum(weights * terms["masked_lm_correct"]),
            ops.sum(weights), ops.sum(terms["next_sentence_loss"]) if sentence else zero,
            ops.sum(terms["next_sentence_correct"]) if sentence else zero,
            ops.cast(ops.shape(weights)[0], "float32")]))
        self.masked_lm_loss_tracker.update_state(ops.divide_no_nan(sums[0], sums[2]), sample_weight=sums[2])
        self.masked_lm_accuracy_tracker.update_state(ops.divide_no_nan(sums[1], sums[2]), sample_weight=sums[2])
        if sentence:
            self.next_sentence_loss_tracker.update_state(ops.divide_no_nan(sums[3], sums[5]), sample_weight=sums[5])
            self.next_sentence_accuracy_tracker.update_state(ops.divide_no_nan(sums[4], sums[5]),
                                                             sample_weight=sums[5])
        return reducible_across_workers(self.get_metrics_result())

    def _maybe_symbolic_build(self, iterator=None, data_batch=None):
        # A private hook that Keras' TF trainer calls from fit/evaluate, so it stays a method with Keras' name.
        # Keras builds the model, compiled loss and metrics here from a sample batch that it first
        # `strategy.reduce`s; under MultiWorkerMirroredStrategy that reduce fails on nested inputs like ours. A
        # BertPretrainer is built at construction and its loss and metrics are its own, so unless compile() added
        # metrics or a loss, only the optimizer may still need building (see `keras_compat`).
        if not keras_compat.has_compiled_loss_or_metrics(self):
            keras_compat.build_optimizer(self)
            return
        keras_compat.symbolic_build(self, super(), iterator=iterator, data_batch=data_batch)

    def get_config(self):
        return {"encoder": keras.saving.serialize_keras_object(self.encoder), "objective": self.objective,
                "name": self.name, "trainable": self.trainable}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def pretraining_terms(labels, outputs):
    """Per-position and per-example losses and hits of both heads.

    Args:
        labels: dict of `masked_lm_ids` (batch, preds) int, `masked_lm_weights` (batch, preds) float
            (1 for a real prediction, 0 for padding), `next_sentence_labels` (batch,) or (batch, 1) int.
        outputs: the `BertPretrainer` outputs (`mlm_logits`, and `nsp_logits` unless the objective is "mlm").
    Returns: dict of float32 `masked_lm_loss`, `masked_lm_correct`, `masked_lm_weights` (batch, preds) and,
        with `nsp_logits`, `next_sentence_loss`, `next_sentence_correct` (batch,).
    """
    mlm_logits = ops.cast(outputs["mlm_logits"], "float32")  # (batch, preds, vocab)
    mlm_ids = ops.cast(labels["masked_lm_ids"], "int32")  # (batch, preds)
    mlm_loss = keras.losses.sparse_categorical_crossentropy(mlm_ids, mlm_logits, from_logits=True)
    terms = {
        "masked_lm_loss": mlm_loss,
        "masked_lm_correct": ops.cast(ops.equal(ops.argmax(mlm_logits, axis=-1), mlm_ids), "float32"),
        "masked_lm_weights": ops.cast(labels["masked_lm_weights"], "float32"),
    }
    if "nsp_logits" in outputs:
        nsp_logits = ops.cast(outputs["nsp_logits"], "float32")  # (batch, 2)
        nsp_labels = ops.reshape(ops.cast(labels["next_sentence_labels"], "int32"), (-1,))  # (batch,)
        terms["next_sentence_loss"] = keras.losses.sparse_categorical_crossentropy(nsp_labels, nsp_logits,
                                                                                   from_logits=True)
        terms["next_sentence_correct"] = ops.cast(ops.equal(ops.argmax(nsp_logits, axis=-1), nsp_labels), "float32")
    return terms


def _num_replicas():
    distribute = tf_distribute()
    return 1 if distribute is None else distribute.get_strategy().num_replicas_in_sync


def _global_sum(value):
    """`value` summed over the replicas of the current strategy (itself outside one)."""
    distribute = tf_distribute()
    context = None if distribute is None else distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync == 1:
        return value
    return context.all_reduce(distribute.ReduceOp.SUM, value)

