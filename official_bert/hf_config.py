"""Reads the Hugging Face `config.json` of a checkpoint directory, and tells its family when it has no `model_type`.

Old or hand-written `config.json` files may lack `model_type` (transformers then guesses from the directory's name).
Here the config's own keys decide first (`architectures`, DistilBERT's `dim`/`n_layers`, Google ALBERT's
`num_hidden_groups`), then the tokenizer files beside it: `vocab.json` + `merges.txt` is RoBERTa's byte-level BPE,
`sentencepiece.bpe.model` XLM-RoBERTa's, `spiece.model` ALBERT's SentencePiece, `vocab.txt` BERT's WordPiece. Where
none of them (or several families' files) are there, the error says that `model_type` is missing.

Examples:

>>> read_hf_config("roberta-without-model-type/config.json").model_type  # vocab.json + merges.txt beside it
'roberta'
"""

import json
import logging
import os

from official_bert.config import BertConfig, is_google_albert, read_config_json
from official_bert.families import families, model_types
from official_bert.tokenizer_kinds import WORDPIECE

logger = logging.getLogger(__name__)

TOKENIZER_JSON = "tokenizer.json"  # Hugging Face's fast tokenizer: its model type tells WordPiece from BPE

# `tokenizer.json`'s model type -> family (a Unigram model may be ALBERT's or XLM-RoBERTa's: not told).
_TOKENIZER_JSON_MODELS = {"WordPiece": "bert", "BPE": "roberta"}

_logged = set()  # (path, family): each inference is logged once


def read_hf_config(path) -> BertConfig:
    """Reads a Hugging Face `config.json`; without `model_type`, its family is told by `infer_model_type`.

    Args:
        path: the `config.json` of a checkpoint directory (its tokenizer files beside it).
    Raises:
        FileNotFoundError: no such file; ValueError: invalid JSON or fields, or no `model_type` and no way to tell it.
    """
    path = os.fspath(path)
    values = read_config_json(path)
    if isinstance(values, dict) and "model_type" not in values and not is_google_albert(values):
        family, reason = infer_model_type(values, os.path.dirname(path), path)
        if (path, family) not in _logged:
            _logged.add((path, family))
            logger.info("%s: no 'model_type'; read as %s (%s)", path, family, reason)
        values = {**values, "model_type": family}
    return BertConfig.from_dict(values, source=path)


def infer_model_type(values, directory, source="config.json"):
    """The family of a `config.json` without `model_type`, from its keys or the tokenizer files in `directory`.

    Args:
        values: the parsed `config.json`.
        directory: where its tokenizer files are.
        source: the file, named in the error.
    Returns: `(model_type, reason)`: a registered family's, and what told it (for the log).
    Raises:
        ValueError: naming the missing `model_type` where neither the keys nor the files tell one family.
    """
    by_prefix = sorted(families(), key=lambda f: -len(f.hf_class_prefix))  # "XLMRoberta" before "Roberta"
    for architecture in values.get("architectures") or ():
        for family in by_prefix:
            if isinstance(architecture, str) and architecture.startswith(family.hf_class_prefix):
                return family.model_type, f"its architectures {values['architectures']}"
    for family in families():
        if family.hf_marker_keys and all(key in values for key in family.hf_marker_keys):
            return family.model_type, f"its {family.display_name} keys {', '.join(family.hf_marker_keys)}"
    found = {}  # family -> its files that are there
    for family in _by_tokenizer_files():
        for files in family.tokenizer_files:
            if all(os.path.isfile(os.path.join(directory, name)) for name in files):
                found.setdefault(family.model_type, []).extend(files)
    if not found:
        family = _tokenizer_json_family(os.path.join(directory, TOKENIZER_JSON))
        if family:
            found[family] = [TOKENIZER_JSON]
    if len(found) == 1:
        (family, files), = found.items()
        return family, f"the {' + '.join(files)} beside it"
    names = [name for files in found.values() for name in files]
    known = [name for family in _by_tokenizer_files() for files in family.tokenizer_files for name in files]
    known.append(TOKENIZER_JSON)
    why = (f"its tokenizer files belong to different families ({', '.join(names)})" if names else
           f"no tokenizer file beside it tells the family ({', '.join(known)})")
    raise ValueError(f"{source}: field 'model_type' is missing and {why}; add \"model_type\" to it (one of "
                     f"{', '.join(model_types())})")


def _by_tokenizer_files():
    """The families, WordPiece's last (the most common files; named last in messages)."""
    return sorted(families(), key=lambda family: family.tokenizer_kind == WORDPIECE)


def _tokenizer_json_family(path):
    """The family `tokenizer.json`'s model type tells (WordPiece: BERT, BPE: RoBERTa), else None."""
    if not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            model = json.load(f).get("model") or {}
    except (OSError, ValueError, AttributeError):
        return None  # (the tokenizer's own reader names what is wrong with it)
    return _TOKENIZER_JSON_MODELS.get(model.get("type")) if isinstance(model, dict) else None
