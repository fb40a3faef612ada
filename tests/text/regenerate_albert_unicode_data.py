"""Regenerates official_bert/text/data/albert_unicode_data.json.gz by measuring Hugging Face `tokenizers`.

ALBERT's tokenizer (transformers' `AlbertTokenizerFast`) normalizes with `tokenizers`' NFKD,
StripAccents and Lowercase, then splits words on `char::is_whitespace`. Those depend on Unicode tables
frozen inside `tokenizers` (Python's `unicodedata` differs on ~800 code points), so they are measured
here, code point by code point. Hangul syllables are left out: their NFKD is algorithmic and computed.

Run (needs `tokenizers`, a test-only dependency):

    python -m tests.text.regenerate_albert_unicode_data            # rewrite the data file
    python -m tests.text.regenerate_albert_unicode_data --check    # exit 1 if the data file is stale

tests/text/test_sentencepiece_tokenizer.py runs the same measurement and compares.
"""

import sys

from official_bert.text import albert_normalization
from tests.text.regenerate_unicode_data import ALL_CODE_POINTS, code_point_runs, write_or_check


def _changed(normalizer, skip=()):
    out = {}
    for cp in ALL_CODE_POINTS:
        if cp in skip:
            continue
        text = chr(cp)
        normalized = normalizer.normalize_str(text)
        if normalized != text:
            out[str(cp)] = normalized
    return out


def measure():
    """Returns the data dict that albert_normalization.load_raw() reads."""
    from tokenizers import normalizers, pre_tokenizers

    hangul = set(range(albert_normalization.HANGUL_FIRST, albert_normalization.HANGUL_LAST + 1))
    strip = normalizers.StripAccents()
    marks = [cp for cp in ALL_CODE_POINTS if strip.normalize_str("a" + chr(cp)) == "a"]
    splitter = pre_tokenizers.WhitespaceSplit()
    whitespace = [cp for cp in ALL_CODE_POINTS if len(splitter.pre_tokenize_str("a" + chr(cp) + "a")) == 2]
    return {
        "format": 1,
        "nfkd": _changed(normalizers.NFKD(), skip=hangul),
        "marks": code_point_runs(marks),
        "lower": _changed(normalizers.Lowercase()),
        "whitespace": code_point_runs(whitespace),
    }


def main(argv):
    return write_or_check(argv, measure(), albert_normalization.load_raw, albert_normalization.DATA_FILE)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
