"""Finds the WordPiece vocabulary and casing that belong to a checkpoint directory, reads the vocabularies of Hugging
Face `tokenizer.json` files (WordPiece and byte-level BPE), and writes a vocabulary."""

import json
import os
from typing import List, Optional, Tuple

from official_bert.text.vocab import load_vocab

TOKENIZER_JSON = "tokenizer.json"


def read_tokenizer_json(path) -> dict:
    """A Hugging Face `tokenizer.json`, checked to hold a `model` whose `type` and `vocab` we can read.

    Args:
        path: the file.
    Raises:
        ValueError: not JSON, or no `model` object with a `vocab` object, naming the file.
    """
    with open(path, encoding="utf-8") as f:
        try:
            spec = json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: not valid JSON ({e})") from None
    model = spec.get("model") if isinstance(spec, dict) else None
    if not isinstance(model, dict) or not isinstance(model.get("vocab"), (dict, list)):
        raise ValueError(f"{path}: expected a Hugging Face tokenizer.json with a 'model' object holding a 'vocab'")
    return spec


def check_model_vocab(spec, path):
    """Raises, naming `path`, when a `tokenizer.json`'s tokens cannot be tokenized as transformers does here.

    Its `added_tokens` that are not in `model.vocab` under the same id (what `tok.add_tokens([...])` or
    `add_special_tokens` adds): transformers splits them out of the text whole; our in-graph tokenizers cannot.
    A `model.vocab` that holds only special tokens (an empty tokenizer, as transformers 5 saves one built from a
    `vocab_file` it does not read): nothing to tokenize text with.

    Args:
        spec: the parsed `tokenizer.json` (`read_tokenizer_json`).
        path: the file, named in errors.
    """
    vocab = spec["model"]["vocab"]
    if isinstance(vocab, list):  # Unigram's [piece, score] pairs, index = id
        vocab = {entry[0]: i for i, entry in reversed(list(enumerate(vocab))) if isinstance(entry, list) and entry}
    added = [t for t in spec.get("added_tokens") or [] if isinstance(t, dict)]
    extra = [t.get("content") for t in added if vocab.get(t.get("content")) != t.get("id")]
    _refuse_added(path, extra, ", in 'added_tokens'")
    special = {t.get("content") for t in added if t.get("special")}
    if vocab and all(token in special for token in vocab):
        raise ValueError(f"{path}: field 'model.vocab' holds only the {len(vocab)} special tokens "
                         f"{', '.join(sorted(vocab, key=vocab.get))} and no text tokens: an empty tokenizer (save "
                         "the checkpoint's tokenizer from AutoTokenizer.from_pretrained of the original model)")


def check_added_tokens_json(directory, vocab):
    """Raises when a directory's `added_tokens.json` (transformers 4's record of `add_tokens`, {token: id}) holds
    tokens outside `vocab` ({token: id}): transformers keeps them whole, our in-graph tokenizers cannot.

    Args:
        directory: the checkpoint directory.
        vocab: the model's {token: id}.
    """
    path = os.path.join(directory, "added_tokens.json")
    if not os.path.isfile(path):
        return
    with open(path, encoding="utf-8") as f:
        try:
            added = json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(added, dict):
        raise ValueError(f"{path}: expected a JSON object of token -> id")
    _refuse_added(path, [token for token, index in added.items() if vocab.get(token) != index], "")


def _refuse_added(path, extra, field):
    if extra:
        shown = ", ".join(repr(t) for t in extra[:5]) + (f" (and {len(extra) - 5} more)" if len(extra) > 5 else "")
        raise ValueError(f"{path}: {len(extra)} added token(s) outside the model's vocab ({shown}{field}); "
                         "official-bert's in-graph tokenizer does not support added tokens (it would split them into "
                         "pieces, not give their ids)")


