"""`export.saved_model --jit_compile`: classifier and tagger exports whose requests without padding run as one XLA
program (their length rounded up to 16 pieces) answer as the plain exports do, TF Serving's session-based loader
runs them and replays their warm-up requests, which cover every compiled length; other exports refuse the flag.
(The encoder's `embed`: tests/export/test_minilm_export.py.)"""

import os

import numpy as np
import pytest
import tensorflow as tf

from export.request_length import XLA_SERVING_LENGTH_MULTIPLE
from export.ops import ALLOWED_OPS, SAVER_OPS, disallowed_ops, saved_model_ops
from export.saved_model import export
from export.warmup import WARMUP_FILE, read_warmup_file
from session_loader import tool_checks

pytestmark = pytest.mark.slow
FIRST = ["a", "the cat sat on the mat", "Peter Blackburn flew to Brussels on Monday to meet the European Commission "
         "about the future of the common agricultural policy"]
SECOND = ["b", "it was a sunny day", "He came back on Friday."]


@pytest.fixture(scope="module")
def compiled(classifier_dir, tmp_path_factory):
    return export(str(classifier_dir), str(tmp_path_factory.mktemp("jit") / "mrpc"), jit_compile=True)


@pytest.fixture(scope="module")
def compiled_tagger(ner_dir, tmp_path_factory):
    return export(str(ner_dir), str(tmp_path_factory.mktemp("jit") / "ner"), jit_compile=True)


@pytest.fixture(scope="module")
def checks(compiled, compiled_tagger):
    """shared/tools/session_loader_check.py on both compiled exports, in one fresh process."""
    return tool_checks([compiled, compiled_tagger])[0]


def _xla_functions(version_dir):
    """Names of the SavedModel's functions that XLA must compile."""
    from tensorflow.core.protobuf import saved_model_pb2

    saved = saved_model_pb2.SavedModel.FromString(open(os.path.join(version_dir, "saved_model.pb"), "rb").read())
    return [function.signature.name for function in saved.meta_graphs[0].graph_def.library.function
            if function.attr["_XlaMustCompile"].b]


def test_compiled_export_answers_as_the_plain_one(compiled, exports):
    assert _xla_functions(compiled) and not _xla_functions(exports["classifier"])
    served, plain = (tf.saved_model.load(path).signatures["serving_default"]
                     for path in (compiled, exports["classifier"]))
    for first, second in zip(FIRST, SECOND):  # one pair a request: no padding, the XLA program
        ours = served(text=tf.constant([first]), text_b=tf.constant([second]))
        reference = plain(text=tf.constant([first]), text_b=tf.constant([second]))
        np.testing.assert_allclose(ours["logits"].numpy(), reference["logits"].numpy(), atol=1e-5, rtol=1e-5)
    batch = dict(text=tf.constant(FIRST), text_b=tf.constant(SECOND))  # padding: the real-token path, as before
    np.testing.assert_allclose(served(**batch)["logits"].numpy(), plain(**batch)["logits"].numpy(), atol=1e-5,
                               rtol=1e-5)


def test_session_loader_runs_it_and_warm_up_compiles_every_length(compiled, checks, classifier_dir):
    from official_bert import model_dir as model_dirs
    from official_bert.text.preprocessing import text_preprocessor

    assert disallowed_ops(saved_model_ops(compiled), ALLOWED_OPS | SAVER_OPS) == set()
    code, printed = checks[compiled]
    assert code == 0 and "FAILED" not in printed, printed[-2000:]

    loaded = model_dirs.load_model_dir(str(classifier_dir))
    preprocessor = text_preprocessor(loaded.vocab_file, loaded.lower_case, loaded.max_seq_length)
    lengths = set()  # the compiled length of every single-pair warm-up request
    for signature, inputs in read_warmup_file(os.path.join(compiled, "assets.extra", WARMUP_FILE)):
        if signature == "serving_default" and len(inputs["text"]) == 1:
            packed, _ = preprocessor.pack([tf.constant(inputs[name].astype(str)) for name in ("text", "text_b")])
            pieces = int(packed["input_mask"].numpy().sum())
            lengths.add(-(-pieces // XLA_SERVING_LENGTH_MULTIPLE) * XLA_SERVING_LENGTH_MULTIPLE)
    assert lengths == set(range(XLA_SERVING_LENGTH_MULTIPLE, loaded.max_seq_length + 1, XLA_SERVING_LENGTH_MULTIPLE))


def test_compiled_tagger_answers_as_the_plain_one(compiled_tagger, checks, exports):
    compiled = compiled_tagger
    assert _xla_functions(compiled)
    served, plain = (tf.saved_model.load(path).signatures["serving_default"] for path in (compiled, exports["tagger"]))
    for text in FIRST + [" ".join(FIRST)]:  # one text a request: the XLA program
        ours, reference = served(text=tf.constant([text])), plain(text=tf.constant([text]))
        np.testing.assert_allclose(ours["logits"].numpy(), reference["logits"].numpy(), atol=1e-5, rtol=1e-5)
        for key in ("word_labels", "entity_type", "entity_start", "entity_end"):
            np.testing.assert_array_equal(ours[key].numpy(), reference[key].numpy())
    code, printed = checks[compiled]
    assert code == 0 and "FAILED" not in printed, printed[-2000:]


def test_other_exports_refuse_it(vocab_file, tmp_path):
    import keras

    from model_dirs import tiny_bert_config, write_model_dir
    from official_bert import BertEncoder
    from official_bert.models import BertSpanLabeler

    keras.utils.set_random_seed(3)
    squad_dir = write_model_dir(tmp_path / "squad", BertSpanLabeler(BertEncoder(tiny_bert_config())),
                                {"task": "squad"}, vocab_file, 64)
    with pytest.raises(ValueError, match="--jit_compile: sequence classifiers and taggers .* is a squad model_dir"):
        export(str(squad_dir), str(tmp_path / "export"), jit_compile=True)
    assert not os.path.exists(tmp_path / "export" / "1")
