"""Regenerates official_bert/text/data/byte_level_classes.json.gz by measuring the reference pre-tokenizer.

GPT-2's pre-tokenization regex (RoBERTa's byte-level BPE) sees four kinds of code point: `\\s`, `\\p{L}`, `\\p{N}`
and the rest. Which code point is which depends on the Unicode tables frozen inside Oniguruma in `tokenizers`
(Unicode 16 in tokenizers 0.23), not Python's `unicodedata` (Unicode 14 in Python 3.11), so they are measured
here code point by code point: a code point between two letters that stays one piece is a letter, and so on.

Run (needs `tokenizers`, a test-only dependency):

    python -m tests.text.regenerate_byte_level_classes            # rewrite the data file
    python -m tests.text.regenerate_byte_level_classes --check    # exit 1 if the data file is stale
"""

import gzip
import json
import sys

from official_bert.text import byte_level

GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


def measured_classes(code_points=range(0x110000)):
    """{code point: class} as `tokenizers`' ByteLevel regex splits it (surrogates, which no str holds: OTHER)."""
    from tokenizers import Regex, pre_tokenizers

    split = pre_tokenizers.Split(Regex(GPT2_PATTERN), behavior="isolated")
    classes = {}
    for cp in code_points:
        if 0xD800 <= cp <= 0xDFFF:
            classes[cp] = byte_level.OTHER
            continue
        char = chr(cp)
        kinds = [len(split.pre_tokenize_str(f"{c}{char}{c}")) == 1 for c in ("a", "1", ".")]
        classes[cp] = (byte_level.LETTER if kinds[0] else byte_level.NUMBER if kinds[1]
                       else byte_level.OTHER if kinds[2] else byte_level.WHITESPACE)
    return classes


def ranges(classes):
    starts, values = [], []
    for cp in sorted(classes):
        if not values or classes[cp] != values[-1]:
            starts.append(cp)
            values.append(classes[cp])
    return {"starts": starts, "classes": values}


def main(argv):
    import tokenizers

    data = {"source": f"tokenizers {tokenizers.__version__}, ByteLevel regex {GPT2_PATTERN}",
            **ranges(measured_classes())}
    if "--check" in argv:
        stale = byte_level.load_class_ranges_json() != {k: data[k] for k in ("starts", "classes")}
        print("stale" if stale else "up to date")
        return 1 if stale else 0
    with gzip.open(byte_level.CLASSES_FILE, "wt", encoding="utf-8") as f:
        json.dump(data, f)
    print(f"wrote {byte_level.CLASSES_FILE}: {len(data['starts'])} ranges")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
