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


def _isolated(text):
    """A lone character between spaces (a CJK compatibility ideograph after NFD) is a word already."""
    return len(text.strip()) == 1 and text.startswith(" ") and text.endswith(" ")


def _repair(normalized, hf_only, tf_only, replace):
    """`normalized` with hf-only split characters padded with spaces and, unless it is `_isolated`,
    tf-only ones passed through `replace` (char -> str)."""
    isolated = _isolated(normalized)
    return "".join(f" {char} " if ord(char) in hf_only else replace(char) if ord(char) in tf_only and not isolated
                   else char for char in normalized)


@functools.lru_cache(maxsize=2)
def _vocab_free_table(lower_case):
    """The part of `normalizer_table` the vocabulary does not change (cached: it is most of the work).

    Returns:
        `(draft, pending, hf_only, tf_only)`: `draft` is {code point: replacement} in code-point order,
        final except for the code points of `pending` ({code point: normalized string}) whose
        tf-only split characters the vocabulary decides; `hf_only` and `tf_only` are sets of code points.
    """
    raw = load_raw()
    table = raw["uncased" if lower_case else "cased"]
    hf_only = frozenset(_expand(raw["hf_only_splits"]))
    tf_only = frozenset(_expand(raw["tf_only_splits"]))
    # drop, space, pad and map are disjoint (tests/text/regenerate_unicode_data.py). Padded code points
    # (CJK) need no entry: the reference pads them, tensorflow-text splits on them by itself.
    drop, space, padded = _expand(table["drop"]), _expand(table["space"]), _expand(table["pad"])
    normalized = {int(cp): out for cp, out in table["map"].items()}
    split_only = (hf_only | tf_only).difference(drop, space, padded, normalized)  # kept, but split differently
    normalized.update((cp, chr(cp)) for cp in split_only)
    draft = dict.fromkeys(sorted([*drop, *space, *normalized]))  # the keys in order, filled below
    for cps, text in (drop, ""), (space, " "):  # whole ranges share one normalized string
        draft.update(dict.fromkeys(cps, _repair(text, hf_only, tf_only, str)))
    pending, unchanged = {}, []
    for cp, text in normalized.items():
        draft[cp] = _repair(text, hf_only, tf_only, str)
        if not _isolated(text) and any(ord(char) in tf_only for char in text):
            pending[cp] = text
        elif draft[cp] == chr(cp):  # ("" and " " are no drop or space code point's own character)
            unchanged.append(cp)
    for cp in unchanged:
        del draft[cp]
    return draft, pending, hf_only, tf_only


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
    draft, pending, hf_only, tf_only = _vocab_free_table(lower_case)
    vocab_chars = set("".join(token[2:] if token.startswith("##") else token for token in vocab))
    placeholder = next(chr(cp) for cp in _PLACEHOLDER_CANDIDATES if chr(cp) not in vocab_chars)
    unfixable = set()

    def replace(char):
        if char in vocab_chars:
            unfixable.add(ord(char))
            return char
        return placeholder

    mapping = dict(draft)
    for cp, text in pending.items():
        out = _repair(text, hf_only, tf_only, replace)
        if out != chr(cp):
            mapping[cp] = out
        else:
            del mapping[cp]
    return mapping, sorted(unfixable)
