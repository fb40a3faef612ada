"""Entity-level precision, recall and F1 of tag sequences, as conlleval.pl and seqeval's default mode count them.

An entity is a maximal chunk of tags found by conlleval's rules (the ones `seqeval.metrics` uses when no
`mode`/`scheme` is given): a chunk starts at `B-`/`S-`, at an `I-`/`E-` after `O` or after a chunk's
end, or where the type changes; it ends before `B-`/`S-`/`O`, after `E-`/`S-`, or where the type
changes. So `I-PER` without a `B-PER` still starts a PER entity, and `B-PER I-LOC` is two entities.
Sentences are joined with an `O` between them, so no entity crosses a sentence boundary. A predicted
entity counts as correct when its type, first and last word equal a true entity's.

Examples:

>>> scores = entity_scores([["B-PER", "I-PER", "O", "B-LOC"]], [["B-PER", "I-PER", "O", "B-ORG"]])
>>> scores["precision"], scores["recall"], scores["f1"]
(0.5, 0.5, 0.5)
>>> scores["per_type"]["PER"]
{'precision': 1.0, 'recall': 1.0, 'f1': 1.0, 'support': 1}
"""

from typing import Dict, List, Sequence, Tuple

_PREFIXES = ("B", "I", "E", "S")


def _split_tag(tag: str) -> Tuple[str, str]:
    """("B", "PER") for "B-PER", ("O", "_") for "O"; anything else is a ValueError."""
    if tag == "O":
        return "O", "_"
    if len(tag) > 2 and tag[0] in _PREFIXES and tag[1] == "-":
        return tag[0], tag[2:]
    raise ValueError(f"not an entity tag: {tag!r} (expected O or B-/I-/E-/S- followed by a type)")


def _ends(prev_prefix, prefix, prev_type, type_) -> bool:
    if prev_prefix in ("E", "S"):
        return True
    if prev_prefix in ("B", "I") and prefix in ("B", "S", "O"):
        return True
    return prev_prefix != "O" and prev_type != type_


def _starts(prev_prefix, prefix, prev_type, type_) -> bool:
    if prefix in ("B", "S"):
        return True
    if prefix in ("I", "E") and prev_prefix in ("E", "S", "O"):
        return True
    return prefix != "O" and prev_type != type_


def get_entities(tags: Sequence[str]) -> List[Tuple[str, int, int]]:
    """The entities of one tag sequence as `(type, first, last)` word indices (inclusive), in order.

    Args:
        tags: e.g. ["B-PER", "I-PER", "O"]; IOB1, IOB2 or IOBES.
    Raises:
        ValueError: a tag that is not `O` or `B-`/`I-`/`E-`/`S-` + type.
    """
    entities = []
    prev_prefix, prev_type, begin = "O", "", 0
    for i, tag in enumerate(list(tags) + ["O"]):
        prefix, type_ = _split_tag(tag)
        if _ends(prev_prefix, prefix, prev_type, type_):
            entities.append((prev_type, begin, i - 1))
        if _starts(prev_prefix, prefix, prev_type, type_):
            begin = i
        prev_prefix, prev_type = prefix, type_
    return entities


def _prf(correct: int, predicted: int, true: int) -> Dict[str, float]:
    precision = correct / predicted if predicted else 0.0
    recall = correct / true if true else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}


def entity_scores(y_true: Sequence[Sequence[str]], y_pred: Sequence[Sequence[str]]) -> dict:
    """Micro-averaged entity precision, recall and F1, and the same per entity type.

    Equal to `seqeval.metrics.precision_score / recall_score / f1_score` (default mode) and, per type, to
    `seqeval.metrics.classification_report`. Undefined ratios (no predicted or no true entities) are 0.0,
    as seqeval returns them.

    Args:
        y_true: the gold tag sequences, one per sentence.
        y_pred: the predicted tag sequences, the same lengths.
    Returns:
        dict with `precision`, `recall`, `f1`, `num_true`, `num_predicted`, `num_correct` and `per_type`:
        type -> {`precision`, `recall`, `f1`, `support` (true entities of that type)}, over the types seen
        in either.
    Raises:
        ValueError: different numbers of sentences, a sentence whose lengths differ, or a malformed tag.
    """
    if len(y_true) != len(y_pred):
        raise ValueError(f"y_true has {len(y_true)} sentences, y_pred {len(y_pred)}")
    true, pred = set(), set()  # (type, sentence, first, last)
    for i, (gold, guess) in enumerate(zip(y_true, y_pred)):
        if len(gold) != len(guess):
            raise ValueError(f"sentence {i}: {len(gold)} true tags but {len(guess)} predicted")
        true.update((t, i, a, b) for t, a, b in get_entities(gold))
        pred.update((t, i, a, b) for t, a, b in get_entities(guess))
    correct = true & pred
    per_type = {}
    for type_ in sorted({e[0] for e in true | pred}):
        n_true = sum(e[0] == type_ for e in true)
        scores = _prf(sum(e[0] == type_ for e in correct), sum(e[0] == type_ for e in pred), n_true)
        per_type[type_] = {**scores, "support": n_true}
    return {**_prf(len(correct), len(pred), len(true)), "num_true": len(true), "num_predicted": len(pred),
            "num_correct": len(correct), "per_type": per_type}
