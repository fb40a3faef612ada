"""Keras models: the encoder and the task models built on it."""

from official_bert.models.classifier import BertClassifier
from official_bert.models.encoder import ENCODER_INPUTS, BertEncoder
from official_bert.models.pretrainer import BertPretrainer
from official_bert.models.span_labeler import BertSpanLabeler, span_labeling_loss
from official_bert.models.token_classifier import IGNORE_LABEL, BertTokenClassifier, token_classification_loss

# EntityTagger (raw text -> entities) lives in official_bert.models.entity_tagger; import it from there.
__all__ = ["BertClassifier", "BertEncoder", "BertPretrainer", "BertSpanLabeler", "BertTokenClassifier",
           "ENCODER_INPUTS", "IGNORE_LABEL", "span_labeling_loss", "token_classification_loss"]
