"""SQuAD export: answers in a fresh process equal `postprocess`'s on real dev questions; ops; TFLite; bad input.

The reference is the Python path of `tasks.run_squad`: `build_features` doc-stride windows, `BertSpanLabeler`
logits, and `postprocess` over all the windows of each question, with every position a candidate
(n_best_size = seq_length). At 128 pieces a window most dev contexts need several windows.
"""

import dataclasses
import json

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401

from export.ops import (ALLOWED_OPS, SAVER_OPS, TF_TEXT_OPS, disallowed_ops, graph_ops, saved_model_ops,
                        signature_ops)
from fresh_process import fresh_process_outputs
from lite_outputs import assert_lite_equals_saved
from model_dirs import squad_task_info, tiny_span_labeler, write_model_dir

pytestmark = pytest.mark.slow

SEQ_LENGTH = 128
DOC_STRIDE = 48
MAX_QUERY_LENGTH = 16  # some dev questions are longer: the question cut is exercised
MAX_ANSWER_LENGTH = 12
SIGNATURES = {"serving_default", "serve_examples", "serve_tokens"}


def _windows(examples, vocab_file):
    """`build_features` of the examples (all their windows); each example's first window row and window count;
    whether each question was cut."""
    from official_bert.data.squad import build_features, tokenize_with_char_offsets
    from official_bert.text import BertTokenizer

    tokenizer = BertTokenizer(vocab_file=vocab_file)
    features, _ = build_features(examples, tokenizer, SEQ_LENGTH, doc_stride=DOC_STRIDE,
                                 max_query_length=MAX_QUERY_LENGTH)
    first = np.searchsorted(features.example_index, np.arange(len(examples)))  # windows are in example order
    windows = np.diff(np.append(first, len(features)))
    questions = [len(ids) for ids, _, _ in tokenize_with_char_offsets(tokenizer, [e.question for e in examples])]
    return features, first, windows, np.array(questions) > MAX_QUERY_LENGTH


def _first_windows(features, first):
    """The features of each example's first window only, each piece of it its maximum context (what an export
    reading one window a context sees)."""
    context = features.token_char_spans[first, :, 0] >= 0
    return dataclasses.replace(
        features, inputs={k: v[first] for k, v in features.inputs.items()}, example_index=features.example_index[first],
        token_char_spans=features.token_char_spans[first], token_is_max_context=context)


def _squad_case(root, name, examples, vocab_file, version_2, seed):
    """A model_dir and the Python path's answers on the examples (over all windows, and over first windows)."""
    from official_bert.data.squad_postprocessing import postprocess

    model = tiny_span_labeler(seed, max_position_embeddings=512)
    features, first, windows, long_questions = _windows(examples, vocab_file)
    logits = {k: v.numpy() for k, v in model(features.inputs, training=False).items()}

    def answers(threshold, n_best_size=SEQ_LENGTH, rows=None):
        read = features if rows is None else _first_windows(features, rows)
        rows = slice(None) if rows is None else rows
        return postprocess(examples, read, logits["start_logits"][rows], logits["end_logits"][rows],
                           n_best_size=n_best_size, max_answer_length=MAX_ANSWER_LENGTH,
                           version_2_with_negative=version_2, null_score_diff_threshold=threshold)

    # SQuAD 2.0: the threshold is the median null-score difference, so both outcomes occur.
    threshold = float(np.median(list(answers(0.0).null_odds.values()))) if version_2 else 0.0
    info = squad_task_info(version_2, MAX_QUERY_LENGTH, MAX_ANSWER_LENGTH, threshold, doc_stride=DOC_STRIDE)
    model_dir = write_model_dir(root / name, model, info, vocab_file, SEQ_LENGTH)
    return {"model_dir": model_dir, "examples": examples, "features": features, "logits": logits, "first": first,
            "windows": windows, "long_questions": long_questions, "reference": answers(threshold),
            "top_1": answers(threshold, n_best_size=1), "first_window_reference": answers(threshold, rows=first)}


