"""From start/end logits over SQuAD windows to answer texts, n-best lists and v2.0 null odds (original BERT rules).

For each window the `n_best_size` highest start logits and the `n_best_size` highest end logits are taken
(over all positions, as the original `_get_best_indexes`; ties go to the lower position) and every
start/end pair is a candidate span. A candidate survives when both ends are context tokens of the window
(`token_char_spans >= 0`, inside `input_mask`), the start token has its maximum context in this window
(`token_is_max_context`), end >= start, and end - start + 1 <= `max_answer_length`. Candidates of all
windows of an example are ranked by start + end logit (ties keep window, start-rank, end-rank order) and
the first `n_best_size` distinct texts form the n-best list. The text is `context[start_char:end_char]`
of the span's first and last tokens, so casing, accents and inner whitespace come back exactly.

SQuAD v2.0 (`version_2_with_negative`): the null score is the minimum over the example's windows of
start_logits[0] + end_logits[0] ([CLS]); the null answer "" competes in the ranking (after non-null spans
of equal score) and is appended to the n-best when it did not make the first `n_best_size`, as in the
original (so a v2 list can have `n_best_size + 1` entries). `null_odds` = null score - the best non-null
score, and the prediction is "" when it exceeds `null_score_diff_threshold`.

Probabilities are the softmax of the n-best total scores. Where the original would write a made-up
"empty" answer (no valid span in any window), the prediction is "" with one n-best entry
{"text": "", "probability": 1.0, ...} (v2: the null entry) and, in v2, `null_odds` = +inf; such examples
are counted in a warning.

Examples:

>>> out = postprocess(examples, features, start_logits, end_logits, version_2_with_negative=True)
>>> out.predictions[qas_id]          # the answer text, or "" (no answer)
>>> out.nbest[qas_id][0]["text"]     # best non-null or null candidate, with its probability and offsets
>>> write_predictions(out, model_dir)  # predictions.json, nbest_predictions.json, null_odds.json
"""

import dataclasses
import json
import logging
import math
import os
from typing import Dict, List, Optional

import numpy as np

__all__ = ["SquadPredictions", "postprocess", "write_predictions"]

logger = logging.getLogger(__name__)

# What `write_predictions` writes (null_odds.json: SQuAD 2.0 only).
PREDICTION_FILES = ("predictions.json", "nbest_predictions.json", "null_odds.json")


@dataclasses.dataclass
class SquadPredictions:
    """Answers of a set of SQuAD examples.

    Args:
        predictions: qas_id -> answer text ("" = no answer, v2).
        nbest: qas_id -> the n-best answers, best first, each {"text", "probability", "start_logit",
            "end_logit", "start", "end"}; start/end are [start, end) character offsets into the context,
            -1 for the null answer.
        null_odds: v2 only: qas_id -> null score - best non-null score (+inf when no span was valid).
    """

    predictions: Dict[str, str]
    nbest: Dict[str, List[dict]]
    null_odds: Optional[Dict[str, float]] = None


def _check_inputs(examples, features, start_logits, end_logits):
    """The arrays used, validated: (start, end) float64 (n, seq), example_index, spans, usable-token masks."""
    start = np.asarray(start_logits)
    end = np.asarray(end_logits)
    example_index = np.asarray(features.example_index)
    spans = np.asarray(features.token_char_spans)
    max_context = np.asarray(features.token_is_max_context)
    mask = np.asarray(features.inputs["input_mask"])
    if start.ndim != 2:
        raise ValueError(f"start_logits: expected shape (windows, seq_length), got {start.shape}")
    n, seq = start.shape
    for name, array, shape in (("end_logits", end, (n, seq)), ("features.example_index", example_index, (n,)),
                               ("features.token_char_spans", spans, (n, seq, 2)),
                               ("features.token_is_max_context", max_context, (n, seq)),
                               ('features.inputs["input_mask"]', mask, (n, seq))):
        if array.shape != shape:
            raise ValueError(f"{name}: expected shape {shape} to match start_logits {start.shape}, got {array.shape}")
    if not (np.all(np.isfinite(start)) and np.all(np.isfinite(end))):
        raise ValueError("start_logits/end_logits: contain NaN or infinite values")
    if n and (example_index.min() < 0 or example_index.max() >= len(examples)):
        raise ValueError(f"features.example_index: values must lie in [0, {len(examples)}) (the examples), got "
                         f"[{example_index.min()}, {example_index.max()}]")
    usable = (spans[:, :, 0] >= 0) & (spans[:, :, 1] >= spans[:, :, 0]) & (mask != 0)  # (n, seq)
    return (start.astype(np.float64), end.astype(np.float64), example_index.astype(np.int64), spans, usable,
            usable & max_context.astype(bool))


