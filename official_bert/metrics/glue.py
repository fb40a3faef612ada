"""GLUE metrics as GLUE scores them, in NumPy, returned as fractions.

- accuracy: SST-2, MNLI (matched and mismatched, each its own call), QNLI, RTE, WNLI.
- F1 of the positive class 1, and accuracy: MRPC, QQP.
- Matthews correlation: CoLA.
- Pearson and Spearman correlation: STS-B.

The functions agree with scikit-learn (`accuracy_score`, `f1_score`, `matthews_corrcoef`) and SciPy
(`pearsonr`, `spearmanr`, average ranks for ties), which are not needed at run time. Degenerate inputs
follow scikit-learn: F1 is 0 when there are no true and no predicted positives, the Matthews correlation
is 0 when either side has a single class, and (where SciPy returns NaN) a correlation with a constant
input is 0.

Examples:

>>> glue_metrics(("f1", "accuracy"), labels=[1, 0, 1, 1], predictions=[1, 0, 0, 1])  # MRPC's
{'f1': 0.8, 'accuracy': 0.75}
"""

from typing import Dict, Sequence

import numpy as np

__all__ = ["accuracy", "f1", "matthews_corr", "pearson", "spearman", "glue_metrics"]


def _pair(labels, predictions, dtype=None):
    labels, predictions = np.asarray(labels, dtype=dtype), np.asarray(predictions, dtype=dtype)
    if labels.ndim != 1 or predictions.ndim != 1:
        raise ValueError(f"labels and predictions must be 1-D, got shapes {labels.shape} and {predictions.shape}")
    if labels.shape != predictions.shape:
        raise ValueError(f"{len(labels)} labels but {len(predictions)} predictions")
    if labels.size == 0:
        raise ValueError("no examples to score")
    return labels, predictions


def accuracy(labels, predictions) -> float:
    """The fraction of predictions equal to the labels.

    Args:
        labels: 1-D class indices.
        predictions: 1-D predicted class indices, as many as labels.
    """
    labels, predictions = _pair(labels, predictions)
    return float(np.mean(labels == predictions))


def f1(labels, predictions, positive=1) -> float:
    """F1 of the positive class (binary F1 as scikit-learn's `f1_score(..., pos_label=positive)`).

    Args:
        labels: 1-D class indices.
        predictions: 1-D predicted class indices.
        positive: the positive class (1: "equivalent" in MRPC, "duplicate" in QQP).

    Returns:
        2 TP / (2 TP + FP + FN); 0 when there are neither true nor predicted positives.
    """
    labels, predictions = _pair(labels, predictions)
    true_pos = np.sum((predictions == positive) & (labels == positive))
    false_pos = np.sum((predictions == positive) & (labels != positive))
    false_neg = np.sum((predictions != positive) & (labels == positive))
    denominator = 2 * true_pos + false_pos + false_neg
    return float(2 * true_pos / denominator) if denominator else 0.0


def matthews_corr(labels, predictions) -> float:
    """Matthews correlation coefficient, multi-class form (Gorodkin's R_K, as scikit-learn computes it).

    Args:
        labels: 1-D class indices (any hashable class values).
        predictions: 1-D predicted classes.

    Returns:
        A value in [-1, 1]; 0 when labels or predictions hold a single class.
    """
    labels, predictions = _pair(labels, predictions)
    classes, encoded = np.unique(np.concatenate([labels, predictions]), return_inverse=True)
    k, n = len(classes), len(labels)
    confusion = np.zeros((k, k), dtype=np.float64)
    np.add.at(confusion, (encoded[:n], encoded[n:]), 1.0)
    true_per_class = confusion.sum(axis=1)  # how often each class occurs in labels
    pred_per_class = confusion.sum(axis=0)  # ... and in predictions
    correct = np.trace(confusion)
    cov_true_pred = correct * n - np.dot(true_per_class, pred_per_class)
    cov_pred_pred = n * n - np.dot(pred_per_class, pred_per_class)
    cov_true_true = n * n - np.dot(true_per_class, true_per_class)
    if cov_pred_pred * cov_true_true == 0:
        return 0.0
    return float(cov_true_pred / np.sqrt(cov_true_true * cov_pred_pred))


