"""Evaluation metrics: GLUE (accuracy, F1, Matthews and Pearson/Spearman correlations)."""

from official_bert.metrics.glue import accuracy, f1, glue_metrics, matthews_corr, pearson, spearman

__all__ = ["accuracy", "f1", "glue_metrics", "matthews_corr", "pearson", "spearman"]
