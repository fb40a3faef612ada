"""export.tflite: the exported signatures in LiteRT with tf-text's kernels only; float outputs equal the SavedModel's."""

import os

import numpy as np
import pytest
import tensorflow as tf

from export import tflite
from lite_outputs import assert_lite_equals_saved
from tests.tasks.forked_commands import run_forked

pytestmark = pytest.mark.slow
litert = pytest.importorskip("ai_edge_litert.interpreter")
TEXTS = ["Peter Blackburn flew to Brussels on Monday.", "", "Zürich, 東京 and the café " * 12,
         "EU rejects German call to boycott British lamb ."]
SECOND = ["He went to Belgium.", "Nothing here", "short", ""]


# Command lines the CLI must refuse in one line (flags with {tmp}: the case's folder, {export}: the classifier's
# version directory; --saved_model_dir defaults to {tmp}/export, which does not exist), each: (flags, message).
BAD_COMMAND_LINES = {
    "proc": (["--output=/proc/model.tflite"], "--output=/proc/model.tflite cannot be written: No such file or "
             "directory (the folder /proc takes no new files)"),
    "file": (["--output={tmp}/notes.txt/model.tflite"],
             "--output={tmp}/notes.txt/model.tflite cannot be written: {tmp}/notes.txt is a file, not a folder"),
    "exists": (["--output={tmp}/notes.txt"], "--output={tmp}/notes.txt already exists; name a new file, or pass "
               "--overwrite to replace it"),
    "utf8": (["--output={tmp}/model.tflite", "--quantize=full_int8", "--representative_file={tmp}/texts.txt"],
             "{tmp}/texts.txt:2: not UTF-8 text (byte 0xe9 at column 4); save the file as UTF-8"),
    "missing": (["--output={tmp}/model.tflite"], "no such export directory: {tmp}/export"),
    "no_export": (["--saved_model_dir={tmp}", "--output={tmp}/model.tflite"],
                  "{tmp}: no saved_model.pb and no numeric version directory (an export of python -m "
                  "export.saved_model)"),
    "fields": (["--saved_model_dir={export}", "--output={tmp}/model.tflite", "--quantize=full_int8",
                "--representative_file={tmp}/pairs.txt"],
               "{tmp}/pairs.txt:3: 1 text(s), but the signature takes 2 (text, text_b); a line holds one text, or a "
               "pair as two tab-separated fields or 'text_a ||| text_b'"),
}


@pytest.fixture(scope="module")
def cli_runs(exports, tmp_path_factory):
    """`python -m export.tflite` command lines, as children of one TensorFlow import: "convert" (the classifier's
    serving_default, float32, from its export directory: the latest version) and each of BAD_COMMAND_LINES.
    name -> (CompletedProcess, its folder)."""
    root = tmp_path_factory.mktemp("lite")
    folders = {name: root / name for name in ["convert", *BAD_COMMAND_LINES]}
    commands = [("export.tflite", [f"--saved_model_dir={os.path.dirname(exports['classifier'])}",
                                   f"--output={folders['convert'] / 'mrpc.tflite'}", "--quantize=none"])]
    for name, (flags, _) in BAD_COMMAND_LINES.items():
        tmp = folders[name]
        tmp.mkdir()
        (tmp / "texts.txt").write_bytes(b"A sentence.\ncaf\xe9\n")
        (tmp / "notes.txt").write_text("mine\n")
        (tmp / "pairs.txt").write_text("A ||| B\n\nC\n")
        flags = [flag.format(tmp=tmp, export=exports["classifier"]) for flag in flags]
        default = [] if any(flag.startswith("--saved_model_dir=") for flag in flags) else [
            f"--saved_model_dir={tmp / 'export'}"]
        commands.append(("export.tflite", default + flags))
    folders["convert"].mkdir()
    results = run_forked(commands, root)
    return {name: (result, folders[name]) for name, result in zip(folders, results)}


@pytest.fixture(scope="module")
def classifier_lite(cli_runs):
    """The classifier's serving_default converted by the CLI, float32."""
    result, folder = cli_runs["convert"]
    assert result.returncode == 0, result.stderr[-3000:]
    return (folder / "mrpc.tflite").read_bytes()