@pytest.fixture(scope="module")
def squad_cases(shared_data, vocab_file, tmp_path_factory):
    """v1.1 (40 dev questions across the articles, exported) and v2.0 (20 of the CS224N half, its serving module
    built in-process: one SavedModel write less) model_dirs."""
    from export.saved_model import build_module, export
    from official_bert.data.squad_examples import read_squad_json

    v1 = read_squad_json(str(shared_data / "squad" / "v1.1" / "dev-v1.1.json"))[::264][:40]
    v2 = read_squad_json(str(shared_data / "squad" / "v2.0" / "cs224n-dev-half-v2.0.json"))[::300][:20]
    root = tmp_path_factory.mktemp("squad")
    cases = {"v1": _squad_case(root, "v1", v1, vocab_file, False, seed=5),
             "v2": _squad_case(root, "v2", v2, vocab_file, True, seed=6)}
    cases["v1"]["export"] = export(str(cases["v1"]["model_dir"]), str(root / "export_v1"))
    cases["v2"]["module"] = build_module(str(cases["v2"]["model_dir"]), str(root))
    return cases


@pytest.fixture(scope="module")
def saved_v1(squad_cases):
    return tf.saved_model.load(squad_cases["v1"]["export"])


@pytest.fixture(scope="module")
def outputs(squad_cases, tmp_path_factory):
    """Every signature's outputs on the questions: v1 from its export in a fresh process, v2 in-process."""
    texts = {name: {"question": [e.question for e in case["examples"]],
                    "context": [e.context for e in case["examples"]]} for name, case in squad_cases.items()}
    tokens = {name: {k: v.tolist() for k, v in case["features"].inputs.items()} for name, case in squad_cases.items()}
    result = fresh_process_outputs(tmp_path_factory.mktemp("fresh_squad"), {"v1": {
        "dir": squad_cases["v1"]["export"], "examples": texts["v1"],
        "signatures": {"serving_default": texts["v1"], "serve_tokens": tokens["v1"]}}})
    module = squad_cases["v2"]["module"]
    examples = [tf.train.Example(features=tf.train.Features(feature={
        k: tf.train.Feature(bytes_list=tf.train.BytesList(value=[v[i].encode()])) for k, v in texts["v2"].items()}))
        .SerializeToString() for i in range(len(texts["v2"]["question"]))]
    result["v2"] = {}
    question, context = (tf.constant(texts["v2"][k]) for k in ("question", "context"))
    token_inputs = {k: tf.constant(v, tf.int32) for k, v in tokens["v2"].items()}
    for signature, out in (("serving_default", module.serving_default(question, context)),
                           ("serve_examples", module.serve_examples(tf.constant(examples))),
                           ("serve_tokens", module.serve_tokens(**token_inputs))):
        result["v2"].update({f"{signature}/{k}": v.numpy() for k, v in out.items()})
    return result


def _best_span(answers, qas_id):
    """The best non-null n-best entry of the post-processed `answers` for `qas_id`, or None."""
    return next((entry for entry in answers.nbest[qas_id] if entry["text"]), None)


def _score(entry):
    return entry["start_logit"] + entry["end_logit"]


