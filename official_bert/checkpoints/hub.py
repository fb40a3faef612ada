"""Checkpoints named by a Hugging Face hub id (`google-bert/bert-base-uncased`), fetched into huggingface_hub's
cache: what `from_pretrained` and the entry points' `--init_checkpoint` read besides a local directory."""

import os
import re

_HUB_ID = re.compile(r"[\w.-]+(/[\w.-]+)?")


def checkpoint_path(path) -> str:
    """A local directory for `path`: itself when it exists, else a Hugging Face hub id (`org/name`) fetched into
    huggingface_hub's cache (`HF_HUB_CACHE`; with `HF_HUB_OFFLINE=1`, from the cache only).

    Args:
        path: a directory, or a hub id.
    Raises:
        FileNotFoundError: neither a directory nor a hub id found on the hub (or in the cache).
        ImportError: a hub id, without huggingface_hub installed.
    """
    path = os.fspath(path)
    if os.path.exists(path) or not _HUB_ID.fullmatch(path):
        return path
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        raise ImportError(f"{path}: no such directory; to fetch it as a Hugging Face hub id, pip install "
                          "huggingface_hub") from None
    try:
        return snapshot_download(path)
    except Exception as error:  # not found, offline without it in the cache, no network: one line
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise FileNotFoundError(f"{path}: no such directory, and not fetched as a Hugging Face hub id "
                                f"({reason})") from None
