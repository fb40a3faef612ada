"""`export.saved_model --precision=int8`: Keras int8 weights, and no warnings from the export or `export.predict`.
(Its answers in TF Serving's session loader, close to the float export's: tests/export/test_session_loader.py.)"""

import json
import os

import pytest

from tests.tasks.forked_commands import run_forked

pytestmark = pytest.mark.slow


def _variables_bytes(version_dir):
    folder = os.path.join(version_dir, "variables")
    return sum(os.path.getsize(os.path.join(folder, name)) for name in os.listdir(folder))


@pytest.fixture(scope="module")
def cli_runs(classifier_dir, tmp_path_factory):
    """`python -m export.saved_model --precision=int8` of the tiny classifier, then `python -m export.predict` on it,
    as children of one TensorFlow import: (export's CompletedProcess, predict's, export_dir)."""
    root = tmp_path_factory.mktemp("int8")
    export_dir = root / "export"
    exported, predicted = run_forked([
        ("export.saved_model", [f"--model_dir={classifier_dir}", f"--export_dir={export_dir}", "--precision=int8"]),
        ("export.predict", [f"--export_dir={export_dir}", "the cat sat", "a cat was sitting"])], root)
    return exported, predicted, export_dir


def test_int8_weights_are_int8(cli_runs, export_of):
    import tensorflow as tf

    exported, _, export_dir = cli_runs
    assert exported.returncode == 0, exported.stderr[-3000:]
    int8_dir = str(export_dir / "1")
    int8 = [dtype for dtype in tf.train.load_checkpoint(os.path.join(int8_dir, "variables", "variables"))
            .get_variable_to_dtype_map().values() if dtype == tf.int8]
    # the layer's query, key, value, attention output, intermediate, output; pooler, head; the word-piece table
    assert len(int8) == 6 + 2 + 1
    assert _variables_bytes(int8_dir) < _variables_bytes(export_of("classifier"))


def test_int8_export_and_predict_print_no_autograph_or_custom_gradient_warnings(cli_runs):
    """Before: 36 lines of AutoGraph "could not transform <lambda>" from the export, and one "unsaved custom
    gradients" warning per function of Keras' int8 layers from `export.predict`."""
    exported, predicted, _ = cli_runs
    assert exported.returncode == 0, exported.stderr[-3000:]
    assert "could not transform" not in exported.stderr + exported.stdout
    assert "AutoGraph" not in exported.stderr + exported.stdout
    assert predicted.returncode == 0, predicted.stderr[-3000:]
    assert "custom gradients" not in predicted.stderr + predicted.stdout
    assert json.loads(predicted.stdout.strip().splitlines()[-1])["label"] in ("0", "1")


def test_quantizing_with_the_heap_frozen_gives_keras_int8_layers_and_leaves_gc_as_it_was():
    """`_quantize` freezes the heap meanwhile (Keras collects garbage once per deleted kernel): the same int8
    kernels as Keras' own `quantize`, the freeze undone after, and a heap the process froze itself left frozen."""
    import gc

    import keras

    def model():
        keras.utils.set_random_seed(1)
        return keras.Sequential([keras.Input((8,)), keras.layers.Dense(16), keras.layers.Dense(4)])

    frozen_by_worker = gc.get_freeze_count() > 0  # tests/conftest.py freezes each worker's heap
    gc.unfreeze()  # this test needs a process that has not frozen its heap, then one that has
    try:
        _check_quantize_freezes_the_heap_meanwhile(model)
    finally:
        if frozen_by_worker:
            gc.collect()
            gc.freeze()


def _check_quantize_freezes_the_heap_meanwhile(model):
    """The checks of the test above, in a process whose heap is not frozen. `model`: () -> a new small model."""
    import gc
    import warnings

    import numpy as np

    from export.saved_model import _heap_frozen, _quantize

    plain, frozen = model(), model()
    # Keras' own quantize; frozen, its collections scan only the objects made since (over a worker's whole heap, 11 s).
    # Freezing changes no value.
    with warnings.catch_warnings(), _heap_frozen():
        warnings.filterwarnings("ignore", message="Layer .* does not have a `quantize` method implemented")
        plain.quantize("int8")
    assert gc.get_freeze_count() == 0
    _quantize(frozen, "int8", word_table=False)
    assert gc.get_freeze_count() == 0
    for a, b in zip(plain.weights, frozen.weights, strict=True):
        assert a.name == b.name and a.dtype == b.dtype
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=a.path)
    assert "int8" in {w.dtype for w in frozen.weights}

    gc.freeze()
    try:
        count = gc.get_freeze_count()
        _quantize(model(), "int8", word_table=False)
        assert gc.get_freeze_count() > 0.9 * count  # not undone (objects freed meanwhile leave the count)
    finally:
        gc.unfreeze()
