"""official-bert: BERT for TensorFlow 2 and Keras 3."""

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

from official_bert.config import BertConfig  # noqa: E402
from official_bert.models import BertEncoder, BertPretrainer  # noqa: E402

__all__ = ["BertConfig", "BertEncoder", "BertPretrainer"]
__version__ = "0.1.0"
