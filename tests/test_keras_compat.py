"""official_bert.keras_compat: one test per use of a private Keras/TensorFlow name, failing when the workaround
stops working on an upgraded Keras or TensorFlow, and the warning about versions it was not checked on."""

import json
import os
import pathlib
import re
import textwrap
import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf

from official_bert import keras_compat
from official_bert.optimization import AdamW
from tests.tasks.forked_commands import run_python

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]


def _run_script(script):
    """Runs `script` in a child of a process that imported TensorFlow alone (`run_python`; TensorFlow backend,
    every UserWarning shown); returns (stdout, stderr)."""
    env = dict(os.environ, KERAS_BACKEND="tensorflow")
    code = 'import warnings\nwarnings.simplefilter("always", UserWarning)\n' + textwrap.dedent(script)
    process = run_python(["-c", code], env=env, timeout=600)
    assert process.returncode == 0, process.stderr[-3000:]
    return process.stdout, process.stderr


# --- versions ------------------------------------------------------------------------------------------------------


def test_checked_versions_are_the_ones_setup_py_pins():
    setup = (REPO_ROOT / "setup.py").read_text()
    for package, version in keras_compat.CHECKED_VERSIONS.items():
        assert re.search(rf'"{package}=={re.escape(version)}"', setup), (package, version)


def test_no_warning_on_the_checked_versions():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        keras_compat.warn_if_unchecked_versions()
    assert keras_compat.unchecked_versions_message() is None


def test_a_version_not_checked_is_named_with_the_checked_ones(monkeypatch):
    installed = {"keras": "3.99.0", "tensorflow": keras_compat.CHECKED_VERSIONS["tensorflow"]}
    monkeypatch.setattr(keras_compat, "installed_version", installed.get)
    with pytest.warns(UserWarning) as record:
        keras_compat.warn_if_unchecked_versions()
    assert len(record) == 1
    message = str(record[0].message)
    assert "keras 3.99.0 is installed" in message
    assert f"keras {keras_compat.CHECKED_VERSIONS['keras']}" in message and "tensorflow" in message


def test_an_absent_package_is_not_reported(monkeypatch):
    monkeypatch.setattr(keras_compat, "installed_version",
                        lambda package: None if package == "tensorflow" else keras_compat.CHECKED_VERSIONS[package])
    assert keras_compat.unchecked_versions_message() is None


@pytest.mark.slow
def test_the_library_warns_once_per_process_on_an_unchecked_keras():
    _, stderr = _run_script("""
        import importlib.metadata
        real_version = importlib.metadata.version
        importlib.metadata.version = lambda name: "3.99.0" if name == "keras" else real_version(name)
        import official_bert.layers.embeddings, official_bert.optimization, official_bert.compression.distiller
        import export.tflite
    """)
    assert stderr.count("keras 3.99.0 is installed") == 1, stderr[-3000:]


# --- layers: replacing a built layer's variables ---------------------------------------------------------------------


class _Table(keras.layers.Layer):
    def build(self, input_shape):
        self.table = self.add_weight(shape=(3, 2), name="table")


def test_a_built_layer_swaps_a_variable_and_is_locked_again():
    layer = _Table()
    layer.build(None)
    with keras_compat.unlocked_state(layer):
        keras_compat.untrack_variable(layer, layer.table)
        layer.table = None
        layer.codes = layer.add_weight(shape=(3,), name="codes", dtype="int8", initializer="zeros", trainable=False)
    assert [w.name for w in layer.weights] == ["codes"] and not layer.trainable_weights
    with pytest.raises(ValueError):
        layer.add_weight(shape=(1,), name="late")


# --- models: the TF trainer's symbolic build -------------------------------------------------------------------------


@pytest.mark.slow
def test_the_symbolic_build_under_a_strategy_reads_the_specs_or_one_replicas_share_of_the_first_batch():
    """A dataset of plain specs builds the compiled loss and metrics from the functional model's symbolic outputs
    (Keras' `_symbolic_build`, which would call the whole model, is not called); a distributed dataset builds from
    one replica's share of the first batch (with Keras' own build the sample batch is the replicas' mean, rows 0-1
    averaged with rows 2-3)."""
    stdout, _ = _run_script("""
        import json
        import keras, numpy as np, tensorflow as tf
        tf.config.set_logical_device_configuration(tf.config.list_physical_devices("CPU")[0],
                                                   [tf.config.LogicalDeviceConfiguration()] * 2)
        from official_bert.models.task_model import TaskModel

        seen = []

        class Probe(TaskModel):
            def default_loss(self):
                return "mse"

            def _symbolic_build(self, iterator=None, data_batch=None):
                seen.append(np.asarray(data_batch[0]["a"]).tolist())
                return super()._symbolic_build(iterator=iterator, data_batch=data_batch)

        strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
        x = {"a": np.arange(8, dtype="float32").reshape(4, 2)}
        dataset = tf.data.Dataset.from_tensor_slices((x, np.zeros((4, 1), "float32"))).batch(4)
        for data in (dataset, strategy.experimental_distribute_dataset(dataset)):  # specs; per-replica specs
            with strategy.scope():
                inputs = {"a": keras.Input((2,), name="a")}
                model = Probe(inputs, keras.layers.Dense(1)(inputs["a"]))
                model.compile(optimizer="sgd", metrics=["mae"])
            history = model.fit(data, epochs=1, verbose=0).history
            seen.append([sorted(history), model._compile_loss.built, model._compile_metrics.built])
        print(json.dumps(seen))
    """)
    assert json.loads(stdout.strip().splitlines()[-1]) == [
        [["loss", "mae"], True, True],  # built from the model's outputs: no `_symbolic_build` call
        [[0.0, 1.0], [2.0, 3.0]], [["loss", "mae"], True, True]]


