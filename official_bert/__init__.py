"""official-bert: BERT for TensorFlow 2 and Keras 3.

Importing the package registers every Keras object of ours (models, optimizers, learning-rate schedules), so
`keras.saving.load_model` reads a saved `.keras` model after `import official_bert`, and the task models are
importable from here: `from official_bert import BertClassifier`.

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
from official_bert.pipelines.embedder import Embedder  # noqa: E402

__all__ = ["BertClassifier", "BertConfig", "BertEncoder", "BertMultipleChoice", "BertPretrainer",
           "BertSpanLabeler", "BertTokenClassifier", "Embedder"]
__version__ = "0.1.0"
