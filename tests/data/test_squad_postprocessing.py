"""SQuAD post-processing with hand-made logits, and against a line-by-line port of the original BERT loop.

Features are built here with the contract's fields (SimpleNamespace, not official_bert.data.squad): a toy
tokenizer (words and punctuation, with their character spans), [CLS] question [SEP] context [SEP] windows
with a doc stride, and the original `_check_is_max_context` rule.
"""

import collections
import json
import math
import random
import re
import types

import numpy as np
import pytest

from official_bert.data.squad_postprocessing import SquadPredictions, postprocess, write_predictions
from official_bert.metrics import squad as squad_metrics

TOKEN = re.compile(r"\w+|[^\w\s]")


def _example(qas_id, context, question="q", answers=(), is_impossible=False):
    return types.SimpleNamespace(qas_id=qas_id, question=question, context=context, answers=list(answers),
                                 is_impossible=is_impossible)


def _is_max_context(doc_spans, span_index, position):
    """The original run_squad.py `_check_is_max_context`: min(left, right) + 0.01 * length, first best wins."""
    best_score, best_index = None, None
    for index, (start, length) in enumerate(doc_spans):
        end = start + length - 1
        if position < start or position > end:
            continue
        score = min(position - start, end - position) + 0.01 * length
        if best_score is None or score > best_score:
            best_score, best_index = score, index
    return span_index == best_index


def _features(examples, max_seq_length, doc_stride, question_len=2):
    """Windows of every example; returns (features, layout) where layout[w] maps doc token -> sequence position."""
    max_doc = max_seq_length - question_len - 3
    rows = collections.defaultdict(list)
    layout = []
    for ex, example in enumerate(examples):
        tokens = [(m.start(), m.end()) for m in TOKEN.finditer(example.context)]
        doc_spans, start = [], 0
        while start < len(tokens):
            length = min(len(tokens) - start, max_doc)
            doc_spans.append((start, length))
            if start + length == len(tokens):
                break
            start += min(length, doc_stride)
        for span_index, (start, length) in enumerate(doc_spans):
            spans = np.full((max_seq_length, 2), -1, np.int32)
            max_context = np.zeros(max_seq_length, bool)
            mask = np.zeros(max_seq_length, np.int32)
            offset = 2 + question_len  # [CLS] question [SEP]
            mask[: offset + length + 1] = 1  # ... context [SEP]
            positions = {}
            for i in range(length):
                spans[offset + i] = tokens[start + i]
                max_context[offset + i] = _is_max_context(doc_spans, span_index, start + i)
                positions[start + i] = offset + i
            layout.append(positions)
            rows["spans"].append(spans)
            rows["max_context"].append(max_context)
            rows["mask"].append(mask)
            rows["example"].append(ex)
    n = len(rows["example"])
    features = types.SimpleNamespace(
        inputs={"input_word_ids": np.ones((n, max_seq_length), np.int32), "input_mask": np.stack(rows["mask"]),
                "input_type_ids": np.zeros((n, max_seq_length), np.int32)},
        start_positions=None, end_positions=None, example_index=np.array(rows["example"], np.int32),
        token_char_spans=np.stack(rows["spans"]), token_is_max_context=np.stack(rows["max_context"]))
    return features, layout


def _words(n):
    return " ".join(f"w{i}" for i in range(n))