def test_classifier_float_model_equals_the_saved_model(saved_of, classifier_lite):
    assert tflite.custom_ops(classifier_lite) == {"FastBertNormalize", "FastWordpieceTokenizeWithOffsets"}
    interpreter = tflite.interpreter(classifier_lite)
    assert interpreter.get_signature_list()["serving_default"]["inputs"] == ["text", "text_b"]
    lite = interpreter.get_signature_runner("serving_default")(text=np.array(TEXTS, object),
                                                              text_b=np.array(SECOND, object))
    assert set(lite) == {"logits", "probabilities", "label", "label_id", "truncated"}  # strings work too
    saved = saved_of("classifier").signatures["serving_default"](text=tf.constant(TEXTS),
                                                                 text_b=tf.constant(SECOND))
    assert_lite_equals_saved(lite, saved)
    assert lite["truncated"].tolist() == [False, False, True, False]


def test_one_classifier_interpreter_answers_requests_of_every_length(saved_of, classifier_lite):
    # The TFLite function runs each request at its longest text: LiteRT resizes the model's tensors at every call,
    # so a short request after a long one (and the reverse) must answer as the SavedModel does.
    runner = tflite.interpreter(classifier_lite).get_signature_runner("serving_default")
    serve = saved_of("classifier").signatures["serving_default"]
    for rows in ([0], [2, 3], [3], [1], [0, 1, 2, 3], [1, 3]):
        texts, second = [TEXTS[i] for i in rows], [SECOND[i] for i in rows]
        lite = runner(text=np.array(texts, object), text_b=np.array(second, object))
        assert_lite_equals_saved(lite, serve(text=tf.constant(texts), text_b=tf.constant(second)))


def test_tagger_float_model_equals_the_saved_model_with_byte_offsets(exports, saved_of, ner_dir):
    from official_bert.text import text_preprocessor

    model = tflite.convert(exports["tagger"], "serving_default", "none")
    lite = tflite.interpreter(model).get_signature_runner("serving_default")(text=np.array(TEXTS, object))
    saved = saved_of("tagger").signatures["serving_default"](text=tf.constant(TEXTS))
    # TFLite has no string slicing: the entities come with byte offsets only.
    assert set(saved) - set(lite) == {"entity_text", "entity_start", "entity_end", "word_start", "word_end"}
    assert_lite_equals_saved(lite, saved)  # logits too, 0 at padding in both
    assert lite["num_entities"].sum() > 0
    inputs, _ = text_preprocessor(str(ner_dir / "vocab.txt"), True, 48).pack([tf.constant(TEXTS)])
    assert not lite["logits"][inputs["input_mask"].numpy() == 0].any()
    no_words = tflite.interpreter(model).get_signature_runner("serving_default")(text=np.array(["", " "], object))
    assert no_words["num_words"].tolist() == [0, 0] and no_words["word_labels"].shape == (2, 0)


@pytest.mark.parametrize("quantize", ["float16", "dynamic_int8"])
def test_quantized_classifier_runs_smaller(exports, classifier_lite, quantize):
    model = tflite.convert(exports["classifier"], "serving_default", quantize)
    assert tflite.custom_ops(model) == {"FastBertNormalize", "FastWordpieceTokenizeWithOffsets"}
    assert len(model) < len(classifier_lite)
    lite = tflite.interpreter(model).get_signature_runner("serving_default")(
        text=np.array(TEXTS, object), text_b=np.array(SECOND, object))
    reference = tflite.interpreter(classifier_lite).get_signature_runner("serving_default")(
        text=np.array(TEXTS, object), text_b=np.array(SECOND, object))
    np.testing.assert_allclose(lite["probabilities"].sum(-1), 1.0, atol=1e-5)
    # Quantized weights move the logits a little, not the tokenization.
    np.testing.assert_allclose(lite["logits"], reference["logits"], atol=0.25)
    np.testing.assert_array_equal(lite["truncated"], reference["truncated"])


def test_serve_tokens_converts_and_serve_examples_is_refused(exports, saved_of):
    model = tflite.convert(exports["classifier"], "serve_tokens", "none")
    assert tflite.custom_ops(model) == set()
    pad = [0] * 58  # to the export's sequence length, 64
    inputs = {"input_word_ids": np.array([[101, 7592, 102, 2088, 102, 0] + pad], np.int32),
              "input_mask": np.array([[1, 1, 1, 1, 1, 0] + pad], np.int32),
              "input_type_ids": np.array([[0, 0, 0, 1, 1, 0] + pad], np.int32)}
    lite = tflite.interpreter(model).get_signature_runner("serve_tokens")(**inputs)
    saved = saved_of("classifier").signatures["serve_tokens"](**{k: tf.constant(v) for k, v in inputs.items()})
    assert_lite_equals_saved(lite, saved)
    with pytest.raises(ValueError, match="ParseExampleV2"):
        tflite.convert(exports["classifier"], "serve_examples", "none")