def _assert_answers_equal(case, out, reference, signatures, truncated):
    """Each signature's answers, offsets, scores and `truncated` equal the Python path's `reference`; returns how
    many questions have an answer."""
    answered = 0
    for i, example in enumerate(case["examples"]):
        expected = reference.predictions[example.qas_id]
        best = _best_span(reference, example.qas_id)
        for signature in signatures:
            got = out[f"{signature}/answer_text"][i].decode("utf-8")
            assert got == expected, (signature, example.qas_id)
            start, end = out[f"{signature}/answer_start"][i], out[f"{signature}/answer_end"][i]
            if expected:
                assert (start, end) == (best["start"], best["end"]) and example.context[start:end] == got
                byte_start = len(example.context[:start].encode("utf-8"))
                assert out[f"{signature}/answer_byte_start"][i] == byte_start
                assert out[f"{signature}/answer_byte_end"][i] == byte_start + len(got.encode("utf-8"))
            else:
                assert (start, end) == (-1, -1)
            np.testing.assert_allclose(out[f"{signature}/score"][i], _score(best), atol=1e-5, rtol=0)
            assert out[f"{signature}/truncated"][i] == truncated[i]
            if reference.null_odds is not None:
                assert out[f"{signature}/no_answer"][i] == (expected == "")
                np.testing.assert_allclose(out[f"{signature}/null_score_diff"][i],
                                           reference.null_odds[example.qas_id], atol=1e-5, rtol=0)
        answered += expected != ""
    return answered


@pytest.mark.parametrize("name", ["v1", "v2"])
def test_answers_over_all_windows_equal_the_python_path_on_dev_questions(squad_cases, outputs, name):
    case, out = squad_cases[name], outputs[name]
    examples, reference = case["examples"], case["reference"]
    answered = _assert_answers_equal(case, out, reference, ("serving_default", "serve_examples"),
                                     truncated=case["long_questions"])
    for example in examples:
        # n_best_size=1 reads only each window's top start and top end, a subset of the spans we read: where that
        # gives a span, ours scores at least as high, and is that span where it scores no higher.
        top_1, ours = _best_span(case["top_1"], example.qas_id), _best_span(reference, example.qas_id)
        if top_1 is not None:
            assert _score(ours) >= _score(top_1) - 1e-5, (example.qas_id, ours, top_1)
            if _score(ours) <= _score(top_1) + 1e-5:
                assert ours["text"] == top_1["text"], (example.qas_id, ours, top_1)
    assert (case["windows"] > 2).sum() >= 5 and (case["windows"] == 1).any()  # long and short contexts, one request
    np.testing.assert_array_equal(out["serving_default/num_windows"], case["windows"])
    if name == "v2":
        assert 0 < answered < len(examples)
    else:
        assert answered == len(examples) and case["long_questions"].any()  # long questions are cut too
        assert (out["serving_default/answer_window"] > 0).sum() >= 3  # answers found past the first window

    # The answer's window: its logits are the Python path's logits of that window; its pieces' offsets are ours.
    rows = case["first"] + out["serving_default/answer_window"]  # (questions,) the answer's window row
    for key in ("start_logits", "end_logits"):  # rtol: the export's graph fuses the GELU into its matmul
        np.testing.assert_allclose(out[f"serve_tokens/{key}"], case["logits"][key], atol=1e-5, rtol=1e-5)
        np.testing.assert_allclose(out[f"serving_default/{key}"], case["logits"][key][rows], atol=1e-5, rtol=1e-5)
    spans = case["features"].token_char_spans
    answered = np.flatnonzero(out["serving_default/answer_token_start"] >= 0)
    np.testing.assert_array_equal(spans[rows[answered], out["serving_default/answer_token_start"][answered], 0],
                                  out["serving_default/answer_start"][answered])
    np.testing.assert_array_equal(spans[rows[answered], out["serving_default/answer_token_end"][answered], 1],
                                  out["serving_default/answer_end"][answered])
    # serve_tokens reads each packed row as one question: on a one-window question it answers as serving_default.
    single = np.flatnonzero(case["windows"] == 1)
    for key in ("answer_token_start", "answer_token_end", "score"):
        np.testing.assert_allclose(out[f"serve_tokens/{key}"][case["first"][single]],
                                   out[f"serving_default/{key}"][single], atol=1e-5, rtol=0)