def _tokens_by_id(vocab, path, field="model.vocab") -> List[str]:
    tokens = [None] * len(vocab)
    for token, index in vocab.items():
        if not isinstance(index, int) or not 0 <= index < len(tokens) or tokens[index] is not None:
            raise ValueError(f"{path}: field '{field}' has a gap or duplicate at id {index}")
        tokens[index] = token
    return tokens


def wordpiece_from_tokenizer_json(path) -> Tuple[List[str], Optional[bool]]:
    """The WordPiece tokens (index = id) of a `tokenizer.json` and its casing (None when its normalizer does not
    say), checked by `check_model_vocab`; a ValueError naming the file for another tokenizer."""
    spec = read_tokenizer_json(path)
    if spec["model"].get("type") != "WordPiece" or not isinstance(spec["model"]["vocab"], dict):
        raise ValueError(f"{path}: field 'model' is not a WordPiece tokenizer with a vocab")
    check_model_vocab(spec, path)
    tokens = _tokens_by_id(spec["model"]["vocab"], path)
    normalizer = spec.get("normalizer") or {}
    lower = normalizer.get("lowercase") if normalizer.get("type") == "BertNormalizer" else None
    return tokens, lower


# tokenizer.json's byte-level BPE settings that RoBERTa's tokenizer has, which `BytePairTokenizer` reproduces.
_BPE_MODEL = {"dropout": (None,), "continuing_subword_prefix": (None, ""), "end_of_word_suffix": (None, ""),
              "byte_fallback": (None, False), "ignore_merges": (None, False)}
_BYTE_LEVEL = {"add_prefix_space": (False,), "use_regex": (None, True)}


def bpe_from_tokenizer_json(path) -> Tuple[dict, list]:
    """The byte-level BPE vocab and merges of a `tokenizer.json` (transformers 5 saves RoBERTa's tokenizer as only
    this file), checked to be RoBERTa's tokenizer, which `BytePairTokenizer` gives the ids of.

    Args:
        path: the file.
    Returns: `(vocab, merges)`: {token: id} and a list of `(left, right)` pairs, highest priority first (the file's
        `model.merges`, "left right" strings or [left, right] pairs).
    Raises:
        ValueError: another tokenizer, settings of another byte-level BPE, added tokens or an empty vocab, naming the
            file.
    """
    spec = read_tokenizer_json(path)
    model = spec["model"]
    if model.get("type") != "BPE" or not isinstance(model["vocab"], dict):
        raise ValueError(f"{path}: field 'model' is a {model.get('type')} tokenizer, not RoBERTa's byte-level BPE")
    pre = spec.get("pre_tokenizer") or {}
    if pre.get("type") == "Sequence" and len(pre.get("pretokenizers") or []) == 1:
        pre = pre["pretokenizers"][0]
    other = [f"model.{k}={model.get(k)!r}" for k, allowed in _BPE_MODEL.items() if model.get(k) not in allowed]
    if pre.get("type") != "ByteLevel":
        other.append(f"pre_tokenizer {pre.get('type')!r}")
    else:
        other += [f"pre_tokenizer.{k}={pre.get(k)!r}" for k, allowed in _BYTE_LEVEL.items()
                  if pre.get(k) not in allowed]
    if spec.get("normalizer") is not None:
        other.append(f"normalizer {(spec['normalizer'] or {}).get('type')!r}")
    if other:
        raise ValueError(f"{path}: not RoBERTa's byte-level BPE (a ByteLevel pre-tokenizer without prefix space, no "
                         f"normalizer): {', '.join(other)}")
    check_model_vocab(spec, path)
    merges = []
    for rank, merge in enumerate(model.get("merges") or []):
        pair = merge.split(" ") if isinstance(merge, str) else merge
        if not isinstance(pair, (list, tuple)) or len(pair) != 2 or not all(isinstance(p, str) and p for p in pair):
            raise ValueError(f"{path}: field 'model.merges' entry {rank}: expected 'left right' or [left, right], "
                             f"got {merge!r}")
        merges.append((pair[0], pair[1]))
    vocab = model["vocab"]
    ids = list(vocab.values())
    if not all(isinstance(i, int) and i >= 0 for i in ids) or len(set(ids)) != len(ids):
        raise ValueError(f"{path}: field 'model.vocab': expected token -> unique non-negative integer id")
    return dict(vocab), merges