def test_text_restored_with_casing_whitespace_and_non_ascii():
    context = "Die  Straße in MÜNCHEN   heißt „Café Größenwahn“ —\tseit 1999. 𝔘nicode 🙂 Ende"
    examples = [_example("q1", context)]
    features, layout = _features(examples, max_seq_length=40, doc_stride=10)
    assert len(features.example_index) == 1
    tokens = [m.group() for m in TOKEN.finditer(context)]
    start, end = np.full((1, 40), -5.0), np.full((1, 40), -5.0)
    pos = {t: layout[0][i] for i, t in enumerate(tokens)}
    start[0, pos["Café"]], end[0, pos["Größenwahn"]] = 4.0, 4.0
    start[0, pos["MÜNCHEN"]], end[0, pos["heißt"]] = 3.0, 3.0
    start[0, pos["𝔘nicode"]], end[0, pos["🙂"]] = 2.0, 2.0
    start[0, pos["—"]], end[0, pos["1999"]] = 1.0, 1.0
    out = postprocess(examples, features, start, end, n_best_size=4, max_answer_length=3)  # no cross pairs
    texts = [entry["text"] for entry in out.nbest["q1"]]
    assert out.predictions["q1"] == "Café Größenwahn"
    assert texts == ["Café Größenwahn", "MÜNCHEN   heißt", "𝔘nicode 🙂", "—\tseit 1999"]
    for entry in out.nbest["q1"]:
        assert context[entry["start"]:entry["end"]] == entry["text"]
    assert out.null_odds is None


def test_max_context_rule_across_overlapping_windows():
    # 10 doc tokens, 6 per window, stride 4: window 0 = tokens 0-5, window 1 = tokens 4-9.
    examples = [_example("q", _words(10))]
    features, layout = _features(examples, max_seq_length=11, doc_stride=4)
    assert features.example_index.tolist() == [0, 0]
    assert sorted(layout[0]) == [0, 1, 2, 3, 4, 5] and sorted(layout[1]) == [4, 5, 6, 7, 8, 9]
    # Token 4: min(4, 1) in window 0 beats min(0, 5) in window 1; token 5: min(5, 0) loses to min(1, 4).
    assert features.token_is_max_context[0, layout[0][4]] and not features.token_is_max_context[1, layout[1][4]]
    assert not features.token_is_max_context[0, layout[0][5]] and features.token_is_max_context[1, layout[1][5]]

    start, end = np.full((2, 11), -9.0), np.full((2, 11), -9.0)
    start[1, layout[1][4]], end[1, layout[1][6]] = 8.0, 8.0  # token 4 lacks max context in window 1: rejected
    start[0, layout[0][5]], end[0, layout[0][5]] = 7.0, 7.0  # token 5 lacks max context in window 0: rejected
    start[0, layout[0][4]], end[0, layout[0][5]] = 2.0, 2.0  # the same start where it has max context
    out = postprocess(examples, features, start, end, n_best_size=3)
    assert out.predictions["q"] == "w4 w5"
    assert all(entry["text"] != "w4 w5 w6" for entry in out.nbest["q"])
    assert all(not entry["text"].startswith("w5") for entry in out.nbest["q"])

    # A start in window 1 where token 5 has max context; the end may be anywhere in that window.
    start[1, layout[1][5]], end[1, layout[1][8]] = 6.0, 9.0
    out = postprocess(examples, features, start, end, n_best_size=3)
    assert [entry["text"] for entry in out.nbest["q"]] == ["w5 w6 w7 w8", "w5 w6", "w4 w5"]
    assert out.nbest["q"][0]["start_logit"] == 6.0 and out.nbest["q"][0]["end_logit"] == 9.0


def test_spans_into_question_sep_cls_padding_or_backwards_are_rejected():
    examples = [_example("q", _words(5))]
    features, layout = _features(examples, max_seq_length=16, doc_stride=4)
    seq = features.inputs["input_mask"].shape[1]
    sep = 2 + 2 + 5  # [CLS] q q [SEP] w0..w4 [SEP]
    assert features.inputs["input_mask"][0].tolist() == [1] * (sep + 1) + [0] * (seq - sep - 1)
    start, end = np.full((1, seq), -9.0), np.full((1, seq), -9.0)
    start[0, 0], end[0, 0] = 9.0, 9.0  # [CLS]
    start[0, 1], end[0, layout[0][1]] = 8.5, -8.0  # a question token as start
    start[0, layout[0][4]], end[0, sep] = 8.0, 8.0  # last context token to [SEP]
    start[0, seq - 1], end[0, seq - 1] = 7.5, 7.5  # padding
    start[0, layout[0][3]], end[0, layout[0][1]] = 7.0, 7.0  # end before start
    end[0, layout[0][2]] = 1.0
    start[0, layout[0][1]] = 0.5
    out = postprocess(examples, features, start, end, n_best_size=seq)
    texts = [entry["text"] for entry in out.nbest["q"]]
    # Valid: w1 -> w1 (0.5 + 7.0), w1 -> w1 w2 (0.5 + 1.0), w4 -> w4 (8.0 - 9.0); all higher pairs are invalid.
    assert out.predictions["q"] == "w1"
    assert texts[:3] == ["w1", "w1 w2", "w4"]
    for entry in out.nbest["q"]:
        assert entry["start"] >= 0 and examples[0].context[entry["start"]:entry["end"]] == entry["text"]


