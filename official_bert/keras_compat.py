"""Every use of a private Keras or TensorFlow name in the library, each behind one small function.

Each function says why it needs the private name and what to do if a release breaks it; all were checked on the
versions in `CHECKED_VERSIONS`, and `tests/test_keras_compat.py` has a test per function that fails when the
workaround stops working (run it first after upgrading Keras or TensorFlow). At import this module warns once
when the installed Keras or TensorFlow is not a checked version.

Three Keras hooks are private methods that Keras calls on our subclasses, so their overrides must keep Keras'
names and stay methods of those classes; their bodies call in here: `keras.Model._maybe_symbolic_build`
(`models/task_model.py`, `models/pretrainer.py`, `models/feature_tagger.py`) and the optimizer's
`_all_reduce_sum_gradients`, `_clip_gradients`, `_apply_weight_decay` (`optimization.py`). Nothing here imports
TensorFlow at import time (the layers and AdamW also run on Keras' torch and JAX backends).
"""

import contextlib
import importlib.metadata
import warnings

import keras

# The releases every workaround below was checked on (the pins of setup.py).
CHECKED_VERSIONS = {"keras": "3.15.1", "tensorflow": "2.21.0"}


def installed_version(package):
    """The installed version of `package` (a distribution name), or None if it is not installed."""
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def unchecked_versions_message():
    """One sentence naming the installed Keras/TensorFlow versions that differ from `CHECKED_VERSIONS`, or None
    if all match (a package that is not installed, e.g. TensorFlow under Keras' torch backend, is not checked)."""
    differing = {}
    for package, checked in CHECKED_VERSIONS.items():
        installed = installed_version(package)
        if installed is not None and installed != checked:
            differing[package] = installed
    if not differing:
        return None
    installed = ", ".join(f"{package} {version}" for package, version in differing.items())
    checked = ", ".join(f"{package} {version}" for package, version in CHECKED_VERSIONS.items())
    return (f"official_bert was checked on {checked}, but {installed} is installed: its uses of private Keras and "
            "TensorFlow names (official_bert/keras_compat.py) may no longer work; run "
            "tests/test_keras_compat.py, or install the versions setup.py pins")


def warn_if_unchecked_versions():
    """Warns (UserWarning) when the installed Keras or TensorFlow differs from `CHECKED_VERSIONS`."""
    message = unchecked_versions_message()
    if message:
        warnings.warn(message, UserWarning, stacklevel=2)


# --- Layers: replacing a built layer's variables (layers/embeddings.py, quantize_word_table) ----------------------
# Why: a built Keras layer locks its state tracker, so `add_weight` raises, and a variable it tracks stays in
# `weights` (and in saved files) after the attribute holding it is reassigned. Keras' own `Embedding.quantize`
# does the same (`_tracker.unlock()`, `_untrack_variable`, `_tracker.lock()`). Checked on Keras 3.15.1.
# If it breaks: build the int8 table in a new layer instead of converting the built one in place.


@contextlib.contextmanager
def unlocked_state(layer):
    """Lets the built `layer` add weights (and untrack variables) inside the block; locks it again after."""
    layer._tracker.unlock()
    try:
        yield
    finally:
        layer._tracker.lock()


def untrack_variable(layer, variable):
    """Removes `variable` from `layer`'s weights (inside `unlocked_state(layer)`)."""
    layer._untrack_variable(variable)


# --- Models: the TF trainer's symbolic build (models/task_model.py, models/pretrainer.py) -------------------------
# Why: on the TensorFlow backend, `fit`/`evaluate` call `Model._maybe_symbolic_build`, which builds the compiled
# loss and metrics from a sample batch after `strategy.reduce("MEAN", batch)` across replicas; under
# MultiWorkerMirroredStrategy that reduce fails on a dict of inputs. Only the batch's shapes and dtypes matter, so
# they are read from the dataset's `element_spec` where it holds plain `tf.TensorSpec`s (one device a worker): Keras
# would open an iterator for the sample batch, start the input pipeline and drop it (0.4 s of a 4.8 s tiny
# fine-tuning run). A distributed dataset on several local devices (`PerReplicaSpec`s) gives one replica's share of
# the first batch instead. A built functional model's outputs are known without running it: its symbolic outputs
# (`_outputs_struct`) build the compiled loss and metrics as Keras' `_symbolic_build` would from a symbolic call of
# the whole model (a trace of every layer: 0.2 to 0.5 s of a tiny run).
# Uses `Model._distribute_strategy` (set when the model was made under a strategy's scope), the epoch iterator's
# `data_adapter` and `(first_step, last_step, batches)` items, `_maybe_symbolic_build`, `_symbolic_build`'s steps
# (`_compute_loss`, `_post_build`), `_flatten_layers`, `_outputs_struct` and `_compile_loss`/`_compile_metrics`.
# Checked on Keras 3.15.1, TensorFlow 2.21.0. If it breaks: read the new `_maybe_symbolic_build` and
# `_symbolic_build` in keras/src/backend/tensorflow/trainer.py and keras/src/trainers/trainer.py;
# tests/test_keras_compat.py builds both ways, and tests/tasks/test_run_*.py train under MultiWorkerMirroredStrategy.


