"""GLUE metrics against scikit-learn and SciPy, on random and degenerate inputs."""

import warnings

import numpy as np
import pytest
from scipy import stats
from sklearn import metrics as sk

from official_bert.metrics import accuracy, f1, glue_metrics, matthews_corr, pearson, spearman

SEEDS = range(8)


def _classes(seed, n, k, bias=0.0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k, n)
    predictions = np.where(rng.random(n) < bias, labels, rng.integers(0, k, n))  # correlated when bias > 0
    return labels, predictions


@pytest.mark.filterwarnings("ignore::UserWarning")  # sklearn warns when a sample holds a single class
@pytest.mark.parametrize("seed", SEEDS)
def test_classification_metrics_match_sklearn(seed):
    n = [1, 2, 7, 50, 408, 1043, 33, 5][seed]
    for k, bias in ((2, 0.0), (2, 0.7), (3, 0.5)):
        labels, predictions = _classes(seed, n, k, bias)
        assert accuracy(labels, predictions) == pytest.approx(sk.accuracy_score(labels, predictions), abs=1e-12)
        assert matthews_corr(labels, predictions) == pytest.approx(
            sk.matthews_corrcoef(labels, predictions), abs=1e-12)
        if k == 2:
            assert f1(labels, predictions) == pytest.approx(
                sk.f1_score(labels, predictions, zero_division=0.0), abs=1e-12)
        for positive in range(k):
            assert f1(labels, predictions, positive=positive) == pytest.approx(sk.f1_score(
                labels, predictions, labels=[positive], average="macro", zero_division=0.0), abs=1e-12)


@pytest.mark.parametrize("labels,predictions", [
    ([1, 1, 1, 1], [1, 1, 1, 1]),      # one class everywhere
    ([0, 0, 0, 0], [0, 0, 0, 0]),      # no positives at all: F1 0
    ([0, 1, 0, 1], [0, 0, 0, 0]),      # constant predictions: MCC 0, no predicted positives: F1 0
    ([0, 1, 0, 1], [1, 1, 1, 1]),      # constant positive predictions
    ([1, 1, 1, 1], [0, 1, 0, 1]),      # a single label class: MCC 0
    ([0, 1, 0, 1], [1, 0, 1, 0]),      # all wrong: MCC -1
    ([0, 1, 1, 0], [0, 1, 1, 0]),      # all right: MCC 1
    ([0, 2, 1, 2, 0], [2, 2, 1, 0, 0]),  # three classes
])
def test_classification_edge_cases_match_sklearn(labels, predictions):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sklearn warns on the degenerate cases
        expected_mcc = sk.matthews_corrcoef(labels, predictions)
        expected_f1 = sk.f1_score(labels, predictions, labels=[1], average="macro", zero_division=0.0)
    assert matthews_corr(labels, predictions) == pytest.approx(expected_mcc, abs=1e-12)
    assert f1(labels, predictions) == pytest.approx(expected_f1, abs=1e-12)
    assert accuracy(labels, predictions) == pytest.approx(sk.accuracy_score(labels, predictions))


def test_documented_degenerate_values():
    assert f1([0, 0, 1], [0, 0, 0]) == 0.0 and f1([0, 0], [0, 0]) == 0.0
    assert matthews_corr([0, 1, 0], [1, 1, 1]) == 0.0 and matthews_corr([1, 1], [0, 1]) == 0.0
    assert matthews_corr([0, 1, 1, 0], [1, 0, 0, 1]) == -1.0
    assert pearson([1.0, 2.0, 3.0], [2.0, 2.0, 2.0]) == 0.0  # SciPy: NaN with a ConstantInputWarning
    assert spearman([4.0, 4.0, 4.0], [1.0, 2.0, 3.0]) == 0.0


