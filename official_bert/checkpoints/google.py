"""Writes Google-format TF1 checkpoints (`bert/encoder/layer_0/...` names) readable by `tf.train.load_checkpoint`."""

import os
from typing import Dict

import numpy as np


def write_google_checkpoint(tensors: Dict[str, np.ndarray], prefix: str) -> str:
    """Writes `tensors` as a TF checkpoint at `prefix` (creating `prefix.index` and data shards).

    Args:
        tensors: variable name -> array, e.g. from `WeightSpec.to_stored_value("google")`.
        prefix: checkpoint prefix, e.g. "out/bert_model.ckpt". An existing checkpoint there is an error.
    Returns: the prefix.
    """
    import tensorflow as tf

    if os.path.exists(prefix + ".index"):
        raise FileExistsError(f"{prefix}.index exists; refusing to overwrite a checkpoint")
    os.makedirs(os.path.dirname(os.path.abspath(prefix)), exist_ok=True)
    names = sorted(tensors)
    tf.raw_ops.SaveV2(prefix=prefix, tensor_names=names, shape_and_slices=[""] * len(names),
                      tensors=[tf.constant(tensors[n]) for n in names])
    return prefix