def symbolic_build(model, parent, iterator=None, data_batch=None):
    """Runs Keras' own symbolic build, then builds the optimizer of a built `model` (`build_optimizer`); `parent`
    is `super()` in the model's `_maybe_symbolic_build` override."""
    parent._maybe_symbolic_build(iterator=iterator, data_batch=data_batch)
    build_optimizer(model)


def build_optimizer(model):
    """Creates the compiled optimizer's variables now, under the model's strategy, for a built `model` (none
    otherwise). Keras does this in its symbolic build under a distribution strategy; without one it defers it to
    the first trace of the train step, and a `tf.function` that creates variables on its first call is traced
    twice: a 1-layer, hidden-32 classifier's first `fit` (4 steps, 2 CPU cores) took 7.6 to 8.2 s, 4.2 s with
    the optimizer built first (see tests/test_keras_compat.py)."""
    if model.optimizer is not None and not model.optimizer.built and model.built:
        with model.distribute_strategy.scope():
            model.optimizer.build(model.trainable_variables)


def symbolic_build_from_local_batch(model, parent, iterator=None, data_batch=None):
    """Keras' symbolic build of `model` from the dataset's element specs, or else this replica's share of the first
    batch, rather than the batch reduced across replicas.

    Args:
        model: the model being fit or evaluated.
        parent: `super()` in the model's `_maybe_symbolic_build` override.
        iterator: Keras' epoch iterator, or None.
        data_batch: a sample batch Keras passes instead of an iterator, or None.
    """
    if iterator is not None and data_batch is None and model._distribute_strategy is not None:
        import tensorflow as tf

        spec = iterator.data_adapter.get_tf_dataset().element_spec
        if all(isinstance(leaf, tf.TensorSpec) for leaf in keras.tree.flatten(spec)):
            if _built_from_functional_outputs(model, spec):
                return None
            return symbolic_build(model, parent, data_batch=spec)  # Keras reads each leaf's shape, dtype
        local = model.distribute_strategy.experimental_local_results
        for _, _, batches in iterator:
            data_batch = keras.tree.map_structure(
                lambda v: local(v)[0] if isinstance(v, tf.distribute.DistributedValues) else v, next(batches))
            break
        iterator = None
    symbolic_build(model, parent, iterator=iterator, data_batch=data_batch)


def _built_from_functional_outputs(model, data_spec):
    """Keras' `_symbolic_build` of a built functional `model` with its symbolic outputs as the predictions: builds
    the compiled metrics and loss from `data_spec` (`tf.TensorSpec`s of a batch) and the optimizer. Returns False,
    building nothing, for a model that is not functional or not built."""
    outputs = getattr(model, "_outputs_struct", None)
    if outputs is None or not all(layer.built for layer in model._flatten_layers()):
        return False
    from keras.src import backend

    def symbolic(spec):
        return None if spec is None else keras.KerasTensor(spec.shape, backend.standardize_dtype(spec.dtype))

    with model.distribute_strategy.scope():
        x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(keras.tree.map_structure(symbolic, data_spec))
        y_pred = keras.tree.map_structure(lambda output: keras.KerasTensor(output.shape, output.dtype), outputs)
        if model._compile_metrics is not None and not model._compile_metrics.built:
            backend.compute_output_spec(model.compute_metrics, x, y, y_pred, sample_weight=sample_weight)
        if model._compile_loss is not None and not model._compile_loss.built:
            backend.compute_output_spec(model._compute_loss, x, y, y_pred, sample_weight=sample_weight,
                                        training=False)
        build_optimizer(model)
        model._post_build()
    return True


def has_compiled_loss_or_metrics(model):
    """Whether `model.compile` was given a loss or metrics (Keras then builds them at the symbolic build)."""
    return model._compile_loss is not None or model._compile_metrics is not None


# --- Optimizers: the gradient and weight-decay hooks and Adam's slots (optimization.py) ---------------------------
# Why: BERT's recipe sums the replicas' gradients (densified) before clipping them, and our AdamW updates each
# large variable in one fused kernel and the small ones together. Keras has no public hook for these: its TF
# optimizer sums gradients in `_all_reduce_sum_gradients` and updates each variable in `_backend_update_step`,
# every backend clips in `_clip_gradients` and decays in `_apply_weight_decay`
# (`_use_weight_decay` says which variables), and Adam keeps its moments in `_momentums`/`_velocities`, indexed
# by `_get_variable_index`. Checked on Keras 3.15.1, TensorFlow 2.21.0. If it breaks: read `apply` in
# keras/src/optimizers/base_optimizer.py and keras/src/backend/tensorflow/optimizer.py for the new hooks;
# tests/test_optimization.py compares the updates with PyTorch's AdamW.