def test_a_bfloat16_export_is_refused_with_the_way_out(export_of, saved_of):
    version_dir = export_of("classifier", "bfloat16")
    loaded = saved_of("classifier", "bfloat16").signatures["serving_default"]
    assert set(loaded(text=tf.constant(["A cat."]), text_b=tf.constant(["A dog."]))) >= {"logits", "label"}
    with pytest.raises(ValueError, match="bfloat16 weights .* convert a float32 export"):
        tflite.convert(version_dir, "serving_default", "none")


@pytest.mark.parametrize("quantize", ["none", "dynamic_int8"])
def test_an_int8_export_is_refused_with_the_way_out(export_of, quantize):
    with pytest.raises(ValueError, match=r"int8 weights \(export.saved_model --precision=int8\).* convert a float32"):
        tflite.convert(export_of("classifier", "int8"), "serving_default", quantize)


def test_multiple_choice_float_model_equals_the_saved_model_with_missing_choices(export_of, saved_of):
    version_dir = export_of("multiple_choice")  # sequence length 48
    signatures = saved_of("multiple_choice").signatures
    model = tflite.convert(version_dir, "serving_default", "none")
    assert tflite.custom_ops(model) == {"FastBertNormalize", "FastWordpieceTokenizeWithOffsets"}
    interpreter = tflite.interpreter(model)
    assert sorted(interpreter.get_signature_list()["serving_default"]["inputs"]) == ["choices", "context"]
    contexts = np.array(TEXTS[:3], object)
    choices = np.array([SECOND[:3], ["He went to Belgium.", "", ""], ["Zürich, 東京 and the café " * 6, "a", "b"]],
                       object)  # "": a missing choice
    lite = interpreter.get_signature_runner("serving_default")(context=contexts, choices=choices)
    assert set(lite) == {"label_id", "scores", "probabilities", "truncated"}
    saved = signatures["serving_default"](context=tf.constant(contexts.astype(str)),
                                          choices=tf.constant(choices.astype(str)))
    assert_lite_equals_saved(lite, saved)
    assert (lite["probabilities"][1, 1:] == 0).all() and lite["label_id"][1] == 0
    assert lite["truncated"].tolist() == [False, False, True]

    tokens = tflite.convert(version_dir, "serve_tokens", "none")
    assert tflite.custom_ops(tokens) == set()
    pad = [0] * 42  # to the export's sequence length, 48
    row = lambda *values: list(values) + pad  # noqa: E731
    inputs = {"input_word_ids": np.array([[row(101, 7592, 102, 2088, 102, 0), row(101, 7592, 102, 2157, 102, 0)]],
                                         np.int32),
              "input_mask": np.array([[row(1, 1, 1, 1, 1, 0), row(0, 0, 0, 0, 0, 0)]], np.int32),  # one missing
              "input_type_ids": np.array([[row(0, 0, 0, 1, 1, 0), row(0, 0, 0, 0, 0, 0)]], np.int32)}
    lite = tflite.interpreter(tokens).get_signature_runner("serve_tokens")(**inputs)
    saved = signatures["serve_tokens"](**{k: tf.constant(v) for k, v in inputs.items()})
    assert_lite_equals_saved(lite, saved)
    assert lite["scores"][0, 1] == -1e9


@pytest.mark.parametrize("name", [
    pytest.param("proc", marks=pytest.mark.skipif(not os.path.isfile("/proc/version"), reason="needs Linux's /proc")),
    "file", "exists", "utf8", "missing", "no_export", "fields"])
def test_a_bad_export_representative_file_or_output_is_one_line_naming_it(cli_runs, name):
    result, tmp_path = cli_runs[name]
    message = BAD_COMMAND_LINES[name][1]
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr[-3000:]
    assert result.stderr.strip().splitlines()[-1] == "error: " + message.format(tmp=tmp_path)
    assert not (tmp_path / "model.tflite").exists() and (tmp_path / "notes.txt").read_text() == "mine\n"
