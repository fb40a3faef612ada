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
