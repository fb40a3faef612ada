"""BertPretrainer: the encoder with BERT's masked-LM and next-sentence heads, and their losses and metrics."""

import logging

import keras
from keras import ops

from official_bert.checkpoints.weight_map import WeightSpec, dense_specs, encoder_specs, layer_norm_specs
from official_bert.layers.masked_lm_head import MaskedLMHead

logger = logging.getLogger(__name__)

PRETRAINER_INPUTS = ("input_word_ids", "input_mask", "input_type_ids", "masked_lm_positions")
PRETRAINING_LABELS = ("masked_lm_ids", "masked_lm_weights", "next_sentence_labels")

# Hugging Face names of the masked-LM output bias: transformers saves `cls.predictions.bias`; older exports
# hold (also, or only) the tied `cls.predictions.decoder.bias`.
_HF_MLM_BIAS_NAMES = ("cls.predictions.bias", "cls.predictions.decoder.bias")


def split_features(features):
    """Splits a pre-training batch (the dict of `official_bert.data.pretraining_dataset`) into the model's
    inputs and the labels `BertPretrainer.compute_loss` reads: `(inputs, labels)`."""
    inputs = {name: features[name] for name in PRETRAINER_INPUTS}
    labels = {name: features[name] for name in PRETRAINING_LABELS}
    return inputs, labels


