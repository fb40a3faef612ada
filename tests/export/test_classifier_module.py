"""Single-sentence and regression classifiers (built in-process), model_dir errors, and the predict CLI."""

import json
import os

import numpy as np
import pytest
from tests.tasks.forked_commands import run_forked
import tensorflow as tf

from export.saved_model import build_module
from model_dirs import tiny_bert_config, write_model_dir

pytestmark = pytest.mark.slow

SST2_TEXTS = ["it 's a charming and often affecting journey . ", "unflinchingly bleak and desperate ", "",
              "the acting , costumes , music , cinematography and sound are all astounding " * 6]


def _classifier_dir(path, task_info, num_outputs, vocab_file, seed):
    import keras

    from official_bert import BertEncoder
    from official_bert.models.classifier import BertClassifier

    keras.utils.set_random_seed(seed)
    model = BertClassifier(BertEncoder(tiny_bert_config()), num_outputs)
    return write_model_dir(path, model, task_info, vocab_file, 24), model


def _packed(vocab_file, texts, seq_length):
    from official_bert.text import text_preprocessor

    return text_preprocessor(vocab_file, True, seq_length).pack([tf.constant(texts)])[0]


def test_single_sentence_classifier_takes_text_only(tmp_path, vocab_file):
    info = {"task": "SST-2", "label_names": ["0", "1"], "is_regression": False, "num_classes": 2}
    model_dir, model = _classifier_dir(tmp_path / "sst2", info, 2, vocab_file, seed=3)
    module = build_module(str(model_dir), str(tmp_path))
    assert list(module.serving_default.input_signature) == [tf.TensorSpec([None], tf.string, name="text")]
    out = module.serving_default(tf.constant(SST2_TEXTS))
    logits = model(_packed(vocab_file, SST2_TEXTS, 24), training=False).numpy()
    np.testing.assert_allclose(out["logits"].numpy(), logits, atol=1e-5, rtol=0)
    assert out["label"].numpy().tolist() == [str(i).encode() for i in logits.argmax(-1)]
    assert out["truncated"].numpy().tolist() == [False, False, False, True]


def test_bfloat16_export_stores_bfloat16_weights_and_answers_as_the_mixed_precision_model(tmp_path, vocab_file):
    import keras

    from official_bert import BertEncoder
    from official_bert.models.classifier import BertClassifier

    info = {"task": "SST-2", "label_names": ["0", "1"], "is_regression": False, "num_classes": 2}
    model_dir, model = _classifier_dir(tmp_path / "sst2", info, 2, vocab_file, seed=3)
    module = build_module(str(model_dir), str(tmp_path), precision="bfloat16")
    dtypes = {v.path: v.dtype for v in module.model.weights}
    assert dtypes["transformer_layer_0/intermediate/kernel"] == "bfloat16"
    assert dtypes["transformer_layer_0/output_layer_norm/gamma"] == "float32"  # LayerNorms stay float32
    assert dtypes["classifier/kernel"] == "float32"  # so do the logits
    keras.config.set_dtype_policy("mixed_bfloat16")
    try:
        mixed = BertClassifier(BertEncoder(tiny_bert_config()), 2)
        mixed.set_weights(model.get_weights())
    finally:
        keras.config.set_dtype_policy("float32")
    out = module.serving_default(tf.constant(SST2_TEXTS))  # its longest text fills all 24 pieces
    # In a graph, as the module runs: grappler's fused matmul kernels round to bf16 in other places than eager ops.
    expected = tf.function(lambda x: mixed(x, training=False))(_packed(vocab_file, SST2_TEXTS, 24)).numpy()
    np.testing.assert_allclose(out["logits"].numpy(), expected, atol=1e-6, rtol=0)
    float32_logits = model(_packed(vocab_file, SST2_TEXTS, 24), training=False).numpy()
    # bf16 rounding, not another model: the logits follow the float32 model's (this tiny model's weights of std 0.5
    # move them by up to a tenth of their range), where another model's would be unrelated to them.
    assert np.corrcoef(out["logits"].numpy().ravel(), float32_logits.ravel())[0, 1] > 0.98
    with pytest.raises(ValueError, match="precision must be one of"):
        build_module(str(model_dir), str(tmp_path), precision="float16")


