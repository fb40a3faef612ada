"""Multiple-choice export: raw text (a context, [batch, n] choices with "" for missing ones) answered in a fresh
process as the Python model answers; tf.Examples with any number of choices; token inputs; serving-safe ops;
warm-up requests; a [batch] choices vector; TF Serving's session-based loader check."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401

from export.ops import ALLOWED_OPS, SAVER_OPS, disallowed_ops, saved_model_ops, signature_ops
from export.warmup import WARMUP_FILE, read_warmup_file
from fresh_process import fresh_process_outputs_and_tool_checks
from model_dirs import multiple_choice_dir

pytestmark = pytest.mark.slow
SEQ_LENGTH = 32  # some SWAG sample pairs are longer: truncation is exercised


@pytest.fixture(scope="module")
def questions(shared_data):
    """The SWAG sample's questions; question 1 keeps two choices, question 4 one (the rest "")."""
    from official_bert.data.multiple_choice import read_jsonl
    from official_bert.data.multiple_choice_dataset import padded_choices

    examples = read_jsonl(str(shared_data / "swag" / "sample.jsonl"))
    choices = padded_choices(examples.choices)
    choices[1, 2:] = ""
    choices[4, 1:] = ""
    return examples.contexts, choices


@pytest.fixture(scope="module")
def exported(tmp_path_factory, vocab_file):
    from export.saved_model import export

    root = tmp_path_factory.mktemp("multiple_choice")
    model_dir = multiple_choice_dir(root / "swag", vocab_file, seq_length=SEQ_LENGTH)
    return model_dir, export(str(model_dir), str(root / "export"))


@pytest.fixture(scope="module")
def python_answers(exported, questions):
    """The Python path: `pack_choices` at the full length, then the model_dir's `BertMultipleChoice`."""
    from official_bert.data.multiple_choice_dataset import pack_choices
    from official_bert.model_dir import load_model_dir
    from official_bert.text import text_preprocessor

    loaded = load_model_dir(str(exported[0]))
    contexts, choices = questions
    inputs, truncated = pack_choices(text_preprocessor(loaded.vocab_file, True, SEQ_LENGTH), tf.constant(contexts),
                                     tf.constant(choices))
    return {name: value.numpy() for name, value in inputs.items()}, truncated.numpy(), \
        loaded.model(inputs, training=False).numpy()


@pytest.fixture(scope="module")
def fresh(exported, questions, python_answers, tmp_path_factory):
    """One fresh process: raw text and tokens on the export, then ../shared/tools/session_loader_check.py on it
    (TF Serving's loader path, every warm-up request, raw text). Returns (outputs, (exit code, printed))."""
    contexts, choices = questions
    inputs = python_answers[0]
    outputs, checks = fresh_process_outputs_and_tool_checks(tmp_path_factory.mktemp("fresh_mc"), {"mc": {
        "dir": exported[1], "signatures": {
            "serving_default": {"context": list(contexts), "choices": choices.tolist()},
            "serve_tokens": {name: value.tolist() for name, value in inputs.items()}}}}, [exported[1]])
    return outputs["mc"], checks[exported[1]]


def test_raw_text_and_tokens_in_a_fresh_process_equal_the_python_model(fresh, questions, python_answers):
    contexts, choices = questions
    inputs, truncated, logits = python_answers
    out = fresh[0]
    missing = choices == ""
    assert missing.sum() == 5 and (logits[missing] == -1e9).all()
    for signature in ("serving_default", "serve_tokens"):
        np.testing.assert_allclose(out[f"{signature}/scores"], logits, atol=1e-5, rtol=0)
        np.testing.assert_array_equal(out[f"{signature}/label_id"], logits.argmax(-1))
        np.testing.assert_allclose(out[f"{signature}/probabilities"], tf.nn.softmax(logits).numpy(), atol=1e-6)
        assert (out[f"{signature}/probabilities"][missing] == 0).all()  # a missing choice is never scored
    assert out["serving_default/label_id"][4] == 0 and out["serving_default/label_id"][1] in (0, 1)
    assert len(set(logits.argmax(-1))) > 1  # the answers differ: the comparison is not vacuous
    np.testing.assert_array_equal(out["serving_default/truncated"], truncated.any(axis=1))
    assert out["serving_default/truncated"].any() and not out["serving_default/truncated"].all()


@pytest.fixture(scope="module")
def saved(exported):
    """The export loaded with `tf.saved_model.load` (the tests only call its signatures)."""
    return tf.saved_model.load(exported[1])