def _candidates(start, end, usable, start_ok, n_best_size, max_answer_length):
    """All valid (window, start, end) spans from each window's top-k starts x top-k ends, in original loop order."""
    k = min(n_best_size, start.shape[1])
    start_top = np.argsort(-start, axis=1, kind="stable")[:, :k]  # (n, k) positions, best first
    end_top = np.argsort(-end, axis=1, kind="stable")[:, :k]  # (n, k)
    s = start_top[:, :, None]  # (n, k, 1)
    e = end_top[:, None, :]  # (n, 1, k)
    valid = (np.take_along_axis(start_ok, start_top, axis=1)[:, :, None]
             & np.take_along_axis(usable, end_top, axis=1)[:, None, :]
             & (e >= s) & (e - s + 1 <= max_answer_length))  # (n, k, k)
    window, i, j = np.nonzero(valid)  # row-major: window, start rank, end rank (the original's loop order)
    start_pos = start_top[window, i]
    end_pos = end_top[window, j]
    return window, start_pos, end_pos


def _softmax(scores: List[float]) -> List[float]:
    top = max(scores)
    exps = [math.exp(score - top) for score in scores]
    total = sum(exps)
    return [x / total for x in exps]


def postprocess(examples, features, start_logits, end_logits, n_best_size=20, max_answer_length=30,
                version_2_with_negative=False, null_score_diff_threshold=0.0) -> SquadPredictions:
    """Answers, n-best lists and (v2) null odds from the model's start/end logits over `features`' windows.

    Args:
        examples: the SquadExample list (`qas_id` and `context` are used).
        features: SquadFeatures of those examples (`example_index`, `token_char_spans`,
            `token_is_max_context` and `inputs["input_mask"]` are used).
        start_logits: (n, seq) float array aligned with the features' windows.
        end_logits: (n, seq) float array.
        n_best_size: number of start and of end positions taken per window, and of n-best answers kept.
        max_answer_length: the longest answer in word pieces.
        version_2_with_negative: SQuAD v2.0: score the null answer and fill `null_odds`.
        null_score_diff_threshold: v2: predict "" when null score - best non-null score exceeds this.

    Returns:
        SquadPredictions with an entry for every example.

    Raises:
        ValueError: shapes that do not match, non-finite logits, example indices out of range, or
            `n_best_size`/`max_answer_length` below 1.
    """
    if n_best_size < 1 or max_answer_length < 1:
        raise ValueError(f"n_best_size and max_answer_length must be >= 1, got {n_best_size}, {max_answer_length}")
    start, end, example_index, spans, usable, start_ok = _check_inputs(examples, features, start_logits, end_logits)
    window, start_pos, end_pos = _candidates(start, end, usable, start_ok, n_best_size, max_answer_length)
    score = start[window, start_pos] + end[window, end_pos]
    owner = example_index[window]
    order = np.lexsort((np.arange(len(score)), -score, owner))  # by example, score descending, then loop order
    window, start_pos, end_pos, score, owner = (a[order] for a in (window, start_pos, end_pos, score, owner))
    bounds = np.searchsorted(owner, np.arange(len(examples) + 1))

    if version_2_with_negative:  # first window with the minimum [CLS] score of each example
        null_scores = start[:, 0] + end[:, 0]
        null_order = np.lexsort((np.arange(len(null_scores)), null_scores, example_index))
        null_bounds = np.searchsorted(example_index[null_order], np.arange(len(examples) + 1))

    predictions, nbest_all = {}, {}
    null_odds = {} if version_2_with_negative else None
    no_span = []
    for ex, example in enumerate(examples):
        context = example.context
        null_entry = None
        if version_2_with_negative and null_bounds[ex] < null_bounds[ex + 1]:
            w = null_order[null_bounds[ex]]
            null_entry = {"text": "", "start_logit": float(start[w, 0]), "end_logit": float(end[w, 0]),
                          "start": -1, "end": -1}
            null_score = float(null_scores[w])
        nbest, seen, null_added = [], set(), null_entry is None
        for c in range(bounds[ex], bounds[ex + 1]):
            if len(nbest) >= n_best_size:
                break
            if not null_added and score[c] < null_score:  # the null prelim sorts after equal non-null scores
                nbest.append(null_entry)
                seen.add("")
                null_added = True
                if len(nbest) >= n_best_size:
                    break
            w = window[c]
            char_start, char_end = int(spans[w, start_pos[c], 0]), int(spans[w, end_pos[c], 1])
            text = context[char_start:char_end]
            if text in seen:
                continue
            seen.add(text)
            nbest.append({"text": text, "start_logit": float(start[w, start_pos[c]]),
                          "end_logit": float(end[w, end_pos[c]]), "start": char_start, "end": char_end})
        if not null_added:
            nbest.append(null_entry)
        best_non_null = next((entry for entry in nbest if entry["text"]), None)
        if best_non_null is None:
            no_span.append(example.qas_id)
        if not nbest:
            nbest.append({"text": "", "start_logit": 0.0, "end_logit": 0.0, "start": -1, "end": -1})
        for entry, probability in zip(nbest, _softmax([e["start_logit"] + e["end_logit"] for e in nbest])):
            entry["probability"] = probability
        nbest_all[example.qas_id] = [{key: entry[key] for key in ("text", "probability", "start_logit", "end_logit",
                                                                  "start", "end")} for entry in nbest]
        if not version_2_with_negative:
            predictions[example.qas_id] = nbest[0]["text"]
        elif best_non_null is None:
            null_odds[example.qas_id] = math.inf
            predictions[example.qas_id] = ""
        else:
            diff = null_score - best_non_null["start_logit"] - best_non_null["end_logit"]
            null_odds[example.qas_id] = diff
            predictions[example.qas_id] = "" if diff > null_score_diff_threshold else best_non_null["text"]
    if no_span:
        logger.warning("%d example(s) have no valid answer span in any window and predict \"\", e.g. %s",
                       len(no_span), no_span[:5])
    return SquadPredictions(predictions=predictions, nbest=nbest_all, null_odds=null_odds)


def write_predictions(predictions: SquadPredictions, output_dir) -> None:
    """Writes predictions.json, nbest_predictions.json and (v2) null_odds.json into `output_dir`.

    The files are indented JSON objects keyed by qas_id, as the original run_squad.py writes them
    (non-ASCII escaped; an infinite null odd is written as `Infinity`, which Python's json reads).

    Args:
        predictions: the output of `postprocess`.
        output_dir: the directory (created when missing).
    """
    os.makedirs(output_dir, exist_ok=True)
    contents = (predictions.predictions, predictions.nbest, predictions.null_odds)
    for name, values in ((n, v) for n, v in zip(PREDICTION_FILES, contents) if v is not None):
        with open(os.path.join(output_dir, name), "w", encoding="utf-8") as f:
            f.write(json.dumps(values, indent=4) + "\n")
