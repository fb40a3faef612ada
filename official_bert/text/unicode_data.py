"""Per-code-point rules that make tensorflow-text's kernels tokenize like the reference BERT tokenizer.

tensorflow-text's `FastBertNormalizer` applies NFKC case folding and turns control characters into
spaces; the reference (Hugging Face `tokenizers`' `BertNormalizer`, i.e. Google's original BERT
`BasicTokenizer`) lower-cases, applies NFD, drops non-spacing marks, drops control and private-use
characters and pads CJK ideographs with spaces. The `FastBertNormalize` kernel is a per-code-point
lookup table, so we give it a table with the reference's mapping instead of its default one.

The pre-tokenizers also disagree on a few hundred code points (tensorflow-text's ICU tables are newer
than the `unicode_categories` tables inside `tokenizers`). The table repairs those too:

- a character the reference splits on but tensorflow-text does not is padded with spaces;
- a character tensorflow-text splits on but the reference keeps inside a word is, when it occurs in no
  vocabulary token, replaced by a private-use placeholder that is also in no vocabulary token: the
  reference maps such a word to `[UNK]`, and so does WordPiece on the placeholder.

The measured data lives in `data/bert_unicode_data.json.gz`; `tests/text/regenerate_unicode_data.py`
rebuilds it from `tokenizers` and tensorflow-text, and a test checks it is current.
"""

import functools
import gzip
import json
import pathlib

DATA_FILE = pathlib.Path(__file__).resolve().parent / "data" / "bert_unicode_data.json.gz"

# Private-use code points: never punctuation or whitespace for ICU, never produced by the reference
# normalizer (which deletes them), so a safe stand-in for "a character of no vocabulary token".
_PLACEHOLDER_CANDIDATES = range(0xE000, 0xF900)


@functools.lru_cache(maxsize=1)
def load_raw():
    """Returns the measured data as stored (a dict of JSON values)."""
    with gzip.open(DATA_FILE, "rt", encoding="utf-8") as f:
        return json.load(f)


def _expand(ranges):
    return [cp for first, last in ranges for cp in range(first, last + 1)]


@functools.lru_cache(maxsize=2)
def reference_normalization(lower_case):
    """{code point: normalized string} for every code point the reference normalizer changes.

    Args:
        lower_case: True for uncased BERT (lower case, NFD, strip accents), False for cased.
    """
    table = load_raw()["uncased" if lower_case else "cased"]
    mapping = {cp: "" for cp in _expand(table["drop"])}
    mapping.update({cp: " " for cp in _expand(table["space"])})
    mapping.update({cp: f" {chr(cp)} " for cp in _expand(table["pad"])})
    mapping.update({int(cp): out for cp, out in table["map"].items()})
    return mapping


def normalizer_table(lower_case, vocab):
    """The code-point mapping to compile into the `FastBertNormalize` model.

    Args:
        lower_case: as in `reference_normalization`.
        vocab: the word-piece vocabulary (list of str).

    Returns:
        `(mapping, unfixable)`: `mapping` is {code point: replacement string} for every code point
        that must change; `unfixable` lists the code points tensorflow-text splits on while the
        reference does not, yet which occur in the vocabulary (none for the BERT vocabularies).
    """
    raw = load_raw()
    hf_only = set(_expand(raw["hf_only_splits"]))
    tf_only = set(_expand(raw["tf_only_splits"]))
    vocab_chars = set()
    for token in vocab:
        vocab_chars.update(token[2:] if token.startswith("##") else token)
    placeholder = next(chr(cp) for cp in _PLACEHOLDER_CANDIDATES if chr(cp) not in vocab_chars)
    reference = reference_normalization(lower_case)
    padded = {cp for cp, out in reference.items() if out == f" {chr(cp)} "}

    unfixable = set()
    mapping = {}
    for cp in sorted(set(reference) | hf_only | tf_only):
        if cp in padded:  # CJK: the reference pads it; tensorflow-text splits on it by itself.
            continue
        normalized = reference.get(cp, chr(cp))
        # A lone character between spaces (a CJK compatibility ideograph after NFD) is a word already.
        isolated = len(normalized.strip()) == 1 and normalized.startswith(" ") and normalized.endswith(" ")
        pieces = []
        for char in normalized:
            if ord(char) in hf_only:
                pieces.append(f" {char} ")
            elif ord(char) in tf_only and not isolated:
                if char in vocab_chars:
                    unfixable.add(ord(char))
                    pieces.append(char)
                else:
                    pieces.append(placeholder)
            else:
                pieces.append(char)
        out = "".join(pieces)
        if out != chr(cp):
            mapping[cp] = out
    return mapping, sorted(unfixable)