@keras.saving.register_keras_serializable(package="official_bert")
class BertPretrainer(keras.Model):
    """BERT with the pre-training heads: masked LM on the masked positions and next-sentence prediction.

    Inputs: the encoder's dict (`input_word_ids`, `input_mask`, `input_type_ids`, each (batch, seq) int32)
    plus `masked_lm_positions` (batch, max_predictions) int32.
    Outputs: a dict of float32 `mlm_logits` (batch, max_predictions, vocab) and `nsp_logits` (batch, 2)
    (class 0: B follows A, class 1: B is random, as Google's data and HF's `next_sentence_label`).

    Training: `compile(optimizer)` without a loss and `fit` on `(inputs, labels)` pairs (see `split_features`),
    labels holding `masked_lm_ids`, `masked_lm_weights`, `next_sentence_labels`. The loss is, as in Google's
    `run_pretraining.py`, the masked-LM cross-entropy averaged with `masked_lm_weights` over the global batch
    (the same value on one device or many) plus the mean next-sentence cross-entropy. Metrics:
    `masked_lm_loss`, `masked_lm_accuracy` (weighted), `next_sentence_loss`, `next_sentence_accuracy`.

    Checkpoints: `head_specs()` names the heads as Google (`cls/predictions/*`, `cls/seq_relationship/*`,
    `output_weights` stored [2, hidden]) and Hugging Face (`cls.predictions.*`, `cls.seq_relationship.*`; the
    decoder weight is the word-embedding matrix). `load_pretrainer_weights` loads either, heads optional.

    Args:
        encoder: a `BertEncoder`.

    Examples:
    ```python
    encoder, config = official_bert.checkpoints.load_encoder("all-MiniLM-L6-v2")
    pretrainer = BertPretrainer(encoder)
    outputs = pretrainer({**packed_inputs, "masked_lm_positions": positions})
    outputs["mlm_logits"]  # (batch, max_predictions, 30522)
    ```
    """

    def __init__(self, encoder, **kwargs):
        if isinstance(encoder, dict):
            encoder = keras.saving.deserialize_keras_object(encoder)
        config = encoder.config
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name) for name in PRETRAINER_INPUTS}
        outputs = encoder({name: inputs[name] for name in encoder.input})
        masked_lm = MaskedLMHead(encoder.embeddings, config.hidden_act, config.layer_norm_eps,
                                 config.initializer_range, name="masked_lm")
        next_sentence = keras.layers.Dense(
            2, kernel_initializer=keras.initializers.TruncatedNormal(stddev=config.initializer_range),
            dtype="float32", name="next_sentence")  # float32 logits for a stable loss under mixed precision
        mlm_logits = masked_lm(outputs["sequence_output"], inputs["masked_lm_positions"])  # (batch, preds, vocab)
        nsp_logits = next_sentence(outputs["pooled_output"])  # (batch, 2)
        super().__init__(inputs=inputs, outputs={"mlm_logits": mlm_logits, "nsp_logits": nsp_logits}, **kwargs)
        self.encoder = encoder
        self.masked_lm = masked_lm
        self.next_sentence = next_sentence
        self.masked_lm_loss_tracker = keras.metrics.Mean(name="masked_lm_loss")
        self.masked_lm_accuracy_tracker = keras.metrics.Mean(name="masked_lm_accuracy")
        self.next_sentence_loss_tracker = keras.metrics.Mean(name="next_sentence_loss")
        self.next_sentence_accuracy_tracker = keras.metrics.Mean(name="next_sentence_accuracy")

    # ---- checkpoints -------------------------------------------------------------------------------------

    def masked_lm_specs(self, hf_bias_name="cls.predictions.bias"):
        """Weight specs of the masked-LM head (the decoder weight is the encoder's word embeddings)."""
        head = self.masked_lm
        return [
            *dense_specs(head.dense, "cls/predictions/transform/dense", "cls.predictions.transform.dense"),
            *layer_norm_specs(head.layer_norm, "cls/predictions/transform/LayerNorm",
                              "cls.predictions.transform.LayerNorm"),
            WeightSpec(head.output_bias, "cls/predictions/output_bias", hf_bias_name, (head.vocab_size,)),
        ]

    def next_sentence_specs(self):
        """Weight specs of the NSP head: Google `cls/seq_relationship/output_weights` [2, hidden] / `output_bias`,
        HF `cls.seq_relationship.weight` / `.bias`."""
        return dense_specs(self.next_sentence, "cls/seq_relationship", "cls.seq_relationship",
                           google_kernel="output_weights", google_bias="output_bias", google_transposed=True)

    def head_specs(self, hf_bias_name="cls.predictions.bias"):
        """Weight specs of both heads, in Google's and Hugging Face `BertForPreTraining` naming."""
        return self.masked_lm_specs(hf_bias_name) + self.next_sentence_specs()

    def checkpoint_specs(self):
        """Weight specs of the encoder and both heads."""
        return encoder_specs(self.encoder) + self.head_specs()

    # ---- losses and metrics ------------------------------------------------------------------------------

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """Masked-LM weighted mean cross-entropy plus next-sentence mean cross-entropy (as Google's
        `run_pretraining.py`), both averaged over the global batch.

        Under a `tf.distribute` strategy each replica returns its share of the global loss (Keras sums the
        replicas' gradients): the weight and example totals are all-reduced first, so the loss does not depend
        on how the batch is split.
        """
        del x, sample_weight, training
        if not isinstance(y, dict) or any(name not in y for name in PRETRAINING_LABELS):
            raise ValueError(f"BertPretrainer trains on (inputs, labels) with labels a dict of "
                             f"{', '.join(PRETRAINING_LABELS)}; got {y!r}")
        terms = pretraining_terms(y, y_pred)
        weight_total, example_total = ops.unstack(_global_sum(ops.stack([
            ops.sum(terms["masked_lm_weights"]), ops.cast(ops.shape(terms["next_sentence_loss"])[0], "float32")])))
        masked_lm_loss = ops.sum(terms["masked_lm_weights"] * terms["masked_lm_loss"]) / (weight_total + 1e-5)
        next_sentence_loss = ops.sum(terms["next_sentence_loss"]) / ops.maximum(example_total, 1.0)
        loss = masked_lm_loss + next_sentence_loss  # this replica's share; the shares sum to the global loss
        for extra in self.losses:  # regularisers, if any: a mean over replicas, as Keras adds them
            loss = loss + ops.sum(extra) / _num_replicas()
        return loss

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        """Updates the four metrics with this step's global-batch figures (all-reduced, so every replica adds the
        same numbers and the reported values are those of the whole batch, not a mean of replica means)."""
        terms = pretraining_terms(y, y_pred)
        weights = terms["masked_lm_weights"]
        sums = _global_sum(ops.stack([
            ops.sum(weights * terms["masked_lm_loss"]), ops.sum(weights * terms["masked_lm_correct"]),
            ops.sum(weights), ops.sum(terms["next_sentence_loss"]), ops.sum(terms["next_sentence_correct"]),
            ops.cast(ops.shape(terms["next_sentence_loss"])[0], "float32")]))
        self.masked_lm_loss_tracker.update_state(ops.divide_no_nan(sums[0], sums[2]), sample_weight=sums[2])
        self.masked_lm_accuracy_tracker.update_state(ops.divide_no_nan(sums[1], sums[2]), sample_weight=sums[2])
        self.next_sentence_loss_tracker.update_state(ops.divide_no_nan(sums[3], sums[5]), sample_weight=sums[5])
        self.next_sentence_accuracy_tracker.update_state(ops.divide_no_nan(sums[4], sums[5]), sample_weight=sums[5])
        results = self.get_metrics_result()
        if _multi_worker():
            # Keras (3.15) reduces step outputs across workers with `strategy.reduce("MEAN", v, axis=0)`, which
            # fails on scalars (tensorflow/tensorflow#72388): give them the axis it reduces.
            results = {name: ops.reshape(value, (1,)) for name, value in results.items()}
        return results

    def _maybe_symbolic_build(self, iterator=None, data_batch=None):
        # Keras (3.15) builds the model, compiled loss and metrics here from a sample batch that it first
        # `strategy.reduce`s; under MultiWorkerMirroredStrategy that reduce fails on nested inputs like ours. A
        # BertPretrainer is built at construction and its loss and metrics are its own, so unless compile() added
        # metrics or a loss, only the optimizer may still need building.
        if self._compile_metrics is None and self._compile_loss is None:
            if self.optimizer is not None and not self.optimizer.built:
                with self.distribute_strategy.scope():
                    self.optimizer.build(self.trainable_variables)
            return
        super()._maybe_symbolic_build(iterator=iterator, data_batch=data_batch)

    def get_config(self):
        return {"encoder": keras.saving.serialize_keras_object(self.encoder), "name": self.name,
                "trainable": self.trainable}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def pretraining_terms(labels, outputs):
    """Per-position and per-example losses and hits of both heads.

    Args:
        labels: dict of `masked_lm_ids` (batch, preds) int, `masked_lm_weights` (batch, preds) float
            (1 for a real prediction, 0 for padding), `next_sentence_labels` (batch,) or (batch, 1) int.
        outputs: the `BertPretrainer` outputs (`mlm_logits`, `nsp_logits`).
    Returns: dict of float32 `masked_lm_loss`, `masked_lm_correct`, `masked_lm_weights` (batch, preds) and
        `next_sentence_loss`, `next_sentence_correct` (batch,).
    """
    mlm_logits = ops.cast(outputs["mlm_logits"], "float32")  # (batch, preds, vocab)
    nsp_logits = ops.cast(outputs["nsp_logits"], "float32")  # (batch, 2)
    mlm_ids = ops.cast(labels["masked_lm_ids"], "int32")  # (batch, preds)
    nsp_labels = ops.reshape(ops.cast(labels["next_sentence_labels"], "int32"), (-1,))  # (batch,)
    mlm_loss = keras.losses.sparse_categorical_crossentropy(mlm_ids, mlm_logits, from_logits=True)
    nsp_loss = keras.losses.sparse_categorical_crossentropy(nsp_labels, nsp_logits, from_logits=True)
    return {
        "masked_lm_loss": mlm_loss,
        "masked_lm_correct": ops.cast(ops.equal(ops.argmax(mlm_logits, axis=-1), mlm_ids), "float32"),
        "masked_lm_weights": ops.cast(labels["masked_lm_weights"], "float32"),
        "next_sentence_loss": nsp_loss,
        "next_sentence_correct": ops.cast(ops.equal(ops.argmax(nsp_logits, axis=-1), nsp_labels), "float32"),
    }


