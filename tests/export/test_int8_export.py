"""`export.saved_model --precision=int8`: Keras int8 weights, answers close to the float export's, served by TF
Serving's session loader."""

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from session_loader import session_and_eager_outputs

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]

TEXTS = ["the cat sat on the mat", "a very good film", "naïve café in Berlin"]


def _variables_bytes(version_dir):
    folder = os.path.join(version_dir, "variables")
    return sum(os.path.getsize(os.path.join(folder, name)) for name in os.listdir(folder))


@pytest.fixture(scope="module")
def int8_exports(tmp_path_factory, classifier_dir, exports):
    from export.saved_model import export

    int8 = export(str(classifier_dir), str(tmp_path_factory.mktemp("int8")), precision="int8")
    return {"classifier": {"float32": exports["classifier"], "int8": int8}}


def test_int8_answers_are_close_to_float_ones_in_the_session_loader(int8_exports, tmp_path):
    exports = {f"{name}_{precision}": path for name, by_precision in int8_exports.items()
               for precision, path in by_precision.items()}
    answers = session_and_eager_outputs(tmp_path, exports, TEXTS)
    for name, answer in answers.items():
        assert answer["errors"] == [], name
    float_out, int8_out = answers["classifier_float32"]["outputs"], answers["classifier_int8"]["outputs"]
    keys = [k for k in float_out if k.endswith("/session/probabilities")]
    assert keys, sorted(float_out)
    # A tiny random model (embedding rows of std 0.5+) is far more sensitive than a trained one: on a fine-tuned
    # all-MiniLM-L6-v2 (MRPC, 256 dev pairs) the int8 probabilities differ by 0.009 on average, 255/256 labels agree.
    for key in keys:
        np.testing.assert_allclose(int8_out[key], float_out[key], atol=0.06)


def test_int8_weights_are_int8(int8_exports):
    import tensorflow as tf

    by_precision = int8_exports["classifier"]
    int8 = [dtype for dtype in tf.train.load_checkpoint(os.path.join(by_precision["int8"], "variables", "variables"))
            .get_variable_to_dtype_map().values() if dtype == tf.int8]
    # per layer: query, key, value, attention output, intermediate, output; pooler, head; the word-piece table
    assert len(int8) == 2 * 6 + 2 + 1
    assert _variables_bytes(by_precision["int8"]) < _variables_bytes(by_precision["float32"])


def test_int8_export_and_predict_print_no_autograph_or_custom_gradient_warnings(classifier_dir, tmp_path):
    """Before: 36 lines of AutoGraph "could not transform <lambda>" from the export, and one "unsaved custom
    gradients" warning per function of Keras' int8 layers from `export.predict`."""
    exported = subprocess.run([sys.executable, "-m", "export.saved_model", f"--model_dir={classifier_dir}",
                               f"--export_dir={tmp_path}", "--precision=int8"], cwd=REPO_ROOT, capture_output=True,
                              text=True, timeout=600)
    assert exported.returncode == 0, exported.stderr[-3000:]
    assert "could not transform" not in exported.stderr + exported.stdout
    assert "AutoGraph" not in exported.stderr + exported.stdout
    predicted = subprocess.run([sys.executable, "-m", "export.predict", f"--export_dir={tmp_path}", "the cat sat",
                                "a cat was sitting"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)
    assert predicted.returncode == 0, predicted.stderr[-3000:]
    assert "custom gradients" not in predicted.stderr + predicted.stdout
    assert json.loads(predicted.stdout.strip().splitlines()[-1])["label"] in ("0", "1")