def test_tf_examples_with_any_number_of_choices_answer_as_raw_text(saved, questions):
    contexts, choices = questions
    examples = [tf.train.Example(features=tf.train.Features(feature={
        "context": tf.train.Feature(bytes_list=tf.train.BytesList(value=[context.encode()])),
        "choices": tf.train.Feature(bytes_list=tf.train.BytesList(value=[c.encode() for c in row if c]))}))
        .SerializeToString() for context, row in zip(contexts, choices)]
    from_examples = saved.signatures["serve_examples"](examples=tf.constant(examples))
    from_text = saved.signatures["serving_default"](context=tf.constant(contexts), choices=tf.constant(choices))
    for key in ("scores", "probabilities", "label_id", "truncated"):
        np.testing.assert_allclose(from_examples[key].numpy(), from_text[key].numpy(), atol=1e-6, err_msg=key)
    # A batch whose largest question has two choices gives two columns.
    two = saved.signatures["serve_examples"](examples=tf.constant([examples[1], examples[4]]))
    assert two["scores"].shape == (2, 2) and two["scores"].numpy()[1, 1] == -1e9


def test_a_choices_vector_is_one_choice_per_question(saved, questions):
    contexts, choices = questions
    model = saved.signatures["serving_default"]
    vector = model(context=tf.constant(contexts[:3]), choices=tf.constant(choices[:3, 0]))
    column = model(context=tf.constant(contexts[:3]), choices=tf.constant(choices[:3, :1]))
    assert vector["scores"].shape == (3, 1)
    np.testing.assert_allclose(vector["scores"].numpy(), column["scores"].numpy(), atol=1e-6)
    np.testing.assert_array_equal(vector["probabilities"].numpy(), 1.0)


def test_serving_safe_ops_and_warmup_requests(exported, saved):
    version_dir = exported[1]
    ops = signature_ops(version_dir)
    assert set(ops) == {"serving_default", "serve_examples", "serve_tokens"}
    for name, signature_op_set in ops.items():
        assert disallowed_ops(signature_op_set) == set(), name
    assert disallowed_ops(saved_model_ops(version_dir), ALLOWED_OPS | SAVER_OPS) == set()
    requests = read_warmup_file(os.path.join(version_dir, "assets.extra", WARMUP_FILE))
    assert [name for name, _ in requests] == ["serving_default", "serve_examples", "serve_tokens"]
    assert requests[0][1]["choices"].shape == (2, 4) and requests[2][1]["input_word_ids"].shape == (2, 4, SEQ_LENGTH)
    answers = [saved.signatures[name](**{k: tf.constant(v) for k, v in inputs.items()}) for name, inputs in requests]
    for answer in answers[1:]:  # the three forms of the same two questions give the same scores, up to float32
        # rounding: the forms run at other lengths, so other summation orders (1.1e-6 apart with AVX2's kernels)
        np.testing.assert_allclose(answer["scores"], answers[0]["scores"], atol=1e-5, rtol=1e-5)
    assert (answers[0]["scores"].numpy()[1, 2:] == -1e9).all()


def test_tf_serving_session_loader_check_passes(fresh):
    """../shared/tools/session_loader_check.py: TF Serving's loader path, every warm-up request, raw text."""
    code, printed = fresh[1]
    assert code == 0, printed[-2000:]
    assert "warm-up requests answered: 3" in printed and "FAILED" not in printed


def test_the_model_dir_kind_and_task_json(exported):
    task = json.loads((exported[0] / "task.json").read_text())
    assert task["kind"] == "multiple_choice"


def test_predict_cli_asks_one_question_with_its_choices(exported, saved, questions, monkeypatch):
    import functools

    from export import predict as predict_module
    from export.predict import predict

    monkeypatch.setattr(predict_module, "load", functools.cache(predict_module.load))  # one load for the 2 calls
    contexts, choices = questions
    answer = predict(str(exported[1]), [contexts[0], *choices[0]])
    expected = saved.signatures["serving_default"](context=tf.constant(contexts[:1]), choices=tf.constant(choices[:1]))
    assert answer["label_id"] == int(expected["label_id"][0])
    np.testing.assert_allclose(answer["probabilities"], expected["probabilities"][0].numpy(), atol=1e-6)
    with pytest.raises(ValueError, match="takes a context and at least one of its choices, got 1"):
        predict(str(exported[1]), [contexts[0]])


def test_a_file_of_questions_with_different_numbers_of_choices_is_answered_in_order(exported, questions, tmp_path):
    from export.predict import TextSignature, predict_file

    contexts, choices = questions
    examples = [[context, *(choice for choice in row if choice)] for context, row in zip(contexts[:6], choices)]
    assert sorted({len(texts) for texts in examples}) == [2, 3, 5]  # 1, 2 and 4 choices
    signature = TextSignature(str(exported[1]))
    one_at_a_time = [signature([texts])[0] for texts in examples]
    path = tmp_path / "questions.jsonl"  # as tasks.run_multiple_choice reads them (test_predict.py: SWAG's rows)
    path.write_text("".join(json.dumps({"context": texts[0], "choices": texts[1:]}) + "\n" for texts in examples))
    answers = list(predict_file(str(exported[1]), str(path), batch_size=4))
    assert [a["label_id"] for a in answers] == [a["label_id"] for a in one_at_a_time]
    for answer, expected in zip(answers, one_at_a_time):  # batches of 1 and 4: other kernels on some CPUs
        np.testing.assert_allclose(answer["probabilities"], expected["probabilities"], atol=1e-5)
