"""Readers for the two checkpoint formats BERT users bring: Hugging Face directories and Google TF1 checkpoints.

`open_checkpoint(path)` finds the format and returns a `CheckpointReader` that lists tensor names and reads
tensors as NumPy arrays, without torch.
"""

import glob
import json
import os
from typing import Dict, List

import numpy as np

from official_bert.config import read_config_json, unsupported_family_error
from official_bert.families import model_types

# Google checkpoints also hold optimizer state; Hugging Face ones a position-id buffer. Never weights.
_SKIPPED_SUFFIXES = ("/adam_m", "/adam_v", "/lamb_m", "/lamb_v")
_SKIPPED_NAMES = ("global_step", "embeddings.position_ids", "bert.embeddings.position_ids")

# The config files Google's releases put beside a checkpoint (BERT's, ALBERT's).
GOOGLE_CONFIG_FILES = ("bert_config.json", "albert_config.json")


def is_skipped(name: str) -> bool:
    """True for optimizer slots, `global_step` and buffers that are not model weights."""
    return name in _SKIPPED_NAMES or name.endswith(_SKIPPED_SUFFIXES)


class CheckpointReader:
    """Lists and reads the tensors of one checkpoint.

    Attributes:
        format: "hf" or "google".
        path: the checkpoint (a safetensors file or index, or a TF checkpoint prefix).
        config_path: the `config.json` / `bert_config.json` (ALBERT's: `albert_config.json`) beside it, or None.
    """

    def __init__(self, fmt: str, path: str, config_path, tensors: Dict[str, callable]):
        self.format = fmt
        self.path = path
        self.config_path = config_path
        self._tensors = tensors

    def names(self) -> List[str]:
        """Names of the weight tensors (optimizer slots and buffers left out)."""
        return sorted(n for n in self._tensors if not is_skipped(n))

    def __contains__(self, name: str) -> bool:
        return name in self._tensors

    def get(self, name: str) -> np.ndarray:
        if name not in self._tensors:
            raise KeyError(f"{self.path}: no variable named '{name}'")
        return np.asarray(self._tensors[name]())


class NoCheckpointError(FileNotFoundError):
    """A directory that holds no checkpoint of any format we read."""


class CorruptCheckpointError(ValueError):
    """A checkpoint file that exists but cannot be read: empty, truncated, or not in its format."""


def _safetensors_problem(file: str, error: Exception) -> str:
    """What is wrong with an unreadable safetensors file, in words (safetensors' own reason in brackets)."""
    size = os.path.getsize(file)
    reason = str(error).replace("Error while deserializing header: ", "")
    if size == 0:
        problem = "the file is empty (0 bytes)"
    elif size < 8 or any(s in reason for s in ("incomplete metadata", "invalid header length", "header too small")):
        problem = f"the file is truncated ({size} bytes, shorter than its header says)"
    else:
        problem = f"not a safetensors file, or corrupt ({size} bytes)"
    return f"{file}: cannot read the checkpoint: {problem} [safetensors: {reason}]; download or save it again"


def _safe_open(file: str):
    from safetensors import SafetensorError, safe_open

    try:
        return safe_open(file, framework="numpy")
    except SafetensorError as error:
        raise CorruptCheckpointError(_safetensors_problem(file, error)) from error


def _get_tensor(handle, file: str, name: str):
    from safetensors import SafetensorError

    try:
        return handle.get_tensor(name)
    except SafetensorError as error:
        raise CorruptCheckpointError(f"{file}: cannot read tensor '{name}': {error}; download or save it again") \
            from error


def _open_safetensors(files: List[str]) -> Dict[str, callable]:
    tensors = {}
    for file in files:
        if not os.path.isfile(file):
            raise FileNotFoundError(f"{file}: shard named in the checkpoint index is missing")
        handle = _safe_open(file)
        for name in handle.keys():
            # Old exports name LayerNorm parameters gamma/beta; transformers renames them on load, so do we.
            canonical = name.replace("LayerNorm.gamma", "LayerNorm.weight").replace("LayerNorm.beta", "LayerNorm.bias")
            tensors[canonical] = (lambda h=handle, f=file, n=name: _get_tensor(h, f, n))
    return tensors


