"""Keras models: the encoder and the task models built on it."""

from official_bert.models.classifier import BertClassifier
from official_bert.models.encoder import ENCODER_INPUTS, BertEncoder
from official_bert.models.multiple_choice import BertMultipleChoice
from official_bert.models.pretrainer import BertPretrainer
from official_bert.models.span_labeler import BertSpanLabeler
from official_bert.models.token_classifier import IGNORE_LABEL, BertTokenClassifier

__all__ = ["BertClassifier", "BertEncoder", "BertMultipleChoice", "BertPretrainer", "BertSpanLabeler",
           "BertTokenClassifier", "ENCODER_INPUTS", "IGNORE_LABEL"]