def _tf_distribute():
    """`tf.distribute` when Keras runs on TensorFlow, else None: on the JAX and torch backends a model has one
    replica here (their data parallelism shards the batch outside the loss)."""
    if keras.backend.backend() != "tensorflow":
        return None
    import tensorflow as tf
    return tf.distribute


def _multi_worker():
    """Whether the current strategy is a MultiWorkerMirroredStrategy over more than one worker."""
    distribute = _tf_distribute()
    if distribute is None:
        return False
    strategy = distribute.get_strategy()
    if not isinstance(strategy, distribute.MultiWorkerMirroredStrategy):
        return False
    spec = strategy.cluster_resolver.cluster_spec().as_dict()
    return sum(len(spec.get(job, ())) for job in ("chief", "worker")) > 1


def _num_replicas():
    distribute = _tf_distribute()
    return 1 if distribute is None else distribute.get_strategy().num_replicas_in_sync


def _global_sum(value):
    """`value` summed over the replicas of the current strategy (itself outside one)."""
    distribute = _tf_distribute()
    context = None if distribute is None else distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync == 1:
        return value
    return context.all_reduce(distribute.ReduceOp.SUM, value)


def load_pretrainer_weights(pretrainer, path):
    """Loads a `BertPretrainer`'s encoder and, where the checkpoint has them, its heads.

    The encoder must load completely. Each head (masked LM, next sentence) loads only if all its variables are in
    the checkpoint; otherwise it keeps its fresh initialisation and a note is logged (all-MiniLM-L6-v2, a
    `BertModel`, has neither; a `BertForMaskedLM` has no NSP head, and no pooler, which then starts fresh too).
    A head present with a wrong shape is an error.

    Args:
        pretrainer: a `BertPretrainer`.
        path: a Hugging Face directory (`BertForPreTraining`, `BertForMaskedLM` or `BertModel`), a Google
            directory or checkpoint prefix (`bert/*`, `cls/*`), or a `save_pretrainer` directory.
    Returns: dict `{"masked_lm": loaded?, "next_sentence": loaded?}`.
    """
    from official_bert.checkpoints import load_task_weights, open_checkpoint, restore

    reader = open_checkpoint(path)
    bias_name = _HF_MLM_BIAS_NAMES[0]
    if reader.format == "hf":
        bias_name = next((name for name in _HF_MLM_BIAS_NAMES if name in reader), bias_name)
    nsp_specs = pretrainer.next_sentence_specs()
    has_nsp = all(spec.name(reader.format) in reader for spec in nsp_specs)
    # Without the NSP head the pooler (its only user) may be missing too, as in HF's BertForMaskedLM.
    loaded = {"masked_lm": load_task_weights(pretrainer.encoder, pretrainer.masked_lm_specs(bias_name), path,
                                             optional_pooler=not has_nsp),
              "next_sentence": has_nsp}
    if has_nsp:
        restore(nsp_specs, reader)
    else:
        logger.info("%s: no next-sentence head in the checkpoint; it starts from a fresh initialisation",
                    reader.path)
    return loaded


