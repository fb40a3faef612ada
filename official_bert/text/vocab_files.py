"""Finds the WordPiece vocabulary and casing that belong to a checkpoint directory, and writes a vocabulary."""

import json
import os
from typing import List, Optional, Tuple

from official_bert.text.vocab import load_vocab


def _from_tokenizer_json(path) -> Tuple[List[str], Optional[bool]]:
    with open(path, encoding="utf-8") as f:
        spec = json.load(f)
    model = spec.get("model") or {}
    if model.get("type") != "WordPiece" or not isinstance(model.get("vocab"), dict):
        raise ValueError(f"{path}: field 'model' is not a WordPiece tokenizer with a vocab")
    vocab = model["vocab"]
    tokens = [None] * len(vocab)
    for token, index in vocab.items():
        if not 0 <= index < len(tokens) or tokens[index] is not None:
            raise ValueError(f"{path}: field 'model.vocab' has a gap or duplicate at id {index}")
        tokens[index] = token
    normalizer = spec.get("normalizer") or {}
    lower = normalizer.get("lowercase") if normalizer.get("type") == "BertNormalizer" else None
    return tokens, lower


def find_vocab(checkpoint_dir) -> Tuple[List[str], Optional[bool], str]:
    """Finds the vocabulary of a checkpoint directory, and its casing when the directory says it.

    Looks for `vocab.txt` (Google and HF), then `tokenizer.json` (HF fast tokenizers). Casing comes from
    `tokenizer_config.json` (`do_lower_case`), the `tokenizer.json` normalizer, or "uncased"/"cased" in
    the directory name.

    Args:
        checkpoint_dir: a checkpoint directory (or a Google checkpoint prefix inside one).
    Returns: `(tokens, do_lower_case or None when unknown, the file the tokens came from)`.
    """
    directory = checkpoint_dir if os.path.isdir(checkpoint_dir) else os.path.dirname(checkpoint_dir)
    lower = None
    config_path = os.path.join(directory, "tokenizer_config.json")
    if os.path.isfile(config_path):
        with open(config_path, encoding="utf-8") as f:
            lower = json.load(f).get("do_lower_case")
    vocab_txt = os.path.join(directory, "vocab.txt")
    tokenizer_json = os.path.join(directory, "tokenizer.json")
    if os.path.isfile(vocab_txt):
        tokens, source = load_vocab(vocab_txt), vocab_txt
    elif os.path.isfile(tokenizer_json):
        tokens, json_lower = _from_tokenizer_json(tokenizer_json)
        lower = json_lower if lower is None else lower
        source = tokenizer_json
    else:
        raise FileNotFoundError(f"{directory}: no vocab.txt or tokenizer.json; pass --vocab_file")
    if lower is None:
        name = os.path.basename(os.path.normpath(directory)).lower()
        lower = True if "uncased" in name else False if "cased" in name else None
    return tokens, lower, source


def write_vocab_file(tokens: List[str], path):
    """Writes `tokens` one per line (a WordPiece `vocab.txt`)."""
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(tokens) + "\n")