def test_max_windows_caps_the_windows_read_and_says_so(squad_cases, classifier_dir, tmp_path):
    """With `max_windows=1` each question reads its first window only: the answers are `postprocess`'s over the
    first windows, and `truncated` is set where the context had more."""
    from export.saved_model import build_module

    case = squad_cases["v1"]
    module = build_module(str(case["model_dir"]), str(tmp_path), max_windows=1)
    out = module.serving_default(tf.constant([e.question for e in case["examples"]]),
                                 tf.constant([e.context for e in case["examples"]]))
    out = {f"serving_default/{k}": v.numpy() for k, v in out.items()}
    _assert_answers_equal(case, out, case["first_window_reference"], ("serving_default",),
                          truncated=case["long_questions"] | (case["windows"] > 1))
    assert (out["serving_default/num_windows"] == 1).all() and (out["serving_default/answer_window"] == 0).all()
    with pytest.raises(ValueError, match="--max_windows: SQuAD model_dirs"):
        build_module(str(classifier_dir), str(tmp_path), max_windows=2)


def test_short_requests_run_at_their_length_with_the_same_answers(squad_cases):
    """The raw-text signature runs the model at the request's longest packed sequence: the logits there equal the
    fixed-length (TFLite) function's, 0 after it, and the answers are the same."""
    module = squad_cases["v2"]["module"]
    questions = tf.constant(["Who flew to Brussels?", "When did he fly?"])
    contexts = tf.constant(["Peter Blackburn flew to Brussels on Monday.", "He flew on Monday to meet the EU."])
    trimmed, fixed = module.serving_default(questions, contexts), module.tflite_serving_default(questions, contexts)
    longest = int(tf.reduce_max(tf.reduce_sum(module.preprocessor.pack_tokens([
        module.preprocessor.tokenize(questions), module.preprocessor.tokenize(contexts)])[0]["input_mask"], 1)))
    assert longest < SEQ_LENGTH
    for key in ("start_logits", "end_logits"):
        np.testing.assert_allclose(trimmed[key].numpy()[:, :longest], fixed[key].numpy()[:, :longest], atol=1e-5,
                                   rtol=1e-5)
        assert not trimmed[key].numpy()[:, longest:].any()
    for key in ("answer_token_start", "answer_token_end", "answer_byte_start", "answer_byte_end"):
        np.testing.assert_array_equal(trimmed[key].numpy(), fixed[key].numpy())


def test_every_signature_uses_only_serving_safe_ops(squad_cases):
    ops = signature_ops(squad_cases["v1"]["export"])
    module = squad_cases["v2"]["module"]  # in-process: the ops of its traced functions
    ops_v2 = {name: graph_ops(function.get_concrete_function().graph.as_graph_def())
              for name, function in module.signatures().items()}
    for signatures in (ops, ops_v2):
        assert set(signatures) == SIGNATURES
        for name, signature_op_set in signatures.items():
            assert disallowed_ops(signature_op_set) == set(), name
            assert ("FastBertNormalize" in signature_op_set) == (name != "serve_tokens"), name
        assert TF_TEXT_OPS <= signatures["serving_default"]
    assert disallowed_ops(saved_model_ops(squad_cases["v1"]["export"]), ALLOWED_OPS | SAVER_OPS) == set()