def all_reduce_sum_gradients(parent, grads_and_vars):
    """Keras' sum of `(gradient, variable)` pairs across replicas; `parent` is `super()` in the override."""
    return parent._all_reduce_sum_gradients(grads_and_vars)


def backend_update_step(parent, grads, trainable_variables, learning_rate):
    """Keras' update of each of `trainable_variables` (after its weight decay; before its constraints, EMA and the
    step count); `parent` is `super()` in the override."""
    parent._backend_update_step(grads, trainable_variables, learning_rate)


def clip_gradients(parent, grads):
    """Keras' clipping (`clipnorm`, `global_clipnorm`, ...) of `grads`; `parent` is `super()` in the override."""
    return parent._clip_gradients(grads)


def apply_weight_decay(parent, variables):
    """Keras' decoupled weight decay of `variables`; `parent` is `super()` in the override."""
    parent._apply_weight_decay(variables)


def uses_weight_decay(optimizer, variable):
    """Whether `optimizer` decays `variable` (not excluded by `exclude_from_weight_decay`)."""
    return optimizer._use_weight_decay(variable)


def adam_moments(optimizer, variable):
    """`(m, v)`: the first- and second-moment slot variables that Keras' Adam-family `optimizer` keeps for
    `variable`."""
    index = optimizer._get_variable_index(variable)
    return optimizer._momentums[index], optimizer._velocities[index]


# --- Functional models: the tensors of one call of a sub-model (compression/distiller.py) ------------------------
# Why: the distiller reads the encoder's per-layer states from the task model's graph; Keras 3 has no public way
# to get the outputs of a given call of a layer (`layer.output` of a functional model is its own graph's).
# Checked on Keras 3.15.1. If it breaks: build the distiller's model from the encoder's outputs explicitly.


def outputs_of_first_call(layer):
    """The output tensors of the first call of `layer` in a functional graph, structured as `layer.output`."""
    node = layer._inbound_nodes[0]
    return keras.tree.pack_sequence_as(layer.output, node.outputs)


# --- TensorFlow: TFLite conversion and SavedModel protos (export/tflite.py, export/ops.py) ------------------------
# Why: TFLite's converter keeps Keras 3 variables as uninitialised VAR_HANDLEs, so the graph's variables are
# frozen first (`convert_variables_to_constants_v2`, not in TF's public API); full_int8 quantizes selected ops
# only, which the public converter cannot: it calibrates with tf-text's kernels registered and stops there
# (`_experimental_custom_op_registerers`, `_experimental_calibrate_only`, as tf.lite.experimental's
# QuantizationDebugger does), then `mlir_quantize` quantizes with a deny list. The .tflite flatbuffer is read
# with TFLite's generated schema and the saved_model.pb with its proto, neither in TF's public API.
# Checked on TensorFlow 2.21.0. If it breaks: tests/export/test_tflite*.py fail; look for the names in
# tensorflow/lite/python/lite.py and convert.py of the new release.


def freeze_variables(concrete_function):
    """`concrete_function` with its variables turned into constants (a function of the same inputs)."""
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

    return convert_variables_to_constants_v2(concrete_function)


def _set_existing(target, name, value):
    """`setattr` that fails, rather than silently adding an attribute, when a release renamed `name`."""
    if not hasattr(target, name):
        raise RuntimeError(f"{type(target).__name__} has no attribute {name!r} in this TensorFlow release; "
                           "see official_bert/keras_compat.py")
    setattr(target, name, value)


def calibrate_only(converter, custom_op_registerers):
    """Makes `converter.convert()` return the float model with calibrated ranges (quantized by nothing), running
    its representative dataset with `custom_op_registerers` (e.g. tf-text's `SELECT_TFTEXT_OPS`) registered."""
    _set_existing(converter.target_spec, "_experimental_custom_op_registerers", list(custom_op_registerers))
    _set_existing(converter, "_experimental_calibrate_only", True)


def quantize_calibrated(calibrated, denylisted_ops, denylisted_nodes):
    """A calibrated float .tflite (bytes, from `calibrate_only`) quantized to int8, except the op types in
    `denylisted_ops` and the ops writing the tensors named in `denylisted_nodes`."""
    from tensorflow.lite.python import convert as lite_convert

    return lite_convert.mlir_quantize(calibrated, denylisted_ops=denylisted_ops, denylisted_nodes=denylisted_nodes)


def tflite_schema():
    """TFLite's generated flatbuffer schema module (`ModelT`, `BuiltinOperator`, ...)."""
    from tensorflow.lite.python import schema_py_generated

    return schema_py_generated


def saved_model_proto():
    """A new, empty `SavedModel` protocol buffer (parse a saved_model.pb into it)."""
    from tensorflow.core.protobuf import saved_model_pb2

    return saved_model_pb2.SavedModel()


warn_if_unchecked_versions()
