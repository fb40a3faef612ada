"""official-bert: BERT for TensorFlow 2 and Keras 3.

`BertConfig`, `BertEncoder` and `BertPretrainer` are imported on first use (PEP 562), so that importing a
submodule that needs no TensorFlow (`official_bert.cli`, `official_bert.model_dir`) does not start it.
"""

import importlib
import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

_LAZY = {"BertConfig": "official_bert.config", "BertEncoder": "official_bert.models",
         "BertPretrainer": "official_bert.models"}
__all__ = list(_LAZY)
__version__ = "0.1.0"


def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'official_bert' has no attribute {name!r}")
