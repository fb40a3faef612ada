"""Pruning: whole transformer layers or attention heads by their importance on dev data (structured: the model gets
smaller and faster), and weights by magnitude to a target sparsity on a schedule (unstructured: zeros in dense
kernels)."""

import dataclasses

import keras
import numpy as np

from official_bert.compression.losses import task_loss
from official_bert.compression.student import copy_teacher_weights, student_config


def layer_importance(model, build_model, batches):
    """How much the task loss on `batches` rises when each transformer layer is left out.

    Args:
        model: a trained task model (with `.encoder`).
        build_model: `f(bert_config) -> task model` of the same kind (e.g. `model_dir.build_task_model` with the
            task's facts), for the models with one layer fewer.
        batches: an iterable of `(inputs, labels)` from the task's dev data.

    Returns:
        a list: the loss increase of removing layer i, per layer (higher = more important).
    """
    batches = list(batches)
    loss, weights = model.default_loss(), model.default_loss_weights()

    def mean_loss(candidate):
        return float(np.mean([float(task_loss(loss, weights, y, candidate(x, training=False))) for x, y in batches]))

    base = mean_loss(model)
    depth = model.encoder.config.num_hidden_layers  # ALBERT: repetitions of its shared blocks
    scores = []
    for left_out in range(depth):
        keep = [i for i in range(depth) if i != left_out]
        candidate = build_model(student_config(model.encoder.config, keep))
        copy_teacher_weights(candidate, model, keep)
        scores.append(mean_loss(candidate) - base)
    return scores


def layers_to_keep(scores, num_layers):
    """The `num_layers` most important layer indices (ascending), from `layer_importance`'s scores."""
    if not 1 <= num_layers <= len(scores):
        raise ValueError(f"--keep_layers={num_layers} must be between 1 and the model's {len(scores)} layers")
    return sorted(int(i) for i in np.argsort(scores)[::-1][:num_layers])


def head_importance(model, batches):
    """Each attention head's importance on `batches` (Michel et al. 2019, "Are Sixteen Heads Really Better than
    One?"): |dL/dg_h|, the task loss's gradient with respect to a gate g_h = 1 on the head's context, summed over
    batches (the absolute value taken per batch, as their code and transformers' bertology example do; not
    normalised per layer).

    The gate is not built into the model: a head's context reaches the loss only through its slice of the output
    projection, so dL/dg_h = sum(W_o[h] * dL/dW_o[h]) over that slice (W_o the `(heads, head_size, hidden)` output
    kernel), which one backward pass per batch gives for every head at once.

    Args:
        model: a task model (with `.encoder`; not ALBERT, whose layers share heads).
        batches: an iterable of `(inputs, labels)` from the task's dev data.

    Returns:
        a list per layer of a list per original head index: its importance (higher = more important), or None for
        a head the model has already pruned.
    """
    import tensorflow as tf

    config = model.encoder.config
    if config.family.shared_layers:
        raise ValueError("head importance is per layer; an albert encoder's layers share their heads")
    loss, weights = model.default_loss(), model.default_loss_weights()
    kernels = [block.attention.output_dense.kernel for block in model.encoder.transformer_layers]
    totals = [np.zeros(int(kernel.shape[0])) for kernel in kernels]  # per kept head
    for inputs, labels in batches:
        with tf.GradientTape() as tape:
            batch_loss = task_loss(loss, weights, labels, model(inputs, training=False))
        gradients = tape.gradient(batch_loss, [kernel.value for kernel in kernels])
        for total, kernel, gradient in zip(totals, kernels, gradients):
            gate_gradient = np.sum(np.asarray(kernel.numpy(), np.float64) * np.asarray(gradient, np.float64),
                                   axis=(1, 2))  # (kept heads,)
            total += np.abs(gate_gradient)
    scores = []
    for layer, total in enumerate(totals):
        row = [None] * config.num_attention_heads
        for slot, head in enumerate(config.kept_heads(layer)):
            row[head] = float(total[slot])
        scores.append(row)
    return scores


def heads_to_prune(scores, fraction):
    """The least important heads, `round(fraction * heads)` of the heads `scores` rates, keeping at least one head in
    every layer.

    Args:
        scores: `head_importance`'s list per layer of per-head scores (None: already pruned, not counted).
        fraction: the share of the rated heads to remove, in [0, 1).

    Returns:
        `{layer: sorted head indices}` to remove (layers losing none are left out).
    """
    if not 0.0 <= fraction < 1.0:
        raise ValueError(f"--prune_heads={fraction} must be in [0, 1)")
    rated = [(score, layer, head) for layer, row in enumerate(scores) for head, score in enumerate(row)
             if score is not None]
    count = int(round(fraction * len(rated)))
    left = [sum(score is not None for score in row) for row in scores]
    removed = {}
    for score, layer, head in sorted(rated):
        if count == 0:
            break
        if left[layer] > 1:
            removed.setdefault(layer, []).append(head)
            left[layer] -= 1
            count -= 1
    return {layer: sorted(heads) for layer, heads in sorted(removed.items())}