def _open_hf(directory: str) -> CheckpointReader:
    single = os.path.join(directory, "model.safetensors")
    index = os.path.join(directory, "model.safetensors.index.json")
    if os.path.isfile(single):
        return CheckpointReader("hf", single, os.path.join(directory, "config.json"), _open_safetensors([single]))
    with open(index, encoding="utf-8") as f:
        try:
            shards = sorted(set(json.load(f)["weight_map"].values()))
        except (ValueError, KeyError, AttributeError, TypeError) as error:
            raise CorruptCheckpointError(f"{index}: not a safetensors index (expected JSON with a \"weight_map\" of "
                                         f"tensor name -> shard file): {error!r}") from error
    files = [os.path.join(directory, s) for s in shards]
    return CheckpointReader("hf", index, os.path.join(directory, "config.json"), _open_safetensors(files))


def _open_google(prefix: str, config_path) -> CheckpointReader:
    import tensorflow as tf

    def unreadable(error, what="cannot read the TF checkpoint"):
        return CorruptCheckpointError(f"{prefix}: {what} ({prefix}.index + {prefix}.data-*): "
                                      f"{getattr(error, 'message', error)}; download or save it again")

    try:
        reader = tf.train.load_checkpoint(prefix)
        names = reader.get_variable_to_shape_map()
    except tf.errors.OpError as error:
        raise unreadable(error) from error

    def get(name):
        try:
            return reader.get_tensor(name)
        except (tf.errors.OpError, IndexError) as error:  # a truncated data shard: "Read less bytes than requested"
            raise unreadable(error, f"cannot read variable '{name}'") from error

    tensors = {name: (lambda n=name: get(n)) for name in names}
    return CheckpointReader("google", prefix, config_path, tensors)


def _find_google_prefix(directory: str):
    import tensorflow as tf

    latest = tf.train.latest_checkpoint(directory)
    if latest:
        return latest
    indexes = sorted(glob.glob(os.path.join(directory, "*.index")))
    if len(indexes) > 1:
        preferred = [i for i in indexes if os.path.basename(i) == "bert_model.ckpt.index"]
        if not preferred:
            raise ValueError(f"{directory}: several TF checkpoints ({', '.join(indexes)}); pass one prefix")
        indexes = preferred
    return indexes[0][: -len(".index")] if indexes else None


def _google_config(directory: str):
    """The config beside a Google checkpoint: `bert_config.json`, else ALBERT's `albert_config.json`, else None."""
    for name in GOOGLE_CONFIG_FILES:
        config = os.path.join(directory, name)
        if os.path.isfile(config):
            return config
    return None


def _check_family(config_path: str):
    """Raises the unsupported-family error when `config_path` (a directory's `config.json`, if there) names a
    `model_type` of a family not supported here; an unreadable one is left to the config's own reader."""
    if not os.path.isfile(config_path):
        return
    try:
        values = read_config_json(config_path)
    except (OSError, ValueError):
        return
    model_type = values.get("model_type") if isinstance(values, dict) else None
    if model_type is not None and model_type not in model_types():
        raise unsupported_family_error(model_type, config_path)


def open_checkpoint(path: str) -> CheckpointReader:
    """Opens a Hugging Face or Google BERT checkpoint.

    Args:
        path: a Hugging Face directory (`config.json` + `model.safetensors` or a sharded index), a Google
            directory (`bert_config.json` or ALBERT's `albert_config.json` + `*.ckpt*`), or a Google checkpoint prefix
            (`.../bert_model.ckpt`).
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        if os.path.isfile(os.path.join(path, "model.safetensors")) or os.path.isfile(
                os.path.join(path, "model.safetensors.index.json")):
            return _open_hf(path)
        prefix = _find_google_prefix(path)
        if prefix:
            return _open_google(prefix, _google_config(path))
        _check_family(os.path.join(path, "config.json"))  # (a T5 folder: its family, whatever weights it has)
        if os.path.isfile(os.path.join(path, "pytorch_model.bin")):
            raise ValueError(
                f"{path}: only pytorch_model.bin found; official_bert reads safetensors without torch. Convert it "
                "once with transformers: "
                "BertModel.from_pretrained(path).save_pretrained(path, safe_serialization=True)")
        raise NoCheckpointError(
            f"{path}: no BERT checkpoint found (expected model.safetensors + config.json, or bert_model.ckpt.index + "
            "bert_config.json)")
    if os.path.isfile(path + ".index"):
        return _open_google(path, _google_config(os.path.dirname(path)))
    if os.path.isfile(path):
        raise FileNotFoundError(f"{path}: a file, not a checkpoint directory or TF checkpoint prefix; pass the "
                                f"directory that holds it ({os.path.dirname(path) or '.'})")
    raise FileNotFoundError(f"{path}: no such directory, nor a TF checkpoint prefix ({path}.index)")
