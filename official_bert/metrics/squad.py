"""SQuAD exact match and F1, as the official `evaluate-v1.1.py` and `evaluate-v2.0.py` score them (percentages).

Answers are normalized before comparing: lower case, punctuation (`string.punctuation`) removed, the
articles a/an/the removed, whitespace collapsed. F1 is the bag-of-tokens overlap of the normalized
prediction and gold answer; each question takes its best score over its gold answers.

- v1.1 (`evaluate-v1.1.py`): `exact_match`, `f1`. A question without a prediction scores 0 and is counted
  in `missing_predictions` (the official script prints a line for each).
- v2.0 (`evaluate-v2.0.py`): `exact`, `f1`, `total`, `HasAns_exact`/`_f1`/`_total`,
  `NoAns_exact`/`_f1`/`_total` (each group only when the dataset has such questions) and, given `na_probs`,
  `best_exact`, `best_exact_thresh`, `best_f1`, `best_f1_thresh`. Differences from v1.1 as in the official
  script: a gold answer that normalizes to "" is dropped, a question without gold answers (unanswerable) has
  the single gold answer "", and F1 is 1 when prediction and gold are both empty after normalization. A
  question is answerable when its `answers` list is non-empty (as the official script decides), and
  predicted unanswerable when `na_probs[qid] > na_prob_thresh`. The official v2.0 script fails on a
  missing prediction; here it scores 0 in every figure (also under the threshold search) and is counted in
  `missing_predictions`, so with no missing prediction every figure is the official one.

The v2.0 rules apply when `version="2.0"`, when any question has `is_impossible: true`, or when `na_probs`
is given; otherwise v1.1.

Examples:

>>> data = [{"paragraphs": [{"context": "...", "qas": [{"id": "q1", "answers": [{"text": "the Eiffel Tower"}]}]}]}]
>>> evaluate(data, {"q1": "Eiffel tower"})
{'exact_match': 100.0, 'f1': 100.0, 'total': 1, 'missing_predictions': 0}
"""

import collections
import logging
import numbers
import re
import string
from typing import Dict, List, Optional, Tuple

__all__ = ["evaluate", "normalize_answer", "exact_match_v1", "f1_v1", "exact_v2", "f1_v2"]

logger = logging.getLogger(__name__)

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


