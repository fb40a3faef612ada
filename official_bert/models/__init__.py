"""Keras models: the encoder and, later, the task models built on it."""

from official_bert.models.encoder import ENCODER_INPUTS, BertEncoder

__all__ = ["BertEncoder", "ENCODER_INPUTS"]