def find_vocab(checkpoint_dir) -> Tuple[List[str], Optional[bool], str]:
    """Finds the vocabulary of a checkpoint directory, and its casing when the directory says it.

    Reads `vocab.txt` (Google and HF) or `tokenizer.json` (HF fast tokenizers; transformers 5 saves only it). When
    both are there they must hold the same tokens (transformers reads `tokenizer.json`, Google's code `vocab.txt`),
    and a `tokenizer.json` with added tokens is refused (`check_model_vocab`). Casing comes from
    `tokenizer_config.json` (`do_lower_case`), the `tokenizer.json` normalizer, or "uncased"/"cased" in the
    directory name.

    Args:
        checkpoint_dir: a checkpoint directory (or a Google checkpoint prefix inside one).
    Returns: `(tokens, do_lower_case or None when unknown, the file the tokens came from)`.
    Raises:
        FileNotFoundError: neither file; ValueError: the two files disagree, or `tokenizer.json` is not a WordPiece
            tokenizer we can reproduce.
    """
    directory = checkpoint_dir if os.path.isdir(checkpoint_dir) else os.path.dirname(checkpoint_dir)
    lower = None
    config_path = os.path.join(directory, "tokenizer_config.json")
    if os.path.isfile(config_path):
        with open(config_path, encoding="utf-8") as f:
            lower = json.load(f).get("do_lower_case")
    vocab_txt = os.path.join(directory, "vocab.txt")
    tokenizer_json = os.path.join(directory, TOKENIZER_JSON)
    json_tokens = json_lower = None
    if os.path.isfile(tokenizer_json):
        json_tokens, json_lower = wordpiece_from_tokenizer_json(tokenizer_json)
    if os.path.isfile(vocab_txt):
        tokens, source = load_vocab(vocab_txt), vocab_txt
        if all(token.startswith("[") and token.endswith("]") for token in tokens):
            raise ValueError(f"{vocab_txt}: holds only the {len(tokens)} special tokens {', '.join(tokens[:8])}"
                             f"{' ...' if len(tokens) > 8 else ''} and no text tokens: an empty vocabulary")
        if json_tokens is not None and json_tokens != tokens:
            raise ValueError(f"{directory}: vocab.txt and tokenizer.json hold different vocabularies "
                             f"({_first_difference(tokens, json_tokens)}); transformers reads tokenizer.json: keep "
                             "the one the model was trained with, or pass --vocab_file")
    elif json_tokens is not None:
        tokens, source = json_tokens, tokenizer_json
    else:
        raise FileNotFoundError(f"{directory}: no vocab.txt or tokenizer.json; pass --vocab_file")
    check_added_tokens_json(directory, {token: i for i, token in reversed(list(enumerate(tokens)))})
    lower = json_lower if lower is None else lower
    if lower is None:
        name = os.path.basename(os.path.normpath(directory)).lower()
        lower = True if "uncased" in name else False if "cased" in name else None
    return tokens, lower, source


def _first_difference(txt, json_tokens) -> str:
    """Where vocab.txt's tokens and tokenizer.json's first differ, in words."""
    index = next((i for i, (x, y) in enumerate(zip(txt, json_tokens)) if x != y), None)
    if index is None:
        return f"vocab.txt has {len(txt)} tokens, tokenizer.json {len(json_tokens)}"
    return f"id {index} is {txt[index]!r} in vocab.txt, {json_tokens[index]!r} in tokenizer.json"


def write_vocab_file(tokens: List[str], path):
    """Writes `tokens` one per line (a WordPiece `vocab.txt`)."""
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(tokens) + "\n")
