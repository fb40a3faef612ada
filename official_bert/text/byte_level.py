"""The tables of GPT-2's byte-level pre-tokenization (RoBERTa's), computed once in Python for the in-graph tokenizer.

GPT-2 splits text with the regex `'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+`
(Hugging Face `tokenizers`' `ByteLevel` pre-tokenizer, Oniguruma), then maps every UTF-8 byte of a piece to a
printable character (`bytes_to_unicode`) before BPE. The in-graph tokenizer evaluates the regex from one class per
code point (letter, number, whitespace, other): `class_ranges` gives them as sorted ranges, measured from
`tokenizers` (Oniguruma's Unicode tables, not Python's) by tests/text/regenerate_byte_level_classes.py.
"""

import functools
import gzip
import json
import os

import numpy as np

# Code-point classes of the pre-tokenization regex.
WHITESPACE, LETTER, NUMBER, OTHER = 0, 1, 2, 3

CLASSES_FILE = os.path.join(os.path.dirname(__file__), "data", "byte_level_classes.json.gz")


def load_class_ranges_json() -> dict:
    """The data file's `{"starts": [...], "classes": [...]}`."""
    with gzip.open(CLASSES_FILE, "rt", encoding="utf-8") as f:
        data = json.load(f)
    return {"starts": data["starts"], "classes": data["classes"]}


@functools.lru_cache(maxsize=1)
def class_ranges():
    """`(starts, classes)`: int32 arrays; code points from `starts[i]` up to `starts[i + 1]` have `classes[i]`."""
    data = load_class_ranges_json()
    return np.asarray(data["starts"], np.int32), np.asarray(data["classes"], np.int32)


@functools.lru_cache(maxsize=1)
def bytes_to_unicode():
    """GPT-2's byte -> printable character map (`tokenizers`' `ByteLevel` alphabet): printable Latin-1 bytes map
    to themselves, the others to U+0100 upwards, in order (the space byte 0x20 becomes 'Ġ')."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    mapping, extra = {}, 0
    for byte in range(256):
        if byte in printable:
            mapping[byte] = chr(byte)
        else:
            mapping[byte] = chr(256 + extra)
            extra += 1
    return mapping