def test_raw_text_and_its_tflite_form_run_at_the_longest_text(tmp_path, vocab_file):
    info = {"task": "SST-2", "label_names": ["0", "1"], "is_regression": False, "num_classes": 2}
    model_dir, model = _classifier_dir(tmp_path / "sst2", info, 2, vocab_file, seed=5)
    module = build_module(str(model_dir), str(tmp_path))
    ran_at = tf.Variable(0)  # the sequence length of the model's last run, written as it runs

    class RecordingModel:
        def __call__(self, inputs, **kwargs):
            ran_at.assign(tf.shape(inputs["input_word_ids"])[1])
            return model(inputs, **kwargs)  # real_tokens=True: the raw-text graph's branch for batches with padding

    module.model = RecordingModel()  # before the functions' first trace
    short = tf.constant(SST2_TEXTS[:2])
    lengths = list(_packed(vocab_file, SST2_TEXTS[:2], 24)["input_mask"].numpy().sum(axis=1))
    assert lengths == [12, 10]  # [CLS] ... [SEP], of 24
    # The raw-text graph runs at the longest text (both branches: with padding and without), and so does TFLite's.
    served = module.serving_default(short)
    assert ran_at.numpy() == 12
    module.serving_default(short[1:])
    assert ran_at.numpy() == 10
    lite = module.tflite_serving_default(short)
    assert ran_at.numpy() == 12
    assert module.tflite_serving_default is not module.serving_default
    logits = model(_packed(vocab_file, SST2_TEXTS[:2], 24), training=False).numpy()
    np.testing.assert_allclose(served["logits"].numpy(), logits, atol=1e-5, rtol=0)
    np.testing.assert_allclose(lite["logits"].numpy(), logits, atol=1e-5, rtol=0)


def test_regression_gives_a_score(tmp_path, vocab_file):
    info = {"task": "STS-B", "label_names": [], "is_regression": True, "num_classes": 1}
    model_dir, model = _classifier_dir(tmp_path / "stsb", info, 1, vocab_file, seed=4)
    module = build_module(str(model_dir), str(tmp_path))
    first, second = SST2_TEXTS[:2], SST2_TEXTS[2:]
    out = module.serving_default(tf.constant(first), tf.constant(second))
    assert set(out) == {"score", "truncated"}
    from official_bert.text import text_preprocessor

    inputs, _ = text_preprocessor(vocab_file, True, 24).pack([tf.constant(first), tf.constant(second)])
    # The export runs the unequal pairs on their real tokens: other matmul and LayerNorm shapes, other rounding
    # (the real-token tests' tolerance).
    np.testing.assert_allclose(out["score"].numpy(), model(inputs, training=False).numpy()[:, 0], atol=2e-5,
                               rtol=1e-5)


def test_model_dir_errors_name_the_problem(tmp_path, vocab_file):
    info = {"task": "SST-2", "label_names": ["0", "1"], "is_regression": False, "num_classes": 2}
    model_dir, _ = _classifier_dir(tmp_path / "sst2", info, 2, vocab_file, seed=3)
    with pytest.raises(ValueError,
                       match="max_seq_length=65 must be between 3 and the model's max_position_embeddings=64"):
        build_module(str(model_dir), str(tmp_path), max_seq_length=65)
    os.remove(model_dir / "model.weights.h5")
    with pytest.raises(FileNotFoundError, match="no model.weights.h5"):
        build_module(str(model_dir), str(tmp_path))
    with pytest.raises(FileNotFoundError, match="model_dir not found"):
        build_module(str(tmp_path / "nowhere"), str(tmp_path))
    (tmp_path / "data").mkdir()
    with pytest.raises(FileNotFoundError, match=r"not a tasks.run_\* model_dir \(no task.json\) nor a checkpoint: "
                                                r".*data: no BERT checkpoint found"):
        build_module(str(tmp_path / "data"), str(tmp_path))


def test_an_export_given_as_a_model_dir_is_named_so(exports, tmp_path):
    base = tmp_path / "export"
    base.mkdir()
    os.symlink(exports["classifier"], base / "1")
    for path in (base, base / "1"):  # the export_dir, or one version of it
        with pytest.raises(ValueError, match=f"{path} is an export \\(a SavedModel\\), not a model_dir: "):
            build_module(str(path), str(tmp_path))


