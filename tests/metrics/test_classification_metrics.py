"""The metrics of a user's classifier against scikit-learn, with its default arguments, on random and degenerate
inputs."""

import warnings

import numpy as np
import pytest
from sklearn import metrics as sk

from official_bert.metrics.classification import best_threshold, multi_label_metrics, single_label_metrics


def _sklearn_single(labels, predictions):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sklearn warns where a class's F1 is 0 by its zero_division default
        return {"accuracy": sk.accuracy_score(labels, predictions),
                "macro_f1": sk.f1_score(labels, predictions, average="macro"),
                "weighted_f1": sk.f1_score(labels, predictions, average="weighted")}


def _sklearn_multi(labels, predicted):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {"micro_f1": sk.f1_score(labels, predicted, average="micro"),
                "macro_f1": sk.f1_score(labels, predicted, average="macro")}


@pytest.mark.parametrize("seed", range(6))
def test_single_label_metrics_match_sklearn(seed):
    rng = np.random.default_rng(seed)
    n, k = [1, 3, 17, 50, 200, 9][seed], [2, 3, 5, 7, 4, 12][seed]
    labels = rng.integers(0, k, n)
    predictions = np.where(rng.random(n) < 0.5, labels, rng.integers(0, k, n))
    assert single_label_metrics(labels, predictions) == pytest.approx(_sklearn_single(labels, predictions), abs=1e-12)


@pytest.mark.parametrize("labels,predictions", [
    ([2, 2, 2], [2, 2, 2]),  # one class, all right
    ([0, 0, 1], [2, 2, 2]),  # a predicted class no label has
    ([0, 1, 2, 2], [0, 2, 2, 2]),
])
def test_single_label_metrics_on_degenerate_inputs(labels, predictions):
    assert single_label_metrics(labels, predictions) == pytest.approx(_sklearn_single(labels, predictions), abs=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_multi_label_metrics_match_sklearn(seed):
    rng = np.random.default_rng(seed)
    n, k = [1, 4, 30, 100, 7, 50][seed], [2, 3, 5, 8, 2, 6][seed]  # (sklearn reads one column as binary)
    labels = (rng.random((n, k)) < 0.3).astype(np.float32)
    predicted = np.where(rng.random((n, k)) < 0.6, labels, rng.random((n, k)) < 0.3).astype(np.int64)
    assert multi_label_metrics(labels, predicted) == pytest.approx(_sklearn_multi(labels, predicted), abs=1e-12)


def test_multi_label_metrics_with_empty_rows_and_columns():
    labels = np.array([[0, 0, 1], [0, 0, 0], [1, 0, 0]])  # column 1 is never true nor predicted
    predicted = np.array([[0, 0, 1], [1, 0, 0], [0, 0, 0]])
    assert multi_label_metrics(labels, predicted) == pytest.approx(_sklearn_multi(labels, predicted), abs=1e-12)
    nothing = np.zeros((2, 2))
    assert multi_label_metrics(nothing, nothing) == pytest.approx(_sklearn_multi(nothing, nothing), abs=1e-12)
    with pytest.raises(ValueError, match="one shape"):
        multi_label_metrics(np.zeros((2, 3)), np.zeros((2, 2)))


def test_best_threshold_is_the_best_of_its_candidates():
    rng = np.random.default_rng(0)
    labels = (rng.random((40, 4)) < 0.4).astype(np.float32)
    probabilities = np.clip(labels * 0.3 + rng.random((40, 4)) * 0.6, 0, 1)  # positives higher, not separable at 0.5
    threshold = best_threshold(labels, probabilities)
    scores = {t: sk.f1_score(labels, probabilities > t, average="micro") for t in np.arange(0.05, 0.96, 0.05)}
    assert sk.f1_score(labels, probabilities > threshold, average="micro") == pytest.approx(max(scores.values()))
    assert best_threshold(np.ones((2, 2)), np.full((2, 2), 0.9)) == 0.5  # every candidate below 0.9 ties: nearest 0.5
