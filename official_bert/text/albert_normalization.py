"""ALBERT's text normalization as a per-code-point table, equal to transformers' `AlbertTokenizerFast`.

`AlbertTokenizerFast` normalizes with `tokenizers`' Replace("``", '"'), Replace("''", '"'), NFKD,
StripAccents (ALBERT's `keep_accents=False`), Lowercase (if `do_lower_case`) and the `spiece.model`'s own
precompiled charsmap (SentencePiece's nmt_nfkc), then splits words on `char::is_whitespace`. Apart from
the two Replace rules, all of it is a map of each code point to a string, which this module computes so
that `sentencepiece_model.py` can compile it into the charsmap that tensorflow-text's
`FastSentencepieceTokenize` kernel applies.

NFKD, the marks StripAccents removes, Lowercase and the whitespace set come from Unicode tables frozen
inside `tokenizers`, so they are measured, not derived from Python's `unicodedata` (which differs on
~800 code points): `data/albert_unicode_data.json.gz`, rebuilt by
`tests/text/regenerate_albert_unicode_data.py` and checked current by a test.
"""

import functools
import gzip
import json
import pathlib

DATA_FILE = pathlib.Path(__file__).resolve().parent / "data" / "albert_unicode_data.json.gz"

# Hangul syllables: NFKD is algorithmic (Unicode 3.12), so they are computed rather than stored.
HANGUL_FIRST, HANGUL_LAST = 0xAC00, 0xD7A3
_L_BASE, _V_BASE, _T_BASE, _V_COUNT, _T_COUNT = 0x1100, 0x1161, 0x11A7, 21, 28

# The charsmap's multi-character rules apply to graphemes shorter than this many bytes (the
# `spm_precompiled` rule `tokenizers` follows); longer ones are normalized character by character.
_GRAPHEME_BYTES = 6


@functools.lru_cache(maxsize=1)
def load_raw():
    """Returns the measured data as stored (a dict of JSON values)."""
    with gzip.open(DATA_FILE, "rt", encoding="utf-8") as f:
        return json.load(f)


@functools.lru_cache(maxsize=1)
def _tables():
    raw = load_raw()
    expand = lambda runs: frozenset(cp for first, last in runs for cp in range(first, last + 1))  # noqa: E731
    nfkd = {int(cp): out for cp, out in raw["nfkd"].items()}
    lower = {int(cp): out for cp, out in raw["lower"].items()}
    return nfkd, expand(raw["marks"]), lower, expand(raw["whitespace"])


def _nfkd(cp, table):
    if HANGUL_FIRST <= cp <= HANGUL_LAST:
        index = cp - HANGUL_FIRST
        jamo = [_L_BASE + index // (_V_COUNT * _T_COUNT), _V_BASE + index % (_V_COUNT * _T_COUNT) // _T_COUNT]
        if index % _T_COUNT:
            jamo.append(_T_BASE + index % _T_COUNT)
        return "".join(map(chr, jamo))
    return table.get(cp, chr(cp))


def code_point_table(lower_case, charsmap):
    """{code point: normalized str} for every code point ALBERT's normalization changes.

    Every character `tokenizers` splits words on comes out as " " (the kernel's word separator). Computed once a
    process for each casing and charsmap (about 1.5 s on 2 CPU cores; ALBERT models share the nmt_nfkc charsmap).

    Args:
        lower_case: the tokenizer's `do_lower_case`.
        charsmap: the model's precompiled charsmap, a `sentencepiece_model.Charsmap`.

    Returns:
        a new dict {int: str} (code points 0..0x10FFFF, no surrogates; those not listed stay unchanged).
    """
    return dict(_code_point_table(bool(lower_case), charsmap))


@functools.lru_cache(maxsize=4)
def _code_point_table(lower_case, charsmap):
    """`code_point_table`, cached on the casing and the charsmap (equal charsmaps: the same bytes)."""
    nfkd, marks, lower, whitespace = _tables()
    # Code points NFKD, StripAccents, Lowercase or the whitespace split touch: the whole chain, in Python.
    touched = set(lower) | whitespace | set(nfkd) | marks | set(range(HANGUL_FIRST, HANGUL_LAST + 1))
    table = {}
    for cp in touched:
        text = "".join(c for c in _nfkd(cp, nfkd) if ord(c) not in marks)
        if lower_case:
            text = "".join(lower.get(ord(c), c) for c in text)
        text = _precompiled(text, charsmap.lookup)
        text = "".join(" " if ord(c) in whitespace else c for c in text)
        if text != chr(cp):
            table[cp] = text
    # The others only meet the charsmap, one code point each.
    for cp, text in charsmap.code_point_rules().items():
        if cp not in touched:
            table[cp] = "".join(" " if ord(c) in whitespace else c for c in text)
    return table


def _precompiled(text, charsmap):
    """The charsmap on one code point's normalized text: as a whole if short, else per character."""
    if text and len(text.encode("utf-8")) < _GRAPHEME_BYTES:
        whole = charsmap(text)
        if whole is not None:
            return whole
    return "".join(c if (out := charsmap(c)) is None else out for c in text)
