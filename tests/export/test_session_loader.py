"""Every kind of export, float32 and bfloat16 (and the int8 classifier), answers in TF Serving's session-based loader.

TF Serving's C++ loader and `saved_model_cli run` restore the variables through the SavedModel's saver and run
the signatures in a session; `tf.saved_model.load` does neither, so the other export tests cannot see an export
the server refuses. Here each export is loaded that way in a fresh process (tensorflow and tensorflow_text only),
every warm-up request it ships is replayed (TF Serving does so at load and refuses the version if one fails),
raw text goes to `serving_default`, and every answer must equal `tf.saved_model.load`'s.
"""

import os

import numpy as np
import pytest

from session_loader import session_and_eager_outputs
from tests.tasks.forked_commands import run_python

pytestmark = pytest.mark.slow
KINDS = ("classifier", "regression", "tagger", "squad_v1", "squad_v2", "masked_lm", "multiple_choice", "encoder")
PRECISIONS = ("float32", "bfloat16")
# Sent to every text input of serving_default: a masked sentence, an empty string, non-ASCII text (multiple choice
# reads the [batch] `choices` as one choice per question; "" is a missing one), then plain sentences.
RAW_TEXTS = ["Peter Blackburn flew to [MASK] on Monday.", "", "naïve café in 東京: what did it cost?",
             "the cat sat on the mat", "a very good film", "naïve café in Berlin"]


@pytest.fixture(scope="module")
def answers(export_of, tmp_path_factory):
    """Each kind exported in each precision, answered by both loaders: "<kind>/<precision>" -> answers."""
    exports = {f"{kind}_{precision}": export_of(kind, precision) for kind in KINDS for precision in PRECISIONS}
    exports["classifier_int8"] = export_of("classifier", "int8")  # `export.saved_model --precision=int8`
    out_dir = tmp_path_factory.mktemp("session_loader")
    return {"exports": exports, "answers": session_and_eager_outputs(out_dir, exports, RAW_TEXTS)}


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("kind", KINDS)
def test_every_warmup_request_and_raw_text_is_answered_as_tf_saved_model_load_answers(answers, kind, precision):
    result = answers["answers"][f"{kind}_{precision}"]
    assert result["errors"] == []
    # One warm-up request per signature (the encoder's `embed` too; the tagger's long text on serving_default), then
    # the raw texts.
    extra = {"encoder": ["embed"], "tagger": ["serving_default"]}.get(kind, [])
    signatures = ["serving_default", "serve_examples", "serve_tokens"] + extra
    assert result["requests"] == signatures + ["serving_default"]
    outputs = result["outputs"]
    session_keys = sorted(k for k in outputs if "/session/" in k)
    assert session_keys == sorted(k.replace("/eager/", "/session/") for k in outputs if "/eager/" in k)
    for request in range(len(result["requests"])):
        assert any(k.startswith(f"{request}/") for k in session_keys)  # every request gave outputs
    assert outputs[f"{len(signatures)}/serving_default/session/truncated"].shape == (len(RAW_TEXTS),)
    for key in session_keys:
        session, eager = outputs[key], outputs[key.replace("/session/", "/eager/")]
        assert session.dtype == eager.dtype and session.shape == eager.shape, key
        if np.issubdtype(session.dtype, np.floating):
            np.testing.assert_allclose(session, eager, rtol=1e-5, atol=1e-5, err_msg=key)
        else:
            np.testing.assert_array_equal(session, eager, err_msg=key)


def test_int8_answers_are_close_to_float_ones_in_the_session_loader(answers):
    assert answers["answers"]["classifier_int8"]["errors"] == []
    float_out = answers["answers"]["classifier_float32"]["outputs"]
    int8_out = answers["answers"]["classifier_int8"]["outputs"]
    keys = [k for k in float_out if k.endswith("/session/probabilities")]
    assert keys, sorted(float_out)
    # A tiny random model (embedding rows of std 0.5+) is far more sensitive than a trained one: on a fine-tuned
    # all-MiniLM-L6-v2 (MRPC, 256 dev pairs) the int8 probabilities differ by 0.009 on average, 255/256 labels agree.
    for key in keys:
        np.testing.assert_allclose(int8_out[key], float_out[key], atol=0.06)


def test_every_export_has_one_variable_handle_per_saved_variable(answers):
    """Keras 3 variables saved as part of Keras layers export two handles each: the signatures read one and
    the saver restores the other, which is what made TF Serving answer "Could not find variable"."""
    import tensorflow as tf
    from tensorflow.python.saved_model import loader_impl

    for name, version_dir in answers["exports"].items():
        graph_def = loader_impl.parse_saved_model(version_dir).meta_graphs[0].graph_def
        # String handles hold the asset paths (assigned by the init op, not restored): left aside.
        handles = {node.attr["shared_name"].s.decode() for node in graph_def.node
                   if node.op == "VarHandleOp" and node.attr["dtype"].type != tf.string.as_datatype_enum}
        saved = tf.train.list_variables(os.path.join(version_dir, "variables", "variables"))
        variables = [key for key, _ in saved if key.endswith("/.ATTRIBUTES/VARIABLE_VALUE")]
        assert len(handles) == len(variables) > 0, name


def test_saved_model_cli_runs_the_classifier_with_tf_text_ops_loaded(answers):
    """docs/export.md's `saved_model_cli run` command (the CLI itself, with tensorflow_text imported first)."""
    command = ["-c", "import sys, tensorflow_text; from tensorflow.python.tools.saved_model_cli "
               "import main; sys.argv[0] = 'saved_model_cli'; main()",
               "run", "--dir", answers["exports"]["classifier_float32"], "--tag_set", "serve",
               "--signature_def", "serving_default",
               "--input_exprs", 'text=["The cat sat on the mat."];text_b=["A cat was sitting on a mat."]']
    result = run_python(command, timeout=300)  # a child of a process that imported TensorFlow alone
    assert result.returncode == 0, result.stderr[-3000:]
    for key in ("label", "label_id", "logits", "probabilities", "truncated"):
        assert f"Result for output key {key}:" in result.stdout