def test_predict_cli_uses_the_latest_version(exports, ner_dir, tmp_path):
    from official_bert.pipelines import EntityTagger

    base = tmp_path / "model"
    base.mkdir()
    os.symlink(exports["tagger"], base / "2")
    os.symlink(exports["classifier"], base / "10")  # numerically the latest
    pairs = tmp_path / "pairs.tsv"  # MRPC's columns
    pairs.write_text("Quality\t#1 String\t#2 String\n1\tThe cat sat.\tA cat was sitting.\n0\tIt rained.\tIt shone.\n"
                     "0\tYes.\tNo.\n")
    result, from_file = run_forked([
        ("export.predict", [f"--export_dir={base}", "The cat sat.", "A cat was sitting."]),
        ("export.predict", [f"--export_dir={base}", f"--input_file={pairs}", "--columns=#1 String,#2 String",
                            "--batch_size=2"])], tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    answer = json.loads(result.stdout)
    assert set(answer) == {"label", "label_id", "logits", "probabilities", "truncated"}
    assert answer["label"] == str(answer["label_id"]) and answer["truncated"] is False
    assert from_file.returncode == 0, from_file.stderr[-3000:]
    lines = [json.loads(line) for line in from_file.stdout.splitlines()]  # one a line of the file, in its order
    assert len(lines) == 3 and lines[0]["label"] == answer["label"]
    np.testing.assert_allclose(lines[0]["logits"], answer["logits"], atol=1e-5)

    # A version directory itself; the CLI's function, in-process (one more forked run would only repeat the above).
    from export.predict import predict

    text = "SOCCER - JAPAN GET LUCKY WIN , CHINA IN SURPRISE DEFEAT ."
    answer = json.loads(json.dumps(predict(str(base / "2"), [text])))
    expected = EntityTagger.from_model_dir(str(ner_dir))([text])[0]
    assert [{"type": t, "start": s, "end": e, "text": x} for t, s, e, x in zip(
        answer["entity_type"], answer["entity_start"], answer["entity_end"], answer["entity_text"])] == expected
    assert len(expected) > 0


def test_a_task_outside_glue_is_served_on_its_recorded_text_features(tmp_path, vocab_file):
    info = {"task": "REVIEWS", "label_names": ["bad", "meh", "good"], "is_regression": False, "num_classes": 3}
    model_dir, model = _classifier_dir(tmp_path / "reviews", {**info, "text_features": ["review"]}, 3, vocab_file,
                                       seed=5)
    module = build_module(str(model_dir), str(tmp_path))
    assert list(module.serving_default.input_signature) == [tf.TensorSpec([None], tf.string, name="review")]
    out = module.serving_default(tf.constant(SST2_TEXTS[:2]))
    logits = model(_packed(vocab_file, SST2_TEXTS[:2], 24), training=False).numpy()
    np.testing.assert_allclose(out["logits"].numpy(), logits, atol=2e-5, rtol=1e-5)
    older, _ = _classifier_dir(tmp_path / "older", info, 3, vocab_file, seed=5)  # no text_features recorded
    with pytest.raises(ValueError, match="task.json: field 'text_features' missing .*'REVIEWS' is not a GLUE task"):
        build_module(str(older), str(tmp_path))


def test_a_file_of_examples_is_answered_in_batches_as_one_example_at_a_time(exports, tmp_path):
    from export.predict import TextSignature, predict_file

    examples = [["The cat sat.", "A cat was sitting."], ["It rained all day, in Paris.", "Paris was dry."],
                ["Yes.", "No."], ["Caf\u00e9 au lait.", "\u00c9t\u00e9."], ["A", "B"]]
    classifier = TextSignature(exports["classifier"])  # loaded once (a load costs about a second)
    one_at_a_time = [classifier([texts])[0] for texts in examples]
    path = tmp_path / "pairs.jsonl"  # (the formats are read as tests/export/test_predict.py checks)
    path.write_text("".join(json.dumps(texts) + "\n" for texts in examples), encoding="utf-8")
    answers = list(predict_file(exports["classifier"], str(path), batch_size=2))  # batches of 2, 2 and 1
    assert [a["label"] for a in answers] == [a["label"] for a in one_at_a_time]
    np.testing.assert_allclose([a["logits"] for a in answers], [a["logits"] for a in one_at_a_time], atol=1e-5)

    # A tagger's words and entities: each sentence's own, whatever it is batched with.
    sentences = ["SOCCER - JAPAN GET LUCKY WIN , CHINA IN SURPRISE DEFEAT .", "Peter flew.", "EU rejects German call"]
    (tmp_path / "sentences.txt").write_text("".join(f"{text}\n" for text in sentences))
    batched = list(predict_file(exports["tagger"], str(tmp_path / "sentences.txt")))
    tagger = TextSignature(exports["tagger"])
    alone = [tagger([[text]])[0] for text in sentences]
    assert batched == alone and [len(a["word_labels"]) for a in batched] == [a["num_words"] for a in batched] == [
        12, 3, 4]

    (tmp_path / "short.txt").write_text("A ||| B\nC\n")  # every line is checked before the first batch
    with pytest.raises(ValueError, match=r"short.txt:2: the model takes 2 text\(s\) \(text, text_b\), got 1"):
        list(predict_file(exports["classifier"], str(tmp_path / "short.txt")))
    (tmp_path / "nothing.txt").write_text("")
    with pytest.raises(ValueError, match=r"nothing.txt: no examples"):
        list(predict_file(exports["classifier"], str(tmp_path / "nothing.txt")))
