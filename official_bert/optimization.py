"""Optimizers for BERT fine-tuning and pre-training: AdamW or LAMB with linear warmup then linear decay."""

import functools
import math

import keras

from official_bert import keras_compat

# Variables never weight-decayed: LayerNorm scales/offsets and every bias (as in BERT and HF).
NO_DECAY_NAMES = ["bias", "gamma", "beta"]

# On TensorFlow, a variable of this many elements or more takes its AdamW update as one XLA kernel; a smaller one op
# by op. Below it the kernel is no faster (one update of 16,384 floats: 0.47 ms fused, 0.38 ms op by op; of 262,144:
# 1.0 against 1.6 ms; 2 CPU cores), and each of its shapes costs a compile (0.1-0.2 s) in every new process: a
# hidden-32 BERT classifier has 12 shapes, one of them (the word embeddings) this large.
FUSED_UPDATE_MIN_SIZE = 65_536

# On TensorFlow with one replica, the variables below FUSED_UPDATE_MIN_SIZE take one AdamW update per dtype and
# weight decay, over their values concatenated, instead of one each (biases and LayerNorms: about 20 graph ops less
# each). The values are the same (the update is elementwise); False: one update each (tests compare the two).
GROUP_SMALL_UPDATES = True


@keras.saving.register_keras_serializable(package="official_bert")
class WarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """Learning rate rising linearly from 0 to `peak` over `warmup_steps`, then falling linearly to 0.

    Args:
        peak: the learning rate reached at the end of warmup.
        total_steps: the step at which the rate reaches 0.
        warmup_steps: length of the warmup.
    """

    def __init__(self, peak, total_steps, warmup_steps):
        self.peak = float(peak)
        self.total_steps = int(total_steps)
        self.warmup_steps = int(warmup_steps)

    def __call__(self, step):
        step = keras.ops.cast(step, "float32")
        warmup = step / max(self.warmup_steps, 1)
        decay = (self.total_steps - step) / max(self.total_steps - self.warmup_steps, 1)
        scale = keras.ops.where(step < self.warmup_steps, warmup, decay)
        return self.peak * keras.ops.clip(scale, 0.0, 1.0)

    def get_config(self):
        return {"peak": self.peak, "total_steps": self.total_steps, "warmup_steps": self.warmup_steps}


