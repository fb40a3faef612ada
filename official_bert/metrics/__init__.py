"""Evaluation metrics: GLUE (accuracy, F1, Matthews and Pearson/Spearman correlations), entity F1."""

from official_bert.metrics.glue import accuracy, f1, glue_metrics, matthews_corr, pearson, spearman
from official_bert.metrics.tagging import entity_scores, get_entities

__all__ = ["accuracy", "entity_scores", "f1", "get_entities", "glue_metrics", "matthews_corr", "pearson", "spearman"]