def test_bad_input(squad_cases, saved_v1):
    v1 = saved_v1.signatures["serving_default"]

    def v2(question, context):  # the in-process module's function takes them positionally
        return squad_cases["v2"]["module"].serving_default(question, context)

    out = v1(question=tf.constant([], tf.string), context=tf.constant([], tf.string))
    assert out["answer_text"].shape == (0,) and out["start_logits"].shape == (0, SEQ_LENGTH)
    long_context = "Brussels is a city. " * 200
    text = "Peter \xff flew to Brussels.".encode("latin-1")  # one invalid byte
    questions = tf.constant(["Where?", "", "Where did Peter fly?", ""])
    contexts = tf.constant(["", long_context, text, "   "])
    # No context piece: no span; the answer is "" (and for SQuAD 2.0 no_answer), as postprocess predicts.
    out = {k: v.numpy() for k, v in v2(question=questions, context=contexts).items()}
    assert out["no_answer"][[0, 3]].all() and (out["null_score_diff"][[0, 3]] == np.inf).all()
    out = {k: v.numpy() for k, v in v1(question=questions, context=contexts).items()}
    assert out["answer_text"][[0, 3]].tolist() == [b"", b""] and (out["answer_start"][[0, 3]] == -1).all()
    assert (out["score"][[0, 3]] == -np.inf).all()
    assert out["truncated"].tolist() == [False, False, False, False]
    assert out["num_windows"].tolist()[1] > 10 and out["num_windows"][[0, 2, 3]].tolist() == [1, 1, 1]
    # The long context is read in all its windows: the answer lies in one of them.
    start, end = out["answer_start"][1], out["answer_end"][1]
    assert 0 <= start < end <= len(long_context) and out["answer_text"][1] == long_context[start:end].encode()
    # Invalid UTF-8: no error, exact byte offsets.
    start, end = out["answer_byte_start"][2], out["answer_byte_end"][2]
    assert 0 <= start < end and out["answer_text"][2] == text[start:end]


def test_tflite_float_model_equals_the_saved_model_with_byte_offsets(squad_cases, saved_v1):
    from export import tflite

    pytest.importorskip("ai_edge_litert.interpreter")
    case = squad_cases["v1"]
    questions = [e.question for e in case["examples"][:6]] + ["Where?"]
    contexts = [e.context for e in case["examples"][:6]] + [""]
    model = tflite.convert(case["export"], "serving_default", "none")
    assert tflite.custom_ops(model) == TF_TEXT_OPS
    runner = tflite.interpreter(model).get_signature_runner("serving_default")
    lite = runner(question=np.array(questions, object), context=np.array(contexts, object))
    saved = saved_v1.signatures["serving_default"](question=tf.constant(questions), context=tf.constant(contexts))
    # TFLite has no string slicing: the answer comes as byte offsets.
    assert set(saved) - set(lite) == {"answer_text", "answer_start", "answer_end"}
    # LiteRT's kernels round differently from TF's: up to ~2e-5 here, with the large activations of the
    # random initializer range 0.5 over 256 positions (the classifier, 64 positions, stays within 1e-5).
    assert_lite_equals_saved(lite, saved, atol=5e-5)
    assert (lite["answer_byte_start"][:6] >= 0).all() and lite["answer_byte_start"][6] == -1
    assert lite["truncated"].any()


def test_predict_prints_the_answer(squad_cases, outputs):
    from export.predict import predict

    example = squad_cases["v1"]["examples"][0]
    answer = predict(squad_cases["v1"]["export"], [example.question.encode(), example.context.encode()])
    assert set(answer) == {"answer_text", "answer_start", "answer_end", "answer_byte_start", "answer_byte_end",
                           "answer_token_start", "answer_token_end", "score", "truncated", "num_windows",
                           "answer_window"}  # no per-position logits
    assert answer["answer_text"] == outputs["v1"]["serving_default/answer_text"][0].decode()
    assert example.context[answer["answer_start"]:answer["answer_end"]] == answer["answer_text"] != ""


def test_a_file_of_questions_is_answered_as_the_signature_answers_them(squad_cases, outputs, tmp_path):
    from export.predict import predict_file

    path = tmp_path / "questions.jsonl"
    path.write_text("".join(json.dumps({"context": e.context, "question": e.question}) + "\n"
                            for e in squad_cases["v1"]["examples"]))
    answers = list(predict_file(squad_cases["v1"]["export"], str(path), batch_size=16))  # 16, 16 and 8 questions
    assert [a["answer_text"] for a in answers] == [
        text.decode() for text in outputs["v1"]["serving_default/answer_text"]]
    assert [a["num_windows"] for a in answers] == list(outputs["v1"]["serving_default/num_windows"])