def test_a_fit_without_a_strategy_traces_the_train_step_once(monkeypatch):
    """Without a distribution strategy Keras creates the optimizer's variables in the first trace of the train step,
    and TensorFlow then traces the step a second time; `build_optimizer` creates them before (if the second half
    fails, Keras builds the optimizer before tracing on its own and `build_optimizer` can go)."""
    from official_bert.models.task_model import TaskModel

    class Probe(TaskModel):
        def default_loss(self):
            return "mse"

    def traces_of_a_fit():
        inputs = {"a": keras.Input((2,), name="a")}
        model = Probe(inputs, keras.layers.Dense(1)(inputs["a"]))
        model.compile(optimizer="adam")
        traced = []
        train_step = model.train_step
        model.train_step = lambda data: (traced.append(data), train_step(data))[1]
        model.fit({"a": np.ones((4, 2), "float32")}, np.zeros((4, 1), "float32"), batch_size=2, verbose=0)
        assert model.optimizer.built
        return len(traced)

    assert traces_of_a_fit() == 1
    monkeypatch.setattr(keras_compat, "build_optimizer", lambda model: None)
    assert traces_of_a_fit() == 2


def test_compile_without_loss_or_metrics_is_told_apart():
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    assert not keras_compat.has_compiled_loss_or_metrics(model)
    model.compile(optimizer="sgd")
    assert not keras_compat.has_compiled_loss_or_metrics(model)
    model.compile(optimizer="sgd", loss="mse")
    assert keras_compat.has_compiled_loss_or_metrics(model)
    model.compile(optimizer="sgd", metrics=["mae"])
    assert keras_compat.has_compiled_loss_or_metrics(model)


# --- optimizers ------------------------------------------------------------------------------------------------------


def _one_step(optimizer, variable, loss):
    with tf.GradientTape() as tape:
        value = loss(variable)
    optimizer.apply_gradients([(tape.gradient(value, variable.value), variable)])


def test_repeated_lookups_give_adam_the_summed_gradient_clipped_by_its_global_norm():
    # Keras' TF optimizer hands the gradient to `_all_reduce_sum_gradients`, where ours densifies and clips it; Adam's
    # moments (read through `adam_moments`) then hold the dense sum: v = (1 - beta_2) * sum**2, not the sum of squares.
    table = keras.Variable(np.ones((3, 2), "float32"), name="word_embeddings")
    optimizer = AdamW(learning_rate=0.0, weight_decay=0.0, clip_norm=1.0)
    _one_step(optimizer, table, lambda t: tf.reduce_sum(tf.gather(t, [0, 0, 0, 2]) * [[3.0, 0.0]]))
    summed = np.array([[9.0, 0.0], [0.0, 0.0], [3.0, 0.0]])  # rows 0 (three lookups) and 2; norm sqrt(90)
    clipped = summed / np.sqrt(90.0)
    m, v = keras_compat.adam_moments(optimizer, table)
    np.testing.assert_allclose(m.numpy(), (1 - optimizer.beta_1) * clipped, rtol=1e-6)
    np.testing.assert_allclose(v.numpy(), (1 - optimizer.beta_2) * clipped ** 2, rtol=1e-4)


def test_weight_decay_happens_once_and_skips_excluded_variables():
    kernel = keras.Variable(np.full((2,), 2.0, "float32"), name="kernel")
    bias = keras.Variable(np.full((2,), 2.0, "float32"), name="bias")
    optimizer = AdamW(learning_rate=0.5, weight_decay=0.1)
    optimizer.exclude_from_weight_decay(var_names=["bias"])
    optimizer.build([kernel, bias])
    assert keras_compat.uses_weight_decay(optimizer, kernel) and not keras_compat.uses_weight_decay(optimizer, bias)
    optimizer.apply_gradients([(tf.zeros(2), kernel), (tf.zeros(2), bias)])  # a zero gradient moves nothing
    np.testing.assert_allclose(kernel.numpy(), 2.0 * (1 - 0.5 * 0.1), rtol=1e-6)  # (1 - lr * wd), not squared
    np.testing.assert_allclose(bias.numpy(), 2.0)