def normalize_answer(text: str) -> str:
    """Lower case, remove punctuation, articles and extra whitespace (both official scripts)."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match_v1(prediction: str, gold: str) -> int:
    """1 when the normalized texts are equal (`evaluate-v1.1.py`)."""
    return int(normalize_answer(prediction) == normalize_answer(gold))


def _token_f1(pred_tokens: List[str], gold_tokens: List[str]) -> float:
    num_same = sum((collections.Counter(pred_tokens) & collections.Counter(gold_tokens)).values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(pred_tokens)
    recall = 1.0 * num_same / len(gold_tokens)
    return (2 * precision * recall) / (precision + recall)


def f1_v1(prediction: str, gold: str) -> float:
    """Token F1 of the normalized texts (`evaluate-v1.1.py`: 0 when either is empty)."""
    return _token_f1(normalize_answer(prediction).split(), normalize_answer(gold).split())


def exact_v2(gold: str, prediction: str) -> int:
    """1 when the normalized texts are equal (`evaluate-v2.0.py`'s compute_exact; gold first, as there)."""
    return int(normalize_answer(gold) == normalize_answer(prediction))


def f1_v2(gold: str, prediction: str) -> float:
    """Token F1 (`evaluate-v2.0.py`'s compute_f1): when either side is empty, 1 if both are, else 0."""
    gold_tokens = normalize_answer(gold).split() if gold else []
    pred_tokens = normalize_answer(prediction).split() if prediction else []
    if not gold_tokens or not pred_tokens:
        return int(gold_tokens == pred_tokens)
    return _token_f1(pred_tokens, gold_tokens)


def _questions(dataset) -> List[Tuple[str, List[str], bool]]:
    """(id, gold answer texts, is_impossible) of every question, checking the structure on the way."""
    if isinstance(dataset, dict):
        hint = ' (pass the JSON\'s "data" list, not the whole file)' if "data" in dataset else ""
        raise ValueError(f"dataset: expected a list of articles, got a dict{hint}")
    if not isinstance(dataset, (list, tuple)):
        raise ValueError(f"dataset: expected a list of articles, got {type(dataset).__name__}")

    def expect(value, kind, where, what):
        if not isinstance(value, kind):
            raise ValueError(f"{where}: expected {what}, got {type(value).__name__}")
        return value

    questions = []
    seen = set()
    for a, article in enumerate(dataset):
        where = f"dataset[{a}]"
        expect(article, dict, where, 'an article (a dict with "paragraphs")')
        if "paragraphs" not in article:
            raise ValueError(f'{where}: article has no "paragraphs" field')
        paragraphs = expect(article["paragraphs"], list, f'{where}["paragraphs"]', "a list")
        for p, paragraph in enumerate(paragraphs):
            where_p = f'{where}["paragraphs"][{p}]'
            expect(paragraph, dict, where_p, 'a paragraph (a dict with "qas")')
            if "qas" not in paragraph:
                raise ValueError(f'{where_p}: paragraph has no "qas" field')
            qas = expect(paragraph["qas"], list, f'{where_p}["qas"]', "a list")
            for q, qa in enumerate(qas):
                where_q = f'{where_p}["qas"][{q}]'
                expect(qa, dict, where_q, 'a question (a dict with "id" and "answers")')
                for field in ("id", "answers"):
                    if field not in qa:
                        raise ValueError(f'{where_q}: question has no "{field}" field')
                qid = expect(qa["id"], str, f'{where_q}["id"]', "a string")
                if qid in seen:
                    raise ValueError(f'{where_q}["id"]: duplicate question id {qid!r}')
                seen.add(qid)
                answers = expect(qa["answers"], list, f'{where_q}["answers"]', "a list")
                texts = []
                for i, answer in enumerate(answers):
                    where_a = f'{where_q}["answers"][{i}]'
                    expect(answer, dict, where_a, 'an answer (a dict with "text")')
                    if "text" not in answer:
                        raise ValueError(f'{where_a}: answer has no "text" field')
                    texts.append(expect(answer["text"], str, f'{where_a}["text"]', "a string"))
                impossible = qa.get("is_impossible", False)
                expect(impossible, bool, f'{where_q}["is_impossible"]', "true or false")
                questions.append((qid, texts, impossible))
    if not questions:
        raise ValueError("dataset: no questions to score")
    return questions


def _check_predictions(predictions) -> None:
    if not isinstance(predictions, dict):
        raise ValueError(f"predictions: expected a dict of question id -> answer text, got "
                         f"{type(predictions).__name__}")
    for qid, text in predictions.items():
        if not isinstance(text, str):
            raise ValueError(f"predictions[{qid!r}]: expected the answer text (a string), got {type(text).__name__}")


def _check_na_probs(na_probs, questions) -> None:
    if not isinstance(na_probs, dict):
        raise ValueError(f"na_probs: expected a dict of question id -> no-answer probability, got "
                         f"{type(na_probs).__name__}")
    for qid, value in na_probs.items():
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ValueError(f"na_probs[{qid!r}]: expected a number, got {type(value).__name__}")
    absent = [qid for qid, _, _ in questions if qid not in na_probs]
    if absent:
        raise ValueError(f"na_probs: no entry for {len(absent)} question id(s), e.g. {absent[:5]}")


def _report_missing(missing: List[str]) -> None:
    if missing:
        logger.warning("%d question(s) have no prediction and score 0, e.g. %s", len(missing), missing[:5])


def _evaluate_v1(questions, predictions) -> Dict[str, float]:
    exact_match = f1 = 0
    missing = []
    for qid, golds, _ in questions:
        if qid not in predictions:
            missing.append(qid)
            continue
        prediction = predictions[qid]
        exact_match += max(exact_match_v1(prediction, gold) for gold in golds)
        f1 += max(f1_v1(prediction, gold) for gold in golds)
    _report_missing(missing)
    total = len(questions)
    return {"exact_match": 100.0 * exact_match / total, "f1": 100.0 * f1 / total, "total": total,
            "missing_predictions": len(missing)}


def _best_thresh(predictions, scores, na_probs, has_ans, total) -> Tuple[float, float]:
    """`find_best_thresh` of evaluate-v2.0.py; a question without a prediction counts 0 at every threshold."""
    cur_score = sum(1 for qid, answerable in has_ans.items() if not answerable and qid in scores)
    best_score, best_thresh = cur_score, 0.0
    for qid in sorted(na_probs, key=lambda k: na_probs[k]):
        if qid not in scores:
            continue
        if has_ans[qid]:
            diff = scores[qid]
        else:
            diff = -1 if predictions[qid] else 0
        cur_score += diff
        if cur_score > best_score:
            best_score, best_thresh = cur_score, na_probs[qid]
    return 100.0 * best_score / total, best_thresh


def _evaluate_v2(questions, predictions, na_probs, na_prob_thresh) -> Dict[str, float]:
    has_ans = {qid: bool(golds) for qid, golds, _ in questions}
    exact_raw, f1_raw, missing = {}, {}, []
    for qid, golds, _ in questions:
        if qid not in predictions:
            missing.append(qid)
            continue
        golds = [gold for gold in golds if normalize_answer(gold)] or [""]
        prediction = predictions[qid]
        exact_raw[qid] = max(exact_v2(gold, prediction) for gold in golds)
        f1_raw[qid] = max(f1_v2(gold, prediction) for gold in golds)
    _report_missing(missing)
    probs = na_probs if na_probs is not None else {qid: 0.0 for qid in predictions}

    def threshold(raw):
        return {qid: (float(not has_ans[qid]) if probs[qid] > na_prob_thresh else score)
                for qid, score in raw.items()}

    exact, f1 = threshold(exact_raw), threshold(f1_raw)
    qids = [qid for qid, _, _ in questions]

    def figures(subset):
        total = len(subset)
        return {"exact": 100.0 * sum(exact.get(k, 0) for k in subset) / total,
                "f1": 100.0 * sum(f1.get(k, 0) for k in subset) / total, "total": total}

    results = figures(qids)
    for prefix, subset in (("HasAns", [k for k in qids if has_ans[k]]), ("NoAns", [k for k in qids if not has_ans[k]])):
        if subset:
            results.update({f"{prefix}_{key}": value for key, value in figures(subset).items()})
    if na_probs is not None:
        results["best_exact"], results["best_exact_thresh"] = _best_thresh(predictions, exact_raw, na_probs,
                                                                           has_ans, len(qids))
        results["best_f1"], results["best_f1_thresh"] = _best_thresh(predictions, f1_raw, na_probs, has_ans,
                                                                     len(qids))
    results["missing_predictions"] = len(missing)
    return results


def evaluate(dataset, predictions, na_probs=None, na_prob_thresh=1.0, version: Optional[str] = None) -> dict:
    """The official SQuAD figures of `predictions` on `dataset` (percentages).

    Args:
        dataset: the SQuAD JSON's "data" list: articles with "paragraphs", each with "qas", each question
            with "id", "answers" ([{"text": ...}]) and, in v2.0, "is_impossible".
        predictions: question id -> predicted answer text ("" predicts no answer in v2.0). Ids not in the
            dataset are ignored, as by the official scripts.
        na_probs: optional question id -> probability (or any score) that the question has no answer, e.g.
            `SquadPredictions.null_odds`; selects v2.0 scoring and adds the best-threshold figures.
        na_prob_thresh: a question whose `na_probs` value exceeds this is scored as predicted unanswerable.
        version: "1.1" or "2.0" to choose the rules; None decides from the data (see the module doc).

    Returns:
        v1.1: {"exact_match", "f1", "total", "missing_predictions"}; v2.0: the keys of `evaluate-v2.0.py`
        plus "missing_predictions".

    Raises:
        ValueError: a malformed dataset (naming the article/paragraph/question and field), predictions that
            are not a dict of strings, or `na_probs` that is not a dict of numbers covering every question.
    """
    if version not in (None, "1.1", "2.0"):
        raise ValueError(f"version: expected None, '1.1' or '2.0', got {version!r}")
    questions = _questions(dataset)
    _check_predictions(predictions)
    if na_probs is not None:
        _check_na_probs(na_probs, questions)
    if version is None:
        version = "2.0" if na_probs is not None or any(impossible for _, _, impossible in questions) else "1.1"
    if version == "1.1":
        if na_probs is not None:
            raise ValueError("na_probs is only used by SQuAD v2.0 scoring, but version='1.1' was asked for")
        if any(not golds for _, golds, _ in questions):
            empty = next(qid for qid, golds, _ in questions if not golds)
            raise ValueError(f"question {empty!r} has no gold answer; SQuAD v1.1 scoring needs one "
                             f"(use version='2.0' for unanswerable questions)")
        return _evaluate_v1(questions, predictions)
    return _evaluate_v2(questions, predictions, na_probs, na_prob_thresh)
