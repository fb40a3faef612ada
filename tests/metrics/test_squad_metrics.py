"""SQuAD EM/F1 against the official evaluate-v1.1.py and evaluate-v2.0.py, run unmodified as shipped in `nlp==0.4.0`.

The official scripts are run as command-line programs on JSON files written here (the way SQuAD results are
scored), on the real dev sets with predictions derived deterministically from the gold answers (exact,
other gold, truncated, re-cased, punctuation and article changes, extra words, wrong answers, empty,
missing), and every figure is compared.
"""

import importlib.metadata
import importlib.util
import json
import random
import subprocess
import sys

import pytest

from official_bert.metrics import squad

V1_SCRIPT = "nlp/metrics/squad/eb12b0cf342c0783e540db14b5a02beff2fa6fbe735cadb01e7646e54a783ce7/evaluate.py"
# The v2.0 script as published (two-space indents; the other copy in nlp is the same code reformatted).
V2_SCRIPT = "nlp/metrics/squad_v2/a15e787c76889174874386d3def75321f0284c11730d2a57e28fe1352c9b5c7a/evaluate.py"


def _script(relative):
    path = importlib.metadata.distribution("nlp").locate_file(relative)
    assert path.is_file(), f"official script not found at {path}"
    return str(path)


def _load_script(name, relative):
    """The official evaluation script at `relative` (inside the `nlp` package), imported as module `name`."""
    spec = importlib.util.spec_from_file_location(name, _script(relative))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def official_v1():
    return _load_script("official_squad_v1", V1_SCRIPT)


@pytest.fixture(scope="module")
def official_v2():
    return _load_script("official_squad_v2", V2_SCRIPT)


def _run_official_v1(tmp_path, dataset_json, predictions):
    data_file, pred_file = tmp_path / "data.json", tmp_path / "pred.json"
    data_file.write_text(json.dumps(dataset_json))
    pred_file.write_text(json.dumps(predictions))
    out = subprocess.run([sys.executable, _script(V1_SCRIPT), str(data_file), str(pred_file)], check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout), out.stderr


def _run_official_v2(tmp_path, dataset_json, predictions, na_probs=None, thresh=None):
    data_file, pred_file, out_file = tmp_path / "data.json", tmp_path / "pred.json", tmp_path / "eval.json"
    data_file.write_text(json.dumps(dataset_json))
    pred_file.write_text(json.dumps(predictions))
    command = [sys.executable, _script(V2_SCRIPT), str(data_file), str(pred_file), "-o", str(out_file)]
    if na_probs is not None:
        (tmp_path / "na.json").write_text(json.dumps(na_probs))
        command += ["-n", str(tmp_path / "na.json")]
    if thresh is not None:
        command += ["-t", repr(thresh)]
    subprocess.run(command, check=True, capture_output=True, text=True)
    return json.loads(out_file.read_text())


