"""official-bert: BERT for TensorFlow 2 and Keras 3.

Importing the package registers every Keras object of ours (models, optimizers, learning-rate schedules), so
`keras.saving.load_model` reads a saved `.keras` model after `import official_bert`, and the task models are
importable from here: `from official_bert import BertClassifier` (and `Embedder`, imported on first use). None of
this needs TensorFlow but the Embedder: the models run on Keras' JAX and torch backends too. The task models'
`from_pretrained(path, labels=[...])` builds one that takes raw strings (its preprocessor, in-graph TensorFlow, is
part of it: `official_bert.models.text_inputs`).

Run as one of our entry points (`python -m tasks.run_classifier`, `python -m export.saved_model`, ...), the
package first keeps TensorFlow's native start-up lines off the console (`official_bert.cli`), which has to
happen before TensorFlow loads.
"""

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

from official_bert import cli as _cli  # noqa: E402  (no TensorFlow)

_cli.quiet_native_logs_of_entry_points()

from official_bert import optimization  # noqa: E402,F401  (registers AdamW, LAMB and the schedules)
from official_bert.config import BertConfig  # noqa: E402
from official_bert.models import (  # noqa: E402
    BertClassifier, BertEncoder, BertMultipleChoice, BertPretrainer, BertSpanLabeler, BertTokenClassifier)
from official_bert.models.feature_encoder import BertFeatureEncoder  # noqa: E402
from official_bert.models.time_series_classifier import BertTimeSeriesClassifier  # noqa: E402

__all__ = ["BertClassifier", "BertConfig", "BertEncoder", "BertFeatureEncoder", "BertMultipleChoice",
           "BertPretrainer", "BertSpanLabeler", "BertTimeSeriesClassifier", "BertTokenClassifier", "Embedder"]
__version__ = "0.1.0"


def __getattr__(name):
    # The Embedder runs its tokenizer in TensorFlow: imported on first use, so that the models and optimizers
    # above import (and run on Keras' JAX or torch backend) where TensorFlow is not installed.
    if name == "Embedder":
        from official_bert.pipelines.embedder import Embedder

        return Embedder
    raise AttributeError(f"module 'official_bert' has no attribute {name!r}")
