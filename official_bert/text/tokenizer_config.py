"""A tokenizer's config with its vocabulary inline (so that a saved `.keras` model needs no tokenizer file), and its
files written back from it (so that a model read from a `.keras` file can be exported with its `assets/`).

Examples:

>>> spec = serialize_tokenizer(BertTokenizer(vocab_file="vocab.txt"))  # {"module", "class_name", "config"}
>>> spec["config"]["vocab_file"], len(spec["config"]["vocab"])
(None, 30522)
>>> write_tokenizer_files_of(deserialize_tokenizer(spec), "export_staging")
'export_staging/vocab.txt'
"""

import base64
import importlib
import json
import os

from official_bert.text.bpe_tokenizer import read_merges_txt, read_vocab_json
from official_bert.text.vocab_files import write_vocab_file
from official_bert.tokenizer_kinds import BPE_FILES, SENTENCEPIECE_FILE, WORDPIECE_FILE


def inline_config(tokenizer) -> dict:
    """`tokenizer.get_config()` with its vocabulary inline instead of file paths: WordPiece's tokens
    (`BertTokenizer`), byte-level BPE's vocab and merges (`BytePairTokenizer`), or the serialized SentencePiece
    model, base64 (`SentencepieceTokenizer`)."""
    config = tokenizer.get_config()
    if config.get("model_file"):
        with open(config["model_file"], "rb") as f:
            config.update(model_file=None, model=base64.b64encode(f.read()).decode("ascii"))
    elif config.get("merges_file"):
        config.update(vocab=read_vocab_json(config["vocab_file"]),
                      merges=[list(pair) for pair in read_merges_txt(config["merges_file"])],
                      vocab_file=None, merges_file=None)
    elif config.get("vocab_file"):
        config.update(vocab=tokenizer.get_vocab(), vocab_file=None)
    return config


def serialize_tokenizer(tokenizer) -> dict:
    """The tokenizer as `{"module", "class_name", "config"}`, its config `inline_config`'s."""
    return {"module": type(tokenizer).__module__, "class_name": type(tokenizer).__name__,
            "config": inline_config(tokenizer)}


def deserialize_tokenizer(spec):
    """The tokenizer `serialize_tokenizer` describes."""
    return getattr(importlib.import_module(spec["module"]), spec["class_name"]).from_config(spec["config"])


def write_tokenizer_files_of(tokenizer, directory) -> str:
    """Writes the tokenizer's files into `directory` from the vocabulary it holds: `vocab.txt`, `vocab.json` +
    `merges.txt`, or `spiece.model`. Returns the path `preprocessing.tokenizer_from_files` reads."""
    config = inline_config(tokenizer)
    if "model" in config:  # SentencePiece
        path = os.path.join(directory, SENTENCEPIECE_FILE)
        with open(path, "wb") as f:
            f.write(base64.b64decode(config["model"]))
        return path
    if "merges" in config:  # byte-level BPE
        return write_bpe_files(config["vocab"], config["merges"], directory)
    path = os.path.join(directory, WORDPIECE_FILE)
    write_vocab_file(config["vocab"], path)
    return path


def write_bpe_files(vocab, merges, directory) -> str:
    """Writes a byte-level BPE as RoBERTa's `vocab.json` + `merges.txt` into `directory`; returns the `vocab.json`.

    Args:
        vocab: {token: id}.
        merges: `(left, right)` pairs, highest priority first.
        directory: where to write them.
    """
    with open(os.path.join(directory, BPE_FILES[0]), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(os.path.join(directory, BPE_FILES[1]), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n" + "".join(f"{left} {right}\n" for left, right in merges))
    return os.path.join(directory, BPE_FILES[0])