def test_max_answer_length():
    examples = [_example("q", _words(8))]
    features, layout = _features(examples, max_seq_length=16, doc_stride=4)
    start, end = np.full((1, 16), -9.0), np.full((1, 16), -9.0)
    start[0, layout[0][1]], end[0, layout[0][4]] = 5.0, 5.0  # 4 tokens
    end[0, layout[0][3]] = 1.0  # 3 tokens
    assert postprocess(examples, features, start, end, max_answer_length=4).predictions["q"] == "w1 w2 w3 w4"
    out = postprocess(examples, features, start, end, max_answer_length=3)
    assert out.predictions["q"] == "w1 w2 w3"
    assert all(len(entry["text"].split()) <= 3 for entry in out.nbest["q"])


def test_nbest_order_probabilities_and_duplicate_texts():
    context = "x y x z Q y"
    examples = [_example("q", context)]
    features, layout = _features(examples, max_seq_length=12, doc_stride=4)
    rng = np.random.default_rng(0)
    start, end = rng.normal(size=(1, 12)), rng.normal(size=(1, 12))
    start[0, layout[0][2]], end[0, layout[0][2]] = 6.0, 6.0  # the second "x"
    start[0, layout[0][0]], end[0, layout[0][0]] = 5.0, 5.0  # the first "x": same text, dropped
    out = postprocess(examples, features, start, end, n_best_size=5, max_answer_length=4)
    nbest = out.nbest["q"]
    assert len(nbest) == 5
    assert nbest[0]["text"] == "x" and (nbest[0]["start"], nbest[0]["end"]) == (4, 5)
    texts = [entry["text"] for entry in nbest]
    assert len(set(texts)) == len(texts)
    scores = [entry["start_logit"] + entry["end_logit"] for entry in nbest]
    assert scores == sorted(scores, reverse=True)
    expected = np.exp(np.array(scores) - max(scores))
    np.testing.assert_allclose([entry["probability"] for entry in nbest], expected / expected.sum(), rtol=1e-12)
    assert math.isclose(sum(entry["probability"] for entry in nbest), 1.0, rel_tol=1e-12)
    assert list(nbest[0]) == ["text", "probability", "start_logit", "end_logit", "start", "end"]


def test_null_answer_score_and_threshold():
    examples = [_example("q", _words(10), is_impossible=True)]
    features, layout = _features(examples, max_seq_length=11, doc_stride=4)
    start, end = np.full((2, 11), -9.0), np.full((2, 11), -9.0)
    start[:, 0], end[:, 0] = [2.0, 0.5], [1.0, 0.5]  # null scores 3.0 and 1.0: the minimum, 1.0, counts
    start[0, layout[0][1]], end[0, layout[0][2]] = 2.5, 2.0  # best non-null: 4.5
    kwargs = dict(n_best_size=3, version_2_with_negative=True)
    out = postprocess(examples, features, start, end, **kwargs)
    assert out.null_odds["q"] == 1.0 - 4.5
    assert out.predictions["q"] == "w1 w2"
    nbest = out.nbest["q"]
    null = [entry for entry in nbest if entry["text"] == ""]
    assert len(null) == 1 and null[0]["start"] == null[0]["end"] == -1
    assert (null[0]["start_logit"], null[0]["end_logit"]) == (0.5, 0.5)  # from window 1
    assert postprocess(examples, features, start, end, null_score_diff_threshold=-3.5, **kwargs).predictions["q"] \
        == "w1 w2"  # not strictly above
    assert postprocess(examples, features, start, end, null_score_diff_threshold=-3.6, **kwargs).predictions["q"] == ""

    # The null answer ranks among the spans, and is appended when it misses the first n_best_size.
    out = postprocess(examples, features, start, end, n_best_size=1, version_2_with_negative=True)
    assert [entry["text"] for entry in out.nbest["q"]] == ["w1 w2", ""]
    start[:, 0] = [4.0, 5.0]  # null scores 5.0 and 5.5: the minimum, 5.0 (window 0), is above every span
    out = postprocess(examples, features, start, end, **kwargs)
    assert out.nbest["q"][0]["text"] == "" and out.predictions["q"] == ""
    assert (out.nbest["q"][0]["start_logit"], out.nbest["q"][0]["end_logit"]) == (4.0, 1.0)
    assert out.null_odds["q"] == 5.0 - 4.5
    # Only one span is valid among each window's top-3 starts x top-3 ends ([CLS] and question tokens fill the rest).
    assert [entry["text"] for entry in out.nbest["q"]] == ["", "w1 w2"]