def save_pretrainer(pretrainer, path, vocab_file=None, overwrite=False):
    """Writes a Hugging Face `BertForPreTraining` directory (`config.json` + `model.safetensors`, encoder weights
    under `bert.`, heads under `cls.`), which transformers and `load_pretrainer_weights` load.

    Args:
        pretrainer: a `BertPretrainer`.
        path: output directory (created).
        vocab_file: copied in as `vocab.txt` when given.
        overwrite: replace an existing `model.safetensors` there; otherwise that is an error.
    """
    import json
    import os
    import shutil

    from safetensors.numpy import save_file

    os.makedirs(path, exist_ok=True)
    weights_path = os.path.join(path, "model.safetensors")
    if os.path.exists(weights_path) and not overwrite:
        raise FileExistsError(f"{weights_path} exists; pass overwrite=True to replace it")
    tensors = {f"bert.{spec.hf_name}": spec.to_stored_value("hf") for spec in encoder_specs(pretrainer.encoder)}
    tensors.update({spec.hf_name: spec.to_stored_value("hf") for spec in pretrainer.head_specs()})
    save_file(tensors, weights_path, metadata={"format": "pt"})
    config = {**pretrainer.encoder.config.to_hf_dict(), "architectures": ["BertForPreTraining"]}
    with open(os.path.join(path, "config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2)
    if vocab_file:
        shutil.copyfile(vocab_file, os.path.join(path, "vocab.txt"))
    return path
