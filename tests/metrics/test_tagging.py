"""Entity precision/recall/F1 against seqeval (default, conlleval mode) on real CoNLL tags and edge cases."""

import random

import pytest
from seqeval.metrics import classification_report, f1_score, precision_score, recall_score
from seqeval.metrics.sequence_labeling import get_entities as seqeval_entities

from official_bert.data.conll import read_conll
from official_bert.metrics.tagging import entity_scores, get_entities


def _assert_equals_seqeval(y_true, y_pred):
    ours = entity_scores(y_true, y_pred)
    assert ours["precision"] == pytest.approx(precision_score(y_true, y_pred), abs=1e-12)
    assert ours["recall"] == pytest.approx(recall_score(y_true, y_pred), abs=1e-12)
    assert ours["f1"] == pytest.approx(f1_score(y_true, y_pred), abs=1e-12)
    report = classification_report(y_true, y_pred, output_dict=True, zero_division=0)
    types = {k for k in report if not k.endswith(" avg")}
    assert set(ours["per_type"]) == types
    for type_, scores in ours["per_type"].items():
        for key, theirs in (("precision", "precision"), ("recall", "recall"), ("f1", "f1-score"),
                            ("support", "support")):
            assert scores[key] == pytest.approx(report[type_][theirs], abs=1e-12), (type_, key)
    return ours


def _corrupt(tags, rng, rate, labels):
    out = []
    for sentence in tags:
        row = []
        for tag in sentence:
            r = rng.random()
            if r < rate / 3:
                tag = rng.choice(labels)  # any tag, so I- without B-, type changes, spurious entities
            elif r < 2 * rate / 3 and tag != "O":
                tag = ("I-" if tag.startswith("B-") else "B-") + tag[2:]  # boundary errors
            elif r < rate:
                tag = "O"  # missed entities
            row.append(tag)
        out.append(row)
    return out


@pytest.fixture(scope="module")
def conll_test_tags(shared_data):
    return read_conll(str(shared_data / "conll2003" / "hf-iob2" / "test.txt")).tags


@pytest.mark.parametrize("seed,rate", [(0, 0.02), (1, 0.1), (2, 0.3), (3, 0.8)])
def test_equals_seqeval_on_corrupted_conll_test_tags(conll_test_tags, seed, rate):
    rng = random.Random(seed)
    labels = ["O", "B-LOC", "B-MISC", "B-ORG", "B-PER", "I-LOC", "I-MISC", "I-ORG", "I-PER"]
    pred = _corrupt(conll_test_tags, rng, rate, labels)
    ours = _assert_equals_seqeval(conll_test_tags, pred)
    assert 0.0 < ours["f1"] < 1.0
    # corrupting the gold side too (I- without B- in y_true) is counted the same way
    _assert_equals_seqeval(_corrupt(conll_test_tags, rng, rate, labels), pred)


def test_perfect_predictions_count_the_standard_entities(conll_test_tags):
    ours = entity_scores(conll_test_tags, conll_test_tags)
    assert ours["f1"] == 1.0 and ours["num_true"] == 1617 + 1661 + 1668 + 702
    assert {t: s["support"] for t, s in ours["per_type"].items()} == {"PER": 1617, "ORG": 1661, "LOC": 1668,
                                                                      "MISC": 702}


@pytest.mark.parametrize("y_true,y_pred", [
    ([["I-PER", "I-PER", "O"]], [["B-PER", "I-PER", "O"]]),           # I- without B- starts an entity
    ([["B-PER", "I-LOC", "I-LOC"]], [["B-PER", "B-LOC", "I-LOC"]]),    # a type change splits
    ([["B-PER", "I-PER"], ["I-PER", "O"]], [["B-PER", "I-PER"], ["B-PER", "O"]]),  # no entity across sentences
    ([["B-ORG", "B-ORG", "I-ORG"]], [["B-ORG", "I-ORG", "I-ORG"]]),
    ([["O", "O"]], [["O", "O"]]),                                      # all O: 0/0 -> 0
    ([["O", "O"]], [["B-LOC", "O"]]),                                  # no true entity
    ([["B-LOC", "O"]], [["O", "O"]]),                                  # no predicted entity
    ([["S-PER", "B-LOC", "E-LOC", "I-LOC"]], [["B-PER", "B-LOC", "I-LOC", "E-LOC"]]),  # IOBES
    ([["E-PER", "I-PER", "S-ORG", "I-ORG"]], [["I-PER", "E-PER", "B-ORG", "E-ORG"]]),
])
def test_edge_cases_equal_seqeval(y_true, y_pred):
    _assert_equals_seqeval(y_true, y_pred)
    for seq in y_true + y_pred:
        assert get_entities(seq) == seqeval_entities(seq)


def test_all_o_scores_zero_and_reports_no_types():
    scores = entity_scores([["O"] * 3], [["O"] * 3])
    assert (scores["precision"], scores["recall"], scores["f1"], scores["per_type"]) == (0.0, 0.0, 0.0, {})


def test_entities_of_a_sequence():
    assert get_entities(["B-PER", "I-PER", "O", "I-LOC", "B-LOC", "I-ORG"]) == [
        ("PER", 0, 1), ("LOC", 3, 3), ("LOC", 4, 4), ("ORG", 5, 5)]


def test_bad_inputs_are_errors():
    with pytest.raises(ValueError, match="'PER' is not an entity tag|not an entity tag: 'PER'"):
        entity_scores([["PER"]], [["O"]])
    with pytest.raises(ValueError, match="sentence 0: 2 true tags but 1 predicted"):
        entity_scores([["O", "O"]], [["O"]])
    with pytest.raises(ValueError, match="1 sentences, y_pred 2"):
        entity_scores([["O"]], [["O"], ["O"]])