@pytest.fixture(scope="module")
def dev_v1(shared_data):
    return json.loads((shared_data / "squad" / "v1.1" / "dev-v1.1.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def dev_v2(shared_data):
    return json.loads((shared_data / "squad" / "v2.0" / "cs224n-dev-half-v2.0.json").read_text(encoding="utf-8"))


def _questions(dataset):
    return [(qa, paragraph["context"]) for article in dataset for paragraph in article["paragraphs"]
            for qa in paragraph["qas"]]


def _perturb(answer, context, other, rng):
    """A deterministic variant of a gold answer: each kind of difference the normalization must (not) absorb."""
    words = answer.split()
    kind = rng.randrange(14)
    if kind == 0:
        return answer
    if kind == 1:
        return answer.upper()
    if kind == 2:
        return " ".join(words[1:]) if len(words) > 1 else answer[: max(1, len(answer) // 2)]
    if kind == 3:
        return " ".join(words[:-1]) if len(words) > 1 else answer + "s"
    if kind == 4:
        return "The " + answer + "."
    if kind == 5:
        return "  " + answer.replace(" ", "   ") + " ,"
    if kind == 6:
        return answer + " and " + other
    if kind == 7:
        return other
    if kind == 8:
        return ""
    if kind == 9:
        return "".join(ch for ch in answer if ch.isalnum() or ch == " ")
    if kind == 10:
        start = context.find(answer)
        return context[max(0, start - 15): start + len(answer) + 15] if start >= 0 else answer
    if kind == 11:
        return "a an the"
    if kind == 12:
        return answer.replace("-", " - ").replace("'", "")
    return answer.lower() + " " + answer.lower()  # repeated tokens: the Counter intersection


def _v1_predictions(dataset, seed, missing_every=0):
    rng = random.Random(seed)
    questions = _questions(dataset)
    predictions = {}
    for i, (qa, context) in enumerate(questions):
        if missing_every and i % missing_every == 3:
            continue
        golds = [a["text"] for a in qa["answers"]]
        other = questions[(i * 7 + 1) % len(questions)][0]["answers"][0]["text"]
        predictions[qa["id"]] = _perturb(rng.choice(golds), context, other, rng)
    return predictions


def test_normalization_and_scores_equal_official_on_hard_strings(official_v1, official_v2):
    pairs = [("The Eiffel Tower", "eiffel tower"), ("theatre", "atheatre"), ("an apple", "apple"),
             ("Straße  Café", "strasse cafe"), ("Ünïcode!", "ünïcode"), ("", ""), ("the", "a"), ("", "x"),
             ("U.S.", "US"), ("1,000", "1000"), ("rock 'n' roll", "rock n roll"), ("A-B", "AB"), ("A–B", "A B"),
             ("New\tYork\n", "new york"), ("the the the", "the"), ("x y x", "x x y"), ("«quoted»", "quoted")]
    for a, b in pairs:
        assert squad.normalize_answer(a) == official_v1.normalize_answer(a) == official_v2.normalize_answer(a)
        assert squad.exact_match_v1(a, b) == official_v1.exact_match_score(a, b)
        assert squad.f1_v1(a, b) == official_v1.f1_score(a, b)
        assert squad.exact_v2(a, b) == official_v2.compute_exact(a, b)
        assert squad.f1_v2(a, b) == official_v2.compute_f1(a, b)


def test_v1_equals_official_on_full_dev(dev_v1, tmp_path):
    predictions = _v1_predictions(dev_v1["data"], seed=0)
    theirs, _ = _run_official_v1(tmp_path, dev_v1, predictions)
    ours = squad.evaluate(dev_v1["data"], predictions)
    assert set(ours) == {"exact_match", "f1", "total", "missing_predictions"}
    assert ours["exact_match"] == theirs["exact_match"]
    assert ours["f1"] == theirs["f1"]
    assert ours["total"] == 10570 and ours["missing_predictions"] == 0
    assert 20 < ours["exact_match"] < 80  # the perturbations give a real mix of right and wrong


def test_v1_first_gold_answers_score_100(dev_v1, tmp_path):
    predictions = {qa["id"]: qa["answers"][0]["text"] for qa, _ in _questions(dev_v1["data"])}
    theirs, _ = _run_official_v1(tmp_path, dev_v1, predictions)
    ours = squad.evaluate(dev_v1["data"], predictions)
    assert ours["exact_match"] == theirs["exact_match"] == 100.0
    assert ours["f1"] == theirs["f1"] == 100.0


def test_v1_missing_predictions_count_zero_and_are_reported(dev_v1, tmp_path, caplog):
    articles = dev_v1["data"][:5]
    predictions = _v1_predictions(articles, seed=1, missing_every=9)
    expected_missing = sum(1 for qa, _ in _questions(articles) if qa["id"] not in predictions)
    theirs, stderr = _run_official_v1(tmp_path, {"version": "1.1", "data": articles}, predictions)
    with caplog.at_level("WARNING", logger="official_bert.metrics.squad"):
        ours = squad.evaluate(articles, predictions)
    assert stderr.count("will receive score 0") == expected_missing > 0
    assert ours["missing_predictions"] == expected_missing
    assert f"{expected_missing} question(s) have no prediction" in caplog.text
    assert ours["exact_match"] == theirs["exact_match"] and ours["f1"] == theirs["f1"]


def _v2_inputs(dataset, seed, tie_step=0.1):
    """Predictions and na_probs for every question; na_probs rounded to `tie_step` so ties exercise the order."""
    rng = random.Random(seed)
    questions = _questions(dataset)
    answerable = [qa for qa, _ in questions if qa["answers"]]
    predictions, na_probs = {}, {}
    for i, (qa, context) in enumerate(questions):
        other = answerable[(i * 7 + 1) % len(answerable)]["answers"][0]["text"]
        if qa["answers"]:
            text = _perturb(rng.choice(qa["answers"])["text"], context, other, rng)
            prob = rng.random() * 0.8
        elif rng.random() < 0.5:
            text, prob = "", 0.3 + rng.random() * 0.7
        else:
            plausible = qa.get("plausible_answers") or [{"text": other}]
            text, prob = plausible[0]["text"], rng.random()
        predictions[qa["id"]] = text
        na_probs[qa["id"]] = round(prob / tie_step) * tie_step if tie_step else prob
    return predictions, na_probs


@pytest.mark.parametrize("thresh", [1.0, 0.5, 0.0])
@pytest.mark.parametrize("tie_step", [0.1, 0])
def test_v2_equals_official_with_na_probs(dev_v2, tmp_path, thresh, tie_step):
    predictions, na_probs = _v2_inputs(dev_v2["data"], seed=2, tie_step=tie_step)
    theirs = _run_official_v2(tmp_path, dev_v2, predictions, na_probs, thresh)
    ours = squad.evaluate(dev_v2["data"], predictions, na_probs=na_probs, na_prob_thresh=thresh)
    assert list(ours) == list(theirs) + ["missing_predictions"]
    for key, value in theirs.items():
        assert ours[key] == value, key
    assert ours["total"] == 6078 and ours["HasAns_total"] == 2910 and ours["NoAns_total"] == 3168


def test_v2_equals_official_without_na_probs(dev_v2, tmp_path):
    predictions, _ = _v2_inputs(dev_v2["data"], seed=3)
    theirs = _run_official_v2(tmp_path, dev_v2, predictions)
    ours = squad.evaluate(dev_v2["data"], predictions)  # v2 detected from is_impossible
    assert "best_f1" not in ours
    assert {k: ours[k] for k in theirs} == theirs
    gold = {qa["id"]: (qa["answers"][0]["text"] if qa["answers"] else "") for qa, _ in _questions(dev_v2["data"])}
    perfect = squad.evaluate(dev_v2["data"], gold)
    assert perfect == {**_run_official_v2(tmp_path, dev_v2, gold), "missing_predictions": 0}
    assert perfect["exact"] == perfect["f1"] == 100.0


def test_v2_only_answerable_subset_has_no_noans_group(dev_v2, tmp_path):
    articles = [{"paragraphs": [{"context": p["context"], "qas": [qa for qa in p["qas"] if qa["answers"]]}
                                for p in article["paragraphs"]]} for article in dev_v2["data"][:3]]
    predictions, na_probs = _v2_inputs(articles, seed=4)
    theirs = _run_official_v2(tmp_path, {"version": "v2.0", "data": articles}, predictions, na_probs)
    ours = squad.evaluate(articles, predictions, na_probs=na_probs)
    assert "NoAns_total" not in ours
    assert {k: ours[k] for k in theirs} == theirs
    explicit = squad.evaluate(articles, predictions, version="2.0")
    assert {k: explicit[k] for k in ("exact", "f1")} == {k: ours[k] for k in ("exact", "f1")}


def test_v2_missing_predictions_score_zero(dev_v2, tmp_path):
    articles = dev_v2["data"][:4]
    predictions, na_probs = _v2_inputs(articles, seed=5)
    dropped = [qa["id"] for i, (qa, _) in enumerate(_questions(articles)) if i % 11 == 0]
    kept = {k: v for k, v in predictions.items() if k not in dropped}
    ours = squad.evaluate(articles, kept, na_probs=na_probs)
    assert ours["missing_predictions"] == len(dropped)
    # The official script fails on a missing prediction; an answer that can never score stands in for it:
    # for an answerable question it is 0 in every figure, for an unanswerable one in all but best_*.
    garbage = {**predictions, **{k: "\u2603 xyzzy" for k in dropped}}
    theirs = _run_official_v2(tmp_path, {"version": "v2.0", "data": articles}, garbage, na_probs)
    has_ans = {qa["id"]: bool(qa["answers"]) for qa, _ in _questions(articles)}
    for key, value in theirs.items():
        if not key.startswith("best_") or all(has_ans[k] for k in dropped):
            assert ours[key] == value, key
    with pytest.raises(subprocess.CalledProcessError):
        _run_official_v2(tmp_path, {"version": "v2.0", "data": articles}, kept, na_probs)


def test_na_prob_threshold_flips_to_no_answer():
    data = [{"paragraphs": [{"context": "c", "qas": [
        {"id": "a", "answers": [{"text": "Paris"}]}, {"id": "b", "answers": [], "is_impossible": True}]}]}]
    predictions = {"a": "Paris", "b": "London"}
    low = squad.evaluate(data, predictions, na_probs={"a": 0.2, "b": 0.9}, na_prob_thresh=0.5)
    assert (low["HasAns_exact"], low["NoAns_exact"]) == (100.0, 100.0)  # b counted as predicted unanswerable
    high = squad.evaluate(data, predictions, na_probs={"a": 0.2, "b": 0.9}, na_prob_thresh=1.0)
    assert (high["HasAns_exact"], high["NoAns_exact"]) == (100.0, 0.0)
    assert high["best_exact"] == 100.0 and high["best_exact_thresh"] == 0.2


@pytest.mark.parametrize("dataset, predictions, message", [
    ({"version": "1.1", "data": []}, {}, 'pass the JSON\'s "data" list'),
    ([{"title": "x"}], {}, 'dataset[0]: article has no "paragraphs"'),
    ([{"paragraphs": [{"context": "c"}]}], {}, 'dataset[0]["paragraphs"][0]: paragraph has no "qas"'),
    ([{"paragraphs": [{"qas": [{"id": "q", "answers": "Paris"}]}]}], {}, '["qas"][0]["answers"]: expected a list'),
    ([{"paragraphs": [{"qas": [{"id": 3, "answers": []}]}]}], {}, '["qas"][0]["id"]: expected a string'),
    ([{"paragraphs": [{"qas": [{"id": "q", "answers": [{"txt": "P"}]}]}]}], {}, 'answer has no "text" field'),
    ([{"paragraphs": [{"qas": [{"id": "q", "answers": [{"text": "P"}]}]}]}], ["P"], "predictions: expected a dict"),
    ([{"paragraphs": [{"qas": [{"id": "q", "answers": [{"text": "P"}]}]}]}], {"q": 1}, "predictions['q']"),
    ([{"paragraphs": [{"qas": [{"id": "q", "answers": [{"text": "P"}]}, {"id": "q", "answers": []}]}]}], {},
     "duplicate question id 'q'"),
    ([], {}, "no questions to score"),
])
def test_bad_input_names_the_field(dataset, predictions, message):
    with pytest.raises(ValueError, match=None) as error:
        squad.evaluate(dataset, predictions)
    assert message in str(error.value)


def test_bad_na_probs_and_version():
    data = [{"paragraphs": [{"qas": [{"id": "q", "answers": [{"text": "P"}]}, {"id": "r", "answers": []}]}]}]
    with pytest.raises(ValueError, match=r"na_probs: no entry for 1 question id\(s\), e.g. \['r'\]"):
        squad.evaluate(data, {"q": "P"}, na_probs={"q": 0.1})
    with pytest.raises(ValueError, match=r"na_probs\['q'\]: expected a number"):
        squad.evaluate(data, {"q": "P"}, na_probs={"q": "high", "r": 0.2})
    with pytest.raises(ValueError, match="question 'r' has no gold answer"):
        squad.evaluate(data, {"q": "P"}, version="1.1")
    with pytest.raises(ValueError, match="version"):
        squad.evaluate(data, {"q": "P"}, version="3")