class _DenseClippedGradients:
    """Mixin for a Keras optimizer: densifies embedding gradients, then clips the gradient of the whole batch,
    summed over the replicas, by its global norm.

    Dense: TensorFlow gives an embedding lookup's gradient as `tf.IndexedSlices` with one row per looked-up
    token, a row id repeated as often as the token occurs. Keras' Adam squares such a gradient occurrence by
    occurrence (`square(IndexedSlices)` squares the values, so `v` gets the sum of squares, not the square of
    the sum), and `tf.clip_by_global_norm` likewise measures the occurrences; so the word and token-type
    tables (gathered; the position table is sliced, its gradient already dense) did not get Adam's update
    (on SQuAD windows the token-type table moved 12x as far per step as in PyTorch). Summed into one dense
    gradient per table, the update is PyTorch's and Google BERT's (both train embeddings with dense gradients,
    so every row's moments decay each step).

    Clipped: Keras' `global_clipnorm` clips each replica's share of the gradient before the shares are summed,
    so under a `tf.distribute` strategy with several replicas the update differs from one device's for the
    same batch. BERT's recipe, like the Model Garden's explicit all-reduce, clips the summed gradient; this
    does that (on one device the two are the same). On the JAX and torch backends (one replica; their gradients
    are dense) the clipping happens in `_clip_gradients`, at the same point of the update.

    `_all_reduce_sum_gradients` and `_clip_gradients` are private hooks that Keras' optimizers call, so they keep
    Keras' names here; they reach Keras' own through `keras_compat`.

    Args:
        clip_norm: the global norm (None: no clipping).
    """

    def __init__(self, *args, clip_norm=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.clip_norm = clip_norm

    def _all_reduce_sum_gradients(self, grads_and_vars):
        import tensorflow as tf

        grads_and_vars = [(tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g, v)
                          for g, v in keras_compat.all_reduce_sum_gradients(super(), grads_and_vars)]
        present = [i for i, (g, _) in enumerate(grads_and_vars) if g is not None]
        if self.clip_norm is None or not present:
            return grads_and_vars
        clipped, _ = tf.clip_by_global_norm([grads_and_vars[i][0] for i in present], self.clip_norm)
        for i, grad in zip(present, clipped):
            grads_and_vars[i] = (grad, grads_and_vars[i][1])
        return grads_and_vars

    def _clip_gradients(self, grads):
        grads = keras_compat.clip_gradients(super(), grads)
        if self.clip_norm is None or keras.backend.backend() == "tensorflow":
            return grads  # TensorFlow clips the replicas' sum in `_all_reduce_sum_gradients`
        ops = keras.ops
        present = [g for g in grads if g is not None]
        if not present:
            return grads
        global_norm = ops.sqrt(sum(ops.sum(ops.square(ops.cast(g, "float32"))) for g in present))
        scale = self.clip_norm / ops.maximum(global_norm, self.clip_norm)  # as tf.clip_by_global_norm
        return [None if g is None else g * ops.cast(scale, g.dtype) for g in grads]

    def get_config(self):
        return {**super().get_config(), "clip_norm": self.clip_norm}


@keras.saving.register_keras_serializable(package="official_bert")
class AdamW(_DenseClippedGradients, keras.optimizers.AdamW):
    """`keras.optimizers.AdamW` with dense, summed-then-clipped gradients (see `_DenseClippedGradients`) and
    epsilon where PyTorch's `AdamW` (and so Hugging Face's recipes) put it.

    Keras adds epsilon to `sqrt(v)` before the bias correction, which makes the effective epsilon
    `epsilon / sqrt(1 - beta_2**t)`: 32x larger at the first step. This adds it after, as PyTorch:
    `variable -= lr * m_hat / (sqrt(v_hat) + epsilon)` with `m_hat`, `v_hat` the bias-corrected moments.
    Decoupled weight decay (`variable -= lr * weight_decay * variable`) is Keras' own, as PyTorch's.
    """

    def _apply_weight_decay(self, variables):  # a private hook Keras' `apply` calls (see `keras_compat`)
        if keras.backend.backend() == "tensorflow":
            return  # in `update_step`: TensorFlow decays each variable inside its fused update
        keras_compat.apply_weight_decay(super(), variables)

    def update_step(self, gradient, variable, learning_rate):
        if self.amsgrad:
            raise ValueError("official_bert.optimization.AdamW does not implement amsgrad")
        if keras.backend.backend() == "tensorflow":
            return self._fused_tensorflow_update(gradient, variable, learning_rate)
        return self._keras_ops_update(gradient, variable, learning_rate)

    def _keras_ops_update(self, gradient, variable, learning_rate):
        """The Adam update (without weight decay) in Keras ops (`_adamw_values` with keep = 1), assigned op by op."""
        ops = keras.ops
        dtype = variable.dtype
        step = ops.cast(self.iterations + 1, dtype)
        beta_1, beta_2 = ops.cast(self.beta_1, dtype), ops.cast(self.beta_2, dtype)
        m, v = keras_compat.adam_moments(self, variable)
        values = _adamw_values(variable, m, v, ops.cast(gradient, dtype), ops.cast(learning_rate, dtype),
                               ops.ones([], dtype), 1 - beta_1, 1 - beta_2, 1 - ops.power(beta_1, step),
                               1 - ops.power(beta_2, step), ops.cast(self.epsilon, dtype))
        for target, value in zip((variable, m, v), values):
            self.assign(target, value)

    def _fused_tensorflow_update(self, gradient, variable, learning_rate):
        """`update_step` after Keras' weight decay (`variable -= lr * weight_decay * variable`, where
        `_use_weight_decay`): one XLA kernel for a variable of `FUSED_UPDATE_MIN_SIZE` elements or more (op by op,
        TensorFlow makes 15-20 passes over it, its moments and its gradient), the same formula op by op for a
        smaller one, left for `_backend_update_step` to update with the others of its dtype and decay where it
        groups them. Variables of a `tf.distribute` strategy take Keras' op-by-op path."""
        import tensorflow as tf

        m, v = (slot.value for slot in keras_compat.adam_moments(self, variable))
        dtype = variable.dtype
        scalars = self._step_scalars(learning_rate, dtype)
        decays = bool(self.weight_decay and keras_compat.uses_weight_decay(self, variable))
        if any(isinstance(t, tf.distribute.DistributedValues) for t in (variable, m, v)):
            if decays:
                variable.assign_sub(variable * scalars["decay"])
            return self._keras_ops_update(gradient, variable, scalars["learning_rate"])
        update = (variable, m, v, tf.cast(gradient, dtype))
        small = math.prod(variable.shape) < FUSED_UPDATE_MIN_SIZE
        if small and "_small_updates" in self.__dict__:
            self.__dict__["_small_updates"].setdefault((dtype, decays), []).append(update)
        else:
            _update_together([update], scalars, decays, _adamw_values if small else _fused_adamw_kernel())

    def _backend_update_step(self, grads, trainable_variables, learning_rate):
        """Keras' update of each variable (TensorFlow's hook: see `keras_compat.backend_update_step`); with one
        replica and `GROUP_SMALL_UPDATES`, the small variables' updates wait until the others are made, then
        each dtype and decay of them updates together (`_update_together`)."""
        if "_scalars_of_step" in self.__dict__ and GROUP_SMALL_UPDATES:  # `apply` sets it for one replica
            self.__dict__["_small_updates"] = {}  # plain, untracked: (dtype, decays) -> updates, for this call only
        try:
            keras_compat.backend_update_step(super(), grads, trainable_variables, learning_rate)
            for (dtype, decays), updates in self.__dict__.get("_small_updates", {}).items():
                _update_together(updates, self._step_scalars(learning_rate, dtype), decays, _adamw_values)
        finally:
            self.__dict__.pop("_small_updates", None)

    def apply(self, grads, trainable_variables=None):
        """`keras.optimizers.AdamW.apply`; on TensorFlow with one replica, the fused updates of one call share their
        scalar inputs (`_step_scalars`). Several replicas call `apply` at once, from threads of their own: each of
        their updates makes its own."""
        if keras.backend.backend() != "tensorflow":
            return super().apply(grads, trainable_variables)
        import tensorflow as tf

        if tf.distribute.get_strategy().num_replicas_in_sync > 1:
            return super().apply(grads, trainable_variables)
        self.__dict__["_scalars_of_step"] = {}  # plain, untracked: dtype -> scalars, for this call only
        try:
            return super().apply(grads, trainable_variables)
        finally:
            self.__dict__.pop("_scalars_of_step", None)

    def _step_scalars(self, learning_rate, dtype):
        """The update's scalar inputs in `dtype` for this step's `learning_rate` (see `_adamw_values`): made once an
        `apply`, not once a variable (made in each variable's update, a hidden-32 BERT classifier's train step, 25
        variables, had 2,696 ops instead of 2,420)."""
        import tensorflow as tf

        cache = self.__dict__.get("_scalars_of_step", {})
        if dtype not in cache:
            rate = tf.cast(learning_rate, dtype)
            step = tf.cast(self.iterations + 1, dtype)
            beta_1, beta_2 = tf.constant(self.beta_1, dtype), tf.constant(self.beta_2, dtype)
            decay = rate * self.weight_decay if self.weight_decay else None
            cache[dtype] = {"learning_rate": rate, "decay": decay, "keep": tf.ones([], dtype),
                            "keep_decayed": None if decay is None else 1 - decay,
                            "m_rate": 1 - beta_1, "v_rate": 1 - beta_2,
                            "m_correction": 1 - tf.pow(beta_1, step), "v_correction": 1 - tf.pow(beta_2, step),
                            "epsilon": tf.constant(self.epsilon, dtype)}
        return cache[dtype]


def _adamw_values(variable, m, v, gradient, learning_rate, keep, m_rate, v_rate, m_correction, v_correction,
                  epsilon):
    """One AdamW step of a variable's value and its moments' (tensors of one shape; the rest scalars of the step):
    `variable *= keep` (keep = 1 - learning_rate * weight_decay, or 1), then PyTorch's Adam update, with `m_rate` =
    1 - beta_1, `v_rate` = 1 - beta_2 and the bias corrections `m_correction` = 1 - beta_1**step, `v_correction`
    = 1 - beta_2**step.

    Returns:
        (the variable's next value, m's, v's).
    """
    m_next = m + (gradient - m) * m_rate  # operators: TensorFlow tensors in the kernel, Keras variables outside
    v_next = v + (gradient * gradient - v) * v_rate
    m_hat = m_next / m_correction
    v_hat = v_next / v_correction
    return variable * keep - learning_rate * m_hat / (keras.ops.sqrt(v_hat) + epsilon), m_next, v_next


def _update_together(updates, scalars, decays, update):
    """One AdamW step of several variables of one dtype and weight decay, as one `update` of their values
    concatenated (flattened), the results split back; a single variable's values go in as they are.

    Args:
        updates: (variable, m, v, gradient) tuples: tf.Variables and the gradient tensor, one shape each.
        scalars: `AdamW._step_scalars` of the step, in their dtype.
        decays: whether they are weight-decayed.
        update: `_adamw_values` or `_fused_adamw_kernel()`.
    """
    import tensorflow as tf

    def flat(tensor):
        return tensor if tensor.shape.rank == 1 else tf.reshape(tensor, [-1])

    def shaped(part, target):  # flat's inverse
        return part if part.shape.rank == len(target.shape) else tf.reshape(part, target.shape)

    def joined(tensors):  # a shape each -> [sum of their sizes]
        return tensors[0] if len(tensors) == 1 else tf.concat([flat(t) for t in tensors], 0)

    variables, ms, vs, gradients = zip(*updates)
    inputs = [joined([t.value() for t in targets]) for targets in (variables, ms, vs)] + [joined(gradients)]
    results = update(*inputs, scalars["learning_rate"], scalars["keep_decayed" if decays else "keep"],
                     scalars["m_rate"], scalars["v_rate"], scalars["m_correction"], scalars["v_correction"],
                     scalars["epsilon"])
    sizes = [math.prod(t.shape) for t in variables]
    for targets, result in zip((variables, ms, vs), results):  # the next values of the variables, m's, v's
        parts = [result] if len(updates) == 1 else tf.split(result, sizes)
        for target, part in zip(targets, parts):
            target.assign(shaped(part, target))


@functools.cache
def _fused_adamw_kernel():
    """`_adamw_values` as one XLA kernel, compiled once per shape. Tensors in and out: a tf.function given the
    variables themselves holds on to the first model's and fails on the next one's."""
    import tensorflow as tf

    return tf.function(_adamw_values, jit_compile=True, reduce_retracing=True, autograph=False)


@keras.saving.register_keras_serializable(package="official_bert")
class Lamb(_DenseClippedGradients, keras.optimizers.Lamb):
    """`keras.optimizers.Lamb` with dense, summed-then-clipped gradients (see `_DenseClippedGradients`)."""


def create_optimizer(learning_rate, total_steps, warmup_steps, optimizer="adamw", weight_decay=0.01,
                     epsilon=1e-6, clip_norm=1.0):
    """Builds the fine-tuning / pre-training optimizer.

    Args:
        learning_rate: peak learning rate.
        total_steps: training steps; the rate decays to 0 there.
        warmup_steps: linear warmup steps.
        optimizer: "adamw" (decoupled weight decay, as BERT and HF) or "lamb".
        weight_decay: decoupled weight decay, skipped for LayerNorm and bias variables.
        epsilon: Adam epsilon (1e-6 as Google BERT; HF's Trainer uses 1e-8).
        clip_norm: global-norm clipping of the gradient of the whole (global) batch (None to disable).
    """
    schedule = WarmupLinearDecay(learning_rate, total_steps, warmup_steps)
    if optimizer == "adamw":
        opt = AdamW(learning_rate=schedule, weight_decay=weight_decay, beta_1=0.9, beta_2=0.999, epsilon=epsilon,
                    clip_norm=clip_norm)
    elif optimizer == "lamb":
        opt = Lamb(learning_rate=schedule, weight_decay=weight_decay, beta_1=0.9, beta_2=0.999, epsilon=epsilon,
                   clip_norm=clip_norm)
    else:
        raise ValueError(f"optimizer must be 'adamw' or 'lamb', got {optimizer!r}")
    opt.exclude_from_weight_decay(var_names=NO_DECAY_NAMES)
    return opt