def test_no_valid_span():
    examples = [_example("q", _words(3))]
    features, _ = _features(examples, max_seq_length=10, doc_stride=4)
    start, end = np.zeros((1, 10)), np.zeros((1, 10))
    start[0, :4] = 5.0  # the top starts are [CLS] and the question
    out = postprocess(examples, features, start, end, n_best_size=2)
    assert out.predictions["q"] == ""
    assert out.nbest["q"] == [{"text": "", "probability": 1.0, "start_logit": 0.0, "end_logit": 0.0,
                               "start": -1, "end": -1}]
    out = postprocess(examples, features, start, end, n_best_size=2, version_2_with_negative=True)
    assert out.predictions["q"] == "" and out.null_odds["q"] == math.inf
    assert [entry["text"] for entry in out.nbest["q"]] == [""] and out.nbest["q"][0]["start_logit"] == 5.0


def _reference(examples, features, start_logits, end_logits, n_best_size, max_answer_length, v2, threshold):
    """google-research/bert run_squad.py write_predictions, loop for loop, with the contract's text mapping."""
    features_of = collections.defaultdict(list)
    for f, ex in enumerate(features.example_index):
        features_of[int(ex)].append(f)
    spans, max_context = features.token_char_spans, features.token_is_max_context
    predictions, all_nbest, odds = {}, {}, {}
    for ex, example in enumerate(examples):
        prelim = []
        score_null, min_null, null_start, null_end = 1000000, 0, 0, 0
        for f in features_of[ex]:
            s_logits, e_logits = [float(x) for x in start_logits[f]], [float(x) for x in end_logits[f]]
            best_starts = [i for i, _ in sorted(enumerate(s_logits), key=lambda x: x[1], reverse=True)][:n_best_size]
            best_ends = [i for i, _ in sorted(enumerate(e_logits), key=lambda x: x[1], reverse=True)][:n_best_size]
            if v2 and s_logits[0] + e_logits[0] < score_null:
                score_null, min_null = s_logits[0] + e_logits[0], f
                null_start, null_end = s_logits[0], e_logits[0]
            num_tokens = int(features.inputs["input_mask"][f].sum())
            for s in best_starts:
                for e in best_ends:
                    if s >= num_tokens or e >= num_tokens or spans[f, s, 0] < 0 or spans[f, e, 0] < 0:
                        continue
                    if not max_context[f, s] or e < s or e - s + 1 > max_answer_length:
                        continue
                    prelim.append((f, s, e, s_logits[s], e_logits[e]))
        if v2:
            prelim.append((min_null, 0, 0, null_start, null_end))
        prelim = sorted(prelim, key=lambda x: x[3] + x[4], reverse=True)
        seen, nbest = set(), []
        for f, s, e, s_logit, e_logit in prelim:
            if len(nbest) >= n_best_size:
                break
            if s > 0:
                text = example.context[spans[f, s, 0]:spans[f, e, 1]]
                if text in seen:
                    continue
                nbest.append((text, s_logit, e_logit, int(spans[f, s, 0]), int(spans[f, e, 1])))
            else:
                text = ""
                nbest.append(("", s_logit, e_logit, -1, -1))
            seen.add(text)
        if v2 and "" not in seen:
            nbest.append(("", null_start, null_end, -1, -1))
        if not nbest:
            nbest.append(("", 0.0, 0.0, -1, -1))
        scores = [n[1] + n[2] for n in nbest]
        exps = [math.exp(x - max(scores)) for x in scores]
        all_nbest[example.qas_id] = [
            {"text": n[0], "probability": x / sum(exps), "start_logit": n[1], "end_logit": n[2], "start": n[3],
             "end": n[4]} for n, x in zip(nbest, exps)]
        best_non_null = next((n for n in nbest if n[0]), None)
        if not v2:
            predictions[example.qas_id] = nbest[0][0]
        elif best_non_null is None:
            predictions[example.qas_id], odds[example.qas_id] = "", math.inf
        else:
            odds[example.qas_id] = score_null - best_non_null[1] - best_non_null[2]
            predictions[example.qas_id] = "" if odds[example.qas_id] > threshold else best_non_null[0]
    return predictions, all_nbest, odds if v2 else None


