"""`export.saved_model --precision=int8`: Keras int8 weights, and no warnings from the export or `export.predict`.
(Its answers in TF Serving's session loader, close to the float export's: tests/export/test_session_loader.py.)"""

import json
import os
import pathlib
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow
REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]


def _variables_bytes(version_dir):
    folder = os.path.join(version_dir, "variables")
    return sum(os.path.getsize(os.path.join(folder, name)) for name in os.listdir(folder))


@pytest.fixture(scope="module")
def cli_export(classifier_dir, tmp_path_factory):
    """`python -m export.saved_model --precision=int8` of the tiny classifier: (the finished process, export_dir)."""
    export_dir = tmp_path_factory.mktemp("int8")
    exported = subprocess.run([sys.executable, "-m", "export.saved_model", f"--model_dir={classifier_dir}",
                               f"--export_dir={export_dir}", "--precision=int8"], cwd=REPO_ROOT, capture_output=True,
                              text=True, timeout=600)
    return exported, export_dir


def test_int8_weights_are_int8(cli_export, export_of):
    import tensorflow as tf

    exported, export_dir = cli_export
    assert exported.returncode == 0, exported.stderr[-3000:]
    int8_dir = str(export_dir / "1")
    int8 = [dtype for dtype in tf.train.load_checkpoint(os.path.join(int8_dir, "variables", "variables"))
            .get_variable_to_dtype_map().values() if dtype == tf.int8]
    # per layer: query, key, value, attention output, intermediate, output; pooler, head; the word-piece table
    assert len(int8) == 2 * 6 + 2 + 1
    assert _variables_bytes(int8_dir) < _variables_bytes(export_of("classifier"))


def test_int8_export_and_predict_print_no_autograph_or_custom_gradient_warnings(cli_export):
    """Before: 36 lines of AutoGraph "could not transform <lambda>" from the export, and one "unsaved custom
    gradients" warning per function of Keras' int8 layers from `export.predict`."""
    exported, export_dir = cli_export
    assert exported.returncode == 0, exported.stderr[-3000:]
    assert "could not transform" not in exported.stderr + exported.stdout
    assert "AutoGraph" not in exported.stderr + exported.stdout
    predicted = subprocess.run([sys.executable, "-m", "export.predict", f"--export_dir={export_dir}", "the cat sat",
                                "a cat was sitting"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)
    assert predicted.returncode == 0, predicted.stderr[-3000:]
    assert "custom gradients" not in predicted.stderr + predicted.stdout
    assert json.loads(predicted.stdout.strip().splitlines()[-1])["label"] in ("0", "1")