@pytest.mark.parametrize("seed", SEEDS)
def test_correlations_match_scipy(seed):
    rng = np.random.default_rng(100 + seed)
    n = [2, 3, 10, 100, 1500, 37, 4, 250][seed]
    labels = rng.uniform(0, 5, n)
    predictions = labels * rng.uniform(-1, 1) + rng.normal(0, 1, n)
    # STS-B gold scores come in steps of 0.2 (many ties); rounded predictions add ties on that side too.
    tied_labels, tied_predictions = np.round(labels * 5) / 5, np.round(predictions)
    for x, y in ((labels, predictions), (tied_labels, tied_predictions), (tied_labels, predictions)):
        if np.all(x == x[0]) or np.all(y == y[0]):
            continue
        assert pearson(x, y) == pytest.approx(stats.pearsonr(x, y).statistic, abs=1e-10)
        assert spearman(x, y) == pytest.approx(stats.spearmanr(x, y).statistic, abs=1e-10)


def test_correlation_extremes_and_integer_inputs():
    x = np.arange(10)
    assert pearson(x, 3 * x + 1) == 1.0 and pearson(x, -x) == -1.0
    assert spearman(x, np.exp(x)) == pytest.approx(1.0) and spearman(x, -(x ** 3)) == pytest.approx(-1.0)
    ties = [1, 2, 2, 3, 3, 3, 0]
    assert spearman(ties, [5, 1, 1, 2, 9, 9, 0]) == pytest.approx(
        stats.spearmanr(ties, [5, 1, 1, 2, 9, 9, 0]).statistic, abs=1e-12)


def test_glue_metrics_computes_the_named_metrics():
    labels, predictions = _classes(3, 200, 2, bias=0.6)
    assert glue_metrics(("f1", "accuracy"), labels, predictions) == {  # MRPC, QQP
        "f1": pytest.approx(sk.f1_score(labels, predictions)),
        "accuracy": pytest.approx(sk.accuracy_score(labels, predictions))}
    assert glue_metrics(("matthews_corr",), labels, predictions) == {  # CoLA
        "matthews_corr": pytest.approx(sk.matthews_corrcoef(labels, predictions))}
    nli_labels, nli_predictions = _classes(4, 90, 3, bias=0.5)
    assert glue_metrics(("accuracy",), nli_labels, nli_predictions) == {  # MNLI, SST-2, QNLI, RTE, WNLI
        "accuracy": pytest.approx(sk.accuracy_score(nli_labels, nli_predictions))}
    scores = np.random.default_rng(0).uniform(0, 5, 60)
    guesses = scores + np.random.default_rng(1).normal(0, 1, 60)
    assert glue_metrics(("pearson", "spearman"), scores, guesses) == {  # STS-B
        "pearson": pytest.approx(stats.pearsonr(scores, guesses).statistic),
        "spearman": pytest.approx(stats.spearmanr(scores, guesses).statistic)}


def test_glue_metrics_accepts_logits_and_column_scores():
    logits = np.array([[0.1, 2.0, -1.0], [3.0, 0.0, 0.0], [0.0, 0.0, 5.0], [1.0, 0.5, 0.0]])
    assert glue_metrics(("accuracy",), [1, 0, 2, 1], logits) == {"accuracy": 0.75}
    scores = np.array([[0.5], [1.5], [4.0]])
    assert glue_metrics(("pearson", "spearman"), [1.0, 2.0, 3.5], scores)["spearman"] == pytest.approx(1.0)
    with pytest.raises(ValueError, match=r"must be \[n\] or \[n, 1\]"):
        glue_metrics(("pearson", "spearman"), [1.0, 2.0], np.zeros((2, 2)))


def test_bad_inputs_are_errors():
    with pytest.raises(ValueError, match="3 labels but 2 predictions"):
        accuracy([0, 1, 1], [0, 1])
    with pytest.raises(ValueError, match="no examples"):
        f1([], [])
    with pytest.raises(ValueError, match="at least 2"):
        pearson([1.0], [2.0])
    with pytest.raises(ValueError, match="unknown GLUE metric"):
        glue_metrics(("exact_match",), [0], [0])
    with pytest.raises(TypeError, match="sequence of names"):
        glue_metrics("MRPC", [0], [0])