@pytest.mark.parametrize("v2", [False, True])
@pytest.mark.parametrize("n_best_size, max_answer_length, integer_logits", [(20, 30, False), (5, 3, True),
                                                                          (3, 8, True), (40, 2, False)])
def test_equals_original_loop_on_random_windows(v2, n_best_size, max_answer_length, integer_logits):
    rng = random.Random(n_best_size * 7 + max_answer_length)
    vocab = ["alpha", "Beta", "gamma", "δέλτα", ",", "epsilon", "the", "ζ", "x", "Y"]
    examples = [_example(f"q{i}", ("  " if i % 3 == 0 else "").join(
        rng.choice(vocab) + rng.choice([" ", "  ", "\t", ""]) for _ in range(rng.randrange(1, 60))))
        for i in range(25)]
    examples = [ex for ex in examples if TOKEN.search(ex.context)]
    features, _ = _features(examples, max_seq_length=24, doc_stride=rng.randrange(3, 12), question_len=3)
    assert len(features.example_index) > 1.5 * len(examples)  # many windows overlap
    np_rng = np.random.default_rng(n_best_size)
    shape = features.inputs["input_mask"].shape
    if integer_logits:  # ties everywhere: the order among equal scores must match too
        start, end = np_rng.integers(-3, 4, shape).astype(np.float32), np_rng.integers(-3, 4, shape).astype(np.float32)
    else:
        start, end = np_rng.normal(size=shape).astype(np.float32), np_rng.normal(size=shape).astype(np.float32)
    out = postprocess(examples, features, start, end, n_best_size=n_best_size, max_answer_length=max_answer_length,
                      version_2_with_negative=v2, null_score_diff_threshold=0.25)
    predictions, nbest, odds = _reference(examples, features, start, end, n_best_size, max_answer_length, v2, 0.25)
    assert out.predictions == predictions
    assert out.null_odds == odds
    for qas_id, entries in nbest.items():
        ours = out.nbest[qas_id]
        assert [{k: v for k, v in e.items() if k != "probability"} for e in ours] == \
            [{k: v for k, v in e.items() if k != "probability"} for e in entries]
        np.testing.assert_allclose([e["probability"] for e in ours], [e["probability"] for e in entries], rtol=1e-12)


