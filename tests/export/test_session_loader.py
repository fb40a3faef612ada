"""Every kind of export, float32 and bfloat16, answers in TF Serving's session-based loader.

TF Serving's C++ loader and `saved_model_cli run` restore the variables through the SavedModel's saver and run
the signatures in a session; `tf.saved_model.load` does neither, so the other export tests cannot see an export
the server refuses. Here each export is loaded that way in a fresh process (tensorflow and tensorflow_text only),
every warm-up request it ships is replayed (TF Serving does so at load and refuses the version if one fails),
raw text goes to `serving_default`, and every answer must equal `tf.saved_model.load`'s.
"""

import os
import subprocess
import sys

import numpy as np
import pytest

from model_dirs import (multiple_choice_dir, pretraining_task_info, squad_task_info, tiny_bert_config, tiny_pretrainer,
                        tiny_span_labeler, write_model_dir)
from session_loader import session_and_eager_outputs

KINDS = ("classifier", "regression", "tagger", "squad_v1", "squad_v2", "masked_lm", "multiple_choice", "encoder")
PRECISIONS = ("float32", "bfloat16")
# Sent to every text input of serving_default: a masked sentence, an empty string, non-ASCII text (multiple choice
# reads the [batch] `choices` as one choice per question; "" is a missing one).
RAW_TEXTS = ["Peter Blackburn flew to [MASK] on Monday.", "", "naïve café in 東京: what did it cost?"]


def _regression_dir(root, vocab_file):
    """An STS-B (regression) model_dir."""
    import keras

    from official_bert import BertEncoder
    from official_bert.models.classifier import BertClassifier

    keras.utils.set_random_seed(3)
    model = BertClassifier(BertEncoder(tiny_bert_config()), 1)
    info = {"task": "STS-B", "label_names": [], "is_regression": True, "num_classes": 1}
    return write_model_dir(root / "stsb", model, info, vocab_file, 32)


def _squad_dir(root, vocab_file, version_2):
    """A SQuAD v1.1 or v2.0 model_dir, 64 pieces a window."""
    info = squad_task_info(version_2, max_query_length=16, max_answer_length=10, null_score_diff_threshold=0.0)
    name = "squad_v2" if version_2 else "squad_v1"
    return write_model_dir(root / name, tiny_span_labeler(8 + version_2, 64), info, vocab_file, 64)


def _masked_lm_dir(root, vocab_file):
    model = tiny_pretrainer(seed=10)
    return write_model_dir(root / "pretraining", model, pretraining_task_info(model.encoder.config), vocab_file, 40)


@pytest.fixture(scope="module")
def answers(classifier_dir, ner_dir, tiny_checkpoint, vocab_file, tmp_path_factory):
    """Each kind exported in each precision, answered by both loaders: "<kind>/<precision>" -> answers."""
    from export.saved_model import export

    root = tmp_path_factory.mktemp("session_loader")
    model_dirs = {"classifier": classifier_dir, "regression": _regression_dir(root, vocab_file), "tagger": ner_dir,
                  "squad_v1": _squad_dir(root, vocab_file, False), "squad_v2": _squad_dir(root, vocab_file, True),
                  "masked_lm": _masked_lm_dir(root, vocab_file),
                  "multiple_choice": multiple_choice_dir(root / "multiple_choice", vocab_file),
                  "encoder": tiny_checkpoint}
    exports = {f"{kind}_{precision}": export(str(model_dirs[kind]), str(root / "exports" / f"{kind}_{precision}"),
                                             precision=precision)
               for kind in KINDS for precision in PRECISIONS}
    out_dir = root / "answers"
    out_dir.mkdir()
    return {"exports": exports, "answers": session_and_eager_outputs(out_dir, exports, RAW_TEXTS)}


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("kind", KINDS)
def test_every_warmup_request_and_raw_text_is_answered_as_tf_saved_model_load_answers(answers, kind, precision):
    result = answers["answers"][f"{kind}_{precision}"]
    assert result["errors"] == []
    # One warm-up request per signature (the encoder's `embed` too), then the raw texts.
    signatures = ["serving_default", "serve_examples", "serve_tokens"] + (["embed"] if kind == "encoder" else [])
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
    command = [sys.executable, "-c", "import sys, tensorflow_text; from tensorflow.python.tools.saved_model_cli "
               "import main; sys.argv[0] = 'saved_model_cli'; main()",
               "run", "--dir", answers["exports"]["classifier_float32"], "--tag_set", "serve",
               "--signature_def", "serving_default",
               "--input_exprs", 'text=["The cat sat on the mat."];text_b=["A cat was sitting on a mat."]']
    result = subprocess.run(command, capture_output=True, text=True, timeout=300,
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert result.returncode == 0, result.stderr[-3000:]
    for key in ("label", "label_id", "logits", "probabilities", "truncated"):
        assert f"Result for output key {key}:" in result.stdout