def test_keras_calls_the_clip_hook_and_keras_own_clipping_still_runs_in_it():
    calls = []

    class Probe(AdamW):
        def _clip_gradients(self, grads):
            calls.append(len(grads))
            return super()._clip_gradients(grads)

    variable = keras.Variable(np.zeros((2,), "float32"))
    optimizer = Probe(learning_rate=0.0, weight_decay=0.0, global_clipnorm=1.0)
    optimizer.apply_gradients([(tf.constant([3.0, 4.0]), variable)])
    assert calls == [1]
    m, _ = keras_compat.adam_moments(optimizer, variable)
    np.testing.assert_allclose(m.numpy(), (1 - optimizer.beta_1) * np.array([0.6, 0.8]), rtol=1e-6)


# --- functional models -----------------------------------------------------------------------------------------------


def test_outputs_of_the_first_call_of_a_sub_model_are_its_outputs_in_the_outer_graph():
    inner_input = keras.Input((3,))
    hidden = keras.layers.Dense(4, name="hidden")(inner_input)
    inner = keras.Model(inner_input, {"hidden": hidden, "out": keras.layers.Dense(2, name="out")(hidden)})
    outer_input = keras.Input((3,))
    outer = keras.Model(outer_input, keras.layers.Dense(1)(inner(keras.layers.Dense(3)(outer_input))["out"]))
    states = keras_compat.outputs_of_first_call(inner)
    assert set(states) == {"hidden", "out"}
    probe = keras.Model(outer.input, states["hidden"])
    x = np.random.default_rng(0).normal(size=(2, 3)).astype("float32")
    np.testing.assert_allclose(probe(x).numpy(), inner(outer.layers[1](x))["hidden"].numpy(), rtol=1e-6)


# --- TensorFlow: TFLite conversion and SavedModel protos ------------------------------------------------------------


class _TwoDense(tf.Module):
    def __init__(self):
        super().__init__()
        rng = np.random.default_rng(0)
        self.w1 = tf.Variable(rng.normal(size=(8, 16)).astype("float32"))
        self.w2 = tf.Variable(rng.normal(size=(16, 4)).astype("float32"))

    @tf.function(input_signature=[tf.TensorSpec([1, 8], tf.float32)])
    def __call__(self, x):
        return {"y": tf.matmul(tf.nn.relu(tf.matmul(x, self.w1)), self.w2)}


def test_frozen_variables_are_constants_with_the_same_outputs():
    module = _TwoDense()
    function = module.__call__.get_concrete_function()
    frozen = keras_compat.freeze_variables(function)
    x = tf.ones([1, 8])
    assert not frozen.variables and not frozen.captured_inputs
    (y,) = frozen(x)  # the outputs, flattened
    np.testing.assert_allclose(y.numpy(), function(x)["y"].numpy(), rtol=1e-6)


def _fully_connected_weight_types(model):
    schema = keras_compat.tflite_schema()
    parsed = schema.ModelT.InitFromPackedBuf(model, 0)
    fully_connected = [i for i, code in enumerate(parsed.operatorCodes)
                       if max(code.builtinCode, code.deprecatedBuiltinCode) == schema.BuiltinOperator.FULLY_CONNECTED]
    return [subgraph.tensors[op.inputs[1]].type for subgraph in parsed.subgraphs for op in subgraph.operators
            if op.opcodeIndex in fully_connected]


@pytest.mark.parametrize("denylisted_ops", [[], ["FULLY_CONNECTED"]])
def test_calibrate_only_then_quantize_all_but_the_denylisted_ops(denylisted_ops):
    module = _TwoDense()
    converter = tf.lite.TFLiteConverter.from_concrete_functions([module.__call__.get_concrete_function()], module)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    rng = np.random.default_rng(1)
    converter.representative_dataset = lambda: ([rng.normal(size=(1, 8)).astype("float32")] for _ in range(4))
    keras_compat.calibrate_only(converter, [])
    calibrated = converter.convert()
    schema = keras_compat.tflite_schema()
    assert _fully_connected_weight_types(calibrated) == [schema.TensorType.FLOAT32] * 2  # calibrated, not quantized
    quantized = keras_compat.quantize_calibrated(calibrated, denylisted_ops=denylisted_ops, denylisted_nodes=[])
    expected = schema.TensorType.FLOAT32 if denylisted_ops else schema.TensorType.INT8
    assert _fully_connected_weight_types(quantized) == [expected] * 2


def test_a_converter_option_that_a_release_renamed_is_an_error_not_ignored():
    class Renamed:
        target_spec = type("TargetSpec", (), {})()

    with pytest.raises(RuntimeError, match="_experimental_custom_op_registerers"):
        keras_compat.calibrate_only(Renamed(), [])


def test_a_saved_model_pb_parses_into_the_proto(tmp_path):
    module = _TwoDense()
    tf.saved_model.save(module, str(tmp_path), signatures={"serving_default": module.__call__})
    saved_model = keras_compat.saved_model_proto()
    saved_model.ParseFromString((tmp_path / "saved_model.pb").read_bytes())
    assert "serving_default" in saved_model.meta_graphs[0].signature_def
