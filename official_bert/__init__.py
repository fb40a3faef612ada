"""official-bert: BERT for TensorFlow 2 and Keras 3.

Importing the package registers every Keras object of ours (models, optimizers, learning-rate schedules), so
`keras.saving.load_model` reads a saved `.keras` model after `import official_bert`, and the task models are
importable from here: `from official_bert import BertClassifier` (and `Embedder`, imported on first use). None of
this needs TensorFlow but the Embedder: the models run on Keras' JAX and torch backends too. The task models'
`from_pretrained(path, labels=[...])` builds one that takes raw strings (its preprocessor, in-graph TensorFlow, is
part of it: `official_bert.models.text_inputs`).

Run as one of our entry points (`python -m tasks.run_classifier`, `python -m export.saved_model`, ...), the
package first keeps TensorFlow's native start-up lines off the console (`official_bert.cli`), which has to
happen before TensorFlow loads, and leaves Keras unloaded until the command line is read (`cli.run_main`).
"""

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

from official_bert import cli as _cli  # noqa: E402  (no TensorFlow)

_cli.quiet_native_logs_of_entry_points()

# Where each public name is defined: imported on first use (`from official_bert import BertClassifier`).
_PUBLIC = {"BertConfig": "official_bert.config", "BertClassifier": "official_bert.models",
           "BertEncoder": "official_bert.models", "BertMultipleChoice": "official_bert.models",
           "BertPretrainer": "official_bert.models", "BertSpanLabeler": "official_bert.models",
           "BertTokenClassifier": "official_bert.models", "BertFeatureEncoder": "official_bert.models.feature_encoder",
           "BertTimeSeriesClassifier": "official_bert.models.time_series_classifier",
           "Embedder": "official_bert.pipelines.embedder"}
__all__ = sorted(_PUBLIC)
__version__ = "0.1.0"


def register_keras_objects():
    """Imports the modules that register our Keras objects (models, optimizers, learning-rate schedules), so that
    `keras.saving.load_model` reads a saved model of ours. Loads Keras, and with it TensorFlow on its backend."""
    from official_bert import models, optimization  # noqa: F401
    from official_bert.models import feature_encoder, time_series_classifier  # noqa: F401


def __getattr__(name):
    # The Embedder runs its tokenizer in TensorFlow: imported on first use (as every name here), so that the models
    # and optimizers import (and run on Keras' JAX or torch backend) where TensorFlow is not installed.
    if name in _PUBLIC:
        import importlib

        return getattr(importlib.import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'official_bert' has no attribute {name!r}")


# An entry point reads its command line first (a typo or --help answers at once) and registers them then
# (`cli.run_main`); any other program has them on `import official_bert`.
if not _cli.is_entry_point_run():
    register_keras_objects()
