"""Metrics of a user's classifier, in NumPy, as fractions: accuracy, macro and weighted F1 (one label an example),
micro and macro F1 (several labels an example), and the decision threshold that maximises micro F1.

They equal scikit-learn's `accuracy_score` and `f1_score(average="macro" | "weighted" | "micro")` with its defaults
(one label an example: averaged over the classes found in the labels or the predictions; several: over every
label column; a class with no true and no predicted example has F1 0), which is not needed at run time. Regression
is scored by `metrics.glue.pearson` / `spearman`.

Examples:

>>> single_label_metrics(labels=[0, 1, 2, 2], predictions=[0, 2, 2, 2])
{'accuracy': 0.75, 'macro_f1': 0.6, 'weighted_f1': 0.65}
"""

import numpy as np

from official_bert.metrics.glue import accuracy

__all__ = ["f1_scores", "single_label_metrics", "multi_label_metrics", "best_threshold"]


def f1_scores(true_pos, false_pos, false_neg):
    """Per-class F1, 2 TP / (2 TP + FP + FN), from per-class counts (arrays); 0 where the denominator is 0."""
    true_pos, denominator = np.asarray(true_pos, np.float64), 2.0 * np.asarray(true_pos) + false_pos + false_neg
    return np.divide(2.0 * true_pos, denominator, out=np.zeros_like(true_pos), where=denominator > 0)


def single_label_metrics(labels, predictions):
    """Accuracy, macro F1 and weighted F1 (by the labels' class counts) of class indices.

    Args:
        labels: (n,) gold class indices.
        predictions: (n,) predicted class indices.
    """
    acc = accuracy(labels, predictions)  # (checks the shapes)
    labels, predictions = np.asarray(labels), np.asarray(predictions)
    classes = np.union1d(labels, predictions)  # (classes,)
    gold = labels[:, None] == classes  # (n, classes)
    predicted = predictions[:, None] == classes
    true_pos = np.sum(gold & predicted, axis=0)
    f1 = f1_scores(true_pos, np.sum(~gold & predicted, axis=0), np.sum(gold & ~predicted, axis=0))  # (classes,)
    support = gold.sum(axis=0)
    return {"accuracy": acc, "macro_f1": float(f1.mean()),
            "weighted_f1": float(np.dot(f1, support) / support.sum())}


def multi_label_metrics(labels, predicted):
    """Micro and macro F1 of multi-hot rows.

    Args:
        labels: (n, num_labels) gold 0/1.
        predicted: (n, num_labels) predicted 0/1 (or bool).
    """
    gold, predicted = np.asarray(labels) > 0.5, np.asarray(predicted) > 0.5
    if gold.ndim != 2 or gold.shape != predicted.shape or gold.size == 0:
        raise ValueError(f"labels and predictions must be non-empty (n, labels) rows of one shape, got {gold.shape} "
                         f"and {predicted.shape}")
    true_pos = np.sum(gold & predicted, axis=0)  # (num_labels,)
    false_pos, false_neg = np.sum(~gold & predicted, axis=0), np.sum(gold & ~predicted, axis=0)
    micro = f1_scores([true_pos.sum()], [false_pos.sum()], [false_neg.sum()])[0]
    return {"micro_f1": float(micro), "macro_f1": float(f1_scores(true_pos, false_pos, false_neg).mean())}


def best_threshold(labels, probabilities, candidates=np.round(np.arange(0.05, 0.96, 0.05), 2)):
    """The decision threshold among `candidates` whose predictions (probability > threshold) have the best micro F1
    on `labels`; of equal ones, the nearest to 0.5.

    Args:
        labels: (n, num_labels) gold 0/1.
        probabilities: (n, num_labels) predicted probabilities.
        candidates: the thresholds tried.
    """
    probabilities = np.asarray(probabilities)
    best, best_f1 = None, -1.0
    for threshold in sorted(candidates, key=lambda t: abs(t - 0.5)):
        f1 = multi_label_metrics(labels, probabilities > threshold)["micro_f1"]
        if f1 > best_f1:
            best, best_f1 = float(threshold), f1
    return best