def pearson(labels, predictions) -> float:
    """Pearson correlation coefficient (SciPy's `pearsonr(...).statistic`).

    Args:
        labels: 1-D gold scores.
        predictions: 1-D predicted scores.

    Returns:
        A value in [-1, 1]; 0 when either input is constant (SciPy returns NaN there).
    """
    labels, predictions = _pair(labels, predictions, dtype=np.float64)
    if labels.size < 2:
        raise ValueError("a correlation needs at least 2 examples")
    if np.all(labels == labels[0]) or np.all(predictions == predictions[0]):
        return 0.0
    x, y = labels - labels.mean(), predictions - predictions.mean()
    x, y = x / np.linalg.norm(x), y / np.linalg.norm(y)  # normalise first, as SciPy does, for precision
    return float(np.clip(np.dot(x, y), -1.0, 1.0))


def _average_ranks(values: np.ndarray) -> np.ndarray:
    """1-based ranks; tied values share the mean of their ranks (SciPy's `rankdata(method="average")`)."""
    order = np.argsort(values, kind="mergesort")
    sorted_values = values[order]
    new_group = np.concatenate([[True], sorted_values[1:] != sorted_values[:-1]])
    group_of_sorted = np.cumsum(new_group) - 1  # (n,) 0-based tie group of each sorted position
    starts = np.flatnonzero(new_group)  # first sorted position of each group
    ends = np.concatenate([starts[1:], [len(values)]])  # one past its last
    group_rank = (starts + 1 + ends) / 2.0  # mean of the 1-based ranks starts+1 .. ends
    ranks = np.empty(len(values), dtype=np.float64)
    ranks[order] = group_rank[group_of_sorted]
    return ranks


def spearman(labels, predictions) -> float:
    """Spearman rank correlation (SciPy's `spearmanr`): Pearson on average ranks, ties included.

    Args:
        labels: 1-D gold scores.
        predictions: 1-D predicted scores.

    Returns:
        A value in [-1, 1]; 0 when either input is constant (SciPy returns NaN there).
    """
    labels, predictions = _pair(labels, predictions, dtype=np.float64)
    return pearson(_average_ranks(labels), _average_ranks(predictions))


_METRICS = {"accuracy": accuracy, "f1": f1, "matthews_corr": matthews_corr, "pearson": pearson,
            "spearman": spearman}
_SCORE_METRICS = ("pearson", "spearman")  # metrics of scores (regression); the others compare classes


def glue_metrics(metric_names: Sequence[str], labels, predictions) -> Dict[str, float]:
    """The named GLUE metrics of one task on one evaluation split.

    Args:
        metric_names: the metrics to compute, e.g. a `GlueTask.metric_names` (`accuracy`, `f1`, `matthews_corr`,
            `pearson`, `spearman`). For MNLI, call once for the matched and once for the mismatched dev set.
        labels: 1-D gold class indices (float scores for the correlations).
        predictions: predicted class indices, or 2-D logits/probabilities `[n, classes]` (arg-maxed); for the
            correlations 1-D scores or `[n, 1]`.

    Returns:
        The metrics, keyed by name, as fractions.
    """
    if isinstance(metric_names, str):
        raise TypeError(f"metric_names is a sequence of names (e.g. GlueTask.metric_names), not {metric_names!r}")
    unknown = [name for name in metric_names if name not in _METRICS]
    if unknown:
        raise ValueError(f"unknown GLUE metric(s) {', '.join(unknown)}; expected some of {', '.join(_METRICS)}")
    predictions = np.asarray(predictions)
    if predictions.ndim == 2:
        if any(name in _SCORE_METRICS for name in metric_names):
            if predictions.shape[1] != 1:
                raise ValueError(f"predictions of scores must be [n] or [n, 1], got {predictions.shape}")
            predictions = predictions[:, 0]
        else:
            predictions = np.argmax(predictions, axis=-1)
    return {name: _METRICS[name](labels, predictions) for name in metric_names}