def pruned_config(config, heads_to_remove):
    """`config` with `heads_to_remove` (`{layer: head indices}`, original indices) added to its `pruned_heads`."""
    heads_to_remove = {int(layer): list(heads) for layer, heads in heads_to_remove.items()}
    merged = {}
    for layer in sorted(set(config.pruned_heads) | set(heads_to_remove)):
        merged[layer] = sorted(set(config.pruned_heads.get(layer, ())) | set(heads_to_remove.get(layer, ())))
    return dataclasses.replace(config, pruned_heads=merged)


def prune_heads(model, heads_to_remove, build_model):
    """A copy of `model` without the attention heads `heads_to_remove`, smaller and faster.

    As transformers' `PreTrainedModel.prune_heads`: heads are named by their original indices, heads already pruned
    are ignored, and the new config's `pruned_heads` holds both.

    Args:
        model: a task model (with `.encoder`).
        heads_to_remove: `{layer: [head, ...]}`.
        build_model: `f(bert_config) -> task model` of the same kind (e.g. `model_dir.build_task_model` with the
            task's facts).

    Returns:
        a new task model of the pruned config: the kept heads' query/key/value and output-projection slices, every
        other weight (embeddings, feed-forward, LayerNorms, pooler, head) copied unchanged.

    Raises:
        ValueError: a layer or head out of range, a layer left with no head, or an ALBERT model (from the config).
    """
    config = pruned_config(model.encoder.config, heads_to_remove)
    pruned = build_model(config)
    copy_teacher_weights(pruned, model, list(range(config.num_hidden_layers)))
    return pruned


def prunable_kernels(model):
    """The dense kernels of the encoder's transformer layers, by path (attention projections and feed-forward;
    embeddings, LayerNorms, biases, the pooler and the head are left dense)."""
    return {v.path: v for layer in model.encoder.transformer_layers for v in layer.weights
            if v.path.endswith("kernel")}


def polynomial_sparsity(step, total_steps, target, begin_step=0, end_fraction=0.75, power=3):
    """The sparsity at `step` of a schedule rising from 0 at `begin_step` to `target` at `end_fraction` of the
    run, as (1 - progress)^power (Zhu & Gupta 2017, tensorflow-model-optimization's PolynomialDecay)."""
    end_step = max(begin_step + 1, int(total_steps * end_fraction))
    progress = min(max((step - begin_step) / (end_step - begin_step), 0.0), 1.0)
    return target * (1.0 - (1.0 - progress) ** power)


def prune_by_magnitude(kernels, sparsity):
    """Zeroes the `sparsity` share of smallest-magnitude weights of each kernel (per layer, as TF-MOT)."""
    for variable in kernels.values():
        values = keras.ops.convert_to_numpy(variable)
        count = int(round(values.size * sparsity))
        if count == 0:
            continue
        threshold = np.partition(np.abs(values).ravel(), count - 1)[count - 1]
        variable.assign(np.where(np.abs(values) <= threshold, 0.0, values).astype(values.dtype))


def sparsity_report(model):
    """`{kernel path: share of zeros}` of the prunable kernels, and `"total"` over them all."""
    kernels = prunable_kernels(model)
    report, zeros, size = {}, 0, 0
    for path, variable in kernels.items():
        values = keras.ops.convert_to_numpy(variable)
        report[path] = float(np.mean(values == 0))
        zeros, size = zeros + int(np.sum(values == 0)), size + values.size
    report["total"] = zeros / max(size, 1)
    return report


class MagnitudePruning(keras.callbacks.Callback):
    """Prunes the model's transformer kernels by magnitude every `every` steps along `polynomial_sparsity`, and to
    the full `target` at the end of training (pruned weights may regrow between two prunings; the last one fixes
    them at zero).

    Args:
        model_to_prune: the task model whose kernels are pruned (e.g. a `Distiller`'s student).
        total_steps: the run's optimizer steps.
        target: the final sparsity, in [0, 1).
        every: steps between prunings.
    """

    def __init__(self, model_to_prune, total_steps, target, every=50):
        super().__init__()
        if not 0.0 <= target < 1.0:
            raise ValueError(f"--target_sparsity={target} must be in [0, 1)")
        self.kernels = prunable_kernels(model_to_prune)
        self.total_steps, self.target, self.every = total_steps, target, every

    def on_train_batch_end(self, batch, logs=None):
        step = int(self.model.optimizer.iterations.numpy())
        if step % self.every == 0:
            prune_by_magnitude(self.kernels, polynomial_sparsity(step, self.total_steps, self.target))

    def on_train_end(self, logs=None):
        prune_by_magnitude(self.kernels, self.target)