def test_gold_spans_from_real_contexts_come_back_exactly(shared_data):
    """Dev-v1.1 paragraphs: logits pointing at the tokens of the first gold answer give that answer back."""
    data = json.loads((shared_data / "squad" / "v1.1" / "dev-v1.1.json").read_text(encoding="utf-8"))["data"][:2]
    examples = [_example(qa["id"], p["context"], qa["question"], qa["answers"])
                for article in data for p in article["paragraphs"] for qa in p["qas"]]
    features, layout = _features(examples, max_seq_length=96, doc_stride=32, question_len=8)
    rng = np.random.default_rng(0)
    start = rng.normal(size=features.inputs["input_mask"].shape)
    end = rng.normal(size=start.shape)
    expected = {}
    for w, ex in enumerate(features.example_index):
        example = examples[ex]
        answer = example.answers[0]
        tokens = [(m.start(), m.end()) for m in TOKEN.finditer(example.context)]
        a_start, a_end = answer["answer_start"], answer["answer_start"] + len(answer["text"])
        first = next(i for i, (s, e) in enumerate(tokens) if e > a_start)
        last = max(i for i, (s, e) in enumerate(tokens) if s < a_end)
        if first in layout[w] and last in layout[w]:
            start[w, layout[w][first]] += 20.0
            end[w, layout[w][last]] += 20.0
            if features.token_is_max_context[w, layout[w][first]]:
                expected[example.qas_id] = example.context[tokens[first][0]:tokens[last][1]]
    out = postprocess(examples, features, start, end)
    assert len(expected) > 0.95 * len(examples)
    assert {k: out.predictions[k] for k in expected} == expected
    aligned = [ex for ex in examples if ex.qas_id in expected and expected[ex.qas_id] == ex.answers[0]["text"]]
    assert len(aligned) > 0.9 * len(examples)
    dataset = [{"paragraphs": [{"context": ex.context, "qas": [{"id": ex.qas_id, "answers": ex.answers}]}
                               for ex in aligned]}]
    scores = squad_metrics.evaluate(dataset, out.predictions)
    assert scores["exact_match"] == 100.0 and scores["f1"] == 100.0


def test_write_predictions(tmp_path):
    predictions = SquadPredictions(
        predictions={"a": "Größe  X", "b": ""},
        nbest={"a": [{"text": "Größe  X", "probability": 0.75, "start_logit": 1.5, "end_logit": 0.25, "start": 3,
                      "end": 11}, {"text": "", "probability": 0.25, "start_logit": 0.0, "end_logit": 0.5,
                                   "start": -1, "end": -1}],
               "b": [{"text": "", "probability": 1.0, "start_logit": 0.0, "end_logit": 0.0, "start": -1, "end": -1}]},
        null_odds={"a": -1.25, "b": math.inf})
    write_predictions(predictions, tmp_path / "out")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["nbest_predictions.json", "null_odds.json",
                                                                    "predictions.json"]
    raw = (tmp_path / "out" / "predictions.json").read_text(encoding="ascii")
    assert "\\u00df" in raw and raw.endswith("}\n")
    assert json.loads(raw) == predictions.predictions
    assert json.loads((tmp_path / "out" / "nbest_predictions.json").read_text()) == predictions.nbest
    assert json.loads((tmp_path / "out" / "null_odds.json").read_text()) == predictions.null_odds

    write_predictions(SquadPredictions(predictions={"a": "x"}, nbest={"a": []}, null_odds=None), tmp_path / "v1")
    assert sorted(p.name for p in (tmp_path / "v1").iterdir()) == ["nbest_predictions.json", "predictions.json"]


def test_bad_input():
    examples = [_example("q", _words(4))]
    features, _ = _features(examples, max_seq_length=12, doc_stride=4)
    logits = np.zeros((1, 12))
    with pytest.raises(ValueError, match=r"end_logits: expected shape \(1, 12\)"):
        postprocess(examples, features, logits, np.zeros((1, 11)))
    with pytest.raises(ValueError, match=r"start_logits: expected shape \(windows, seq_length\)"):
        postprocess(examples, features, np.zeros(12), logits)
    with pytest.raises(ValueError, match="NaN or infinite"):
        postprocess(examples, features, np.full((1, 12), np.nan), logits)
    with pytest.raises(ValueError, match=r"features.example_index: values must lie in \[0, 0\)"):
        postprocess([], features, logits, logits)
    with pytest.raises(ValueError, match="n_best_size"):
        postprocess(examples, features, logits, logits, n_best_size=0)
