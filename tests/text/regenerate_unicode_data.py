"""Regenerates official_bert/text/data/bert_unicode_data.json.gz by measuring the reference tokenizers.

The in-graph tokenizer maps every code point the way Hugging Face `tokenizers`' `BertNormalizer` does,
and repairs the few places where tensorflow-text's pre-tokenizer splits words differently from
`BertPreTokenizer`. Both behaviours depend on Unicode tables frozen inside those libraries (the
`unicode_categories` crate in `tokenizers`, ICU in tensorflow-text), so they are measured here, code
point by code point, rather than derived from Python's `unicodedata` (whose Unicode version differs).

Run (needs `tokenizers`, a test-only dependency):

    python -m tests.text.regenerate_unicode_data            # rewrite the data file
    python -m tests.text.regenerate_unicode_data --check    # exit 1 if the data file is stale

tests/text/test_unicode_data.py runs the same measurement and compares.
"""

import gzip
import json
import sys

from official_bert.text import unicode_data

ALL_CODE_POINTS = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]  # no surrogates


def _normalization_map(lower_case):
    """{code point: normalized string} for every code point BertNormalizer changes."""
    from tokenizers import normalizers

    normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                            strip_accents=lower_case, lowercase=lower_case)
    changed = {}
    for cp in ALL_CODE_POINTS:
        text = chr(cp)
        out = normalizer.normalize_str(text)
        if out != text:
            changed[cp] = out
    return changed


def _hf_splits():
    """Code points BertPreTokenizer splits a word on (whitespace and punctuation)."""
    from tokenizers import pre_tokenizers

    pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    return {cp for cp in ALL_CODE_POINTS[1:] if len(pre_tokenizer.pre_tokenize_str("a" + chr(cp) + "a")) != 1}


def _tf_text_splits():
    """Code points tensorflow-text's FastWordpieceTokenizer splits a word on."""
    import tensorflow as tf
    import tensorflow_text as tf_text

    tokenizer = tf_text.FastWordpieceTokenizer(vocab=["[UNK]", "a", "##a"], token_out_type=tf.int32,
                                               max_bytes_per_word=1000)
    cps = ALL_CODE_POINTS[1:]
    pieces = tokenizer.tokenize(tf.constant(["a" + chr(cp) + "a" for cp in cps])).row_lengths().numpy()
    # "a?a" stays one word -> one piece ([UNK] or "a ##a ##a" never happens for ? != "a").
    return {cp for cp, n in zip(cps, pieces) if n != 1 and cp != ord("a")}


def code_point_runs(code_points):
    """Sorted code points -> [[first, last], ...] runs."""
    runs = []
    for cp in sorted(code_points):
        if runs and runs[-1][1] == cp - 1:
            runs[-1][1] = cp
        else:
            runs.append([cp, cp])
    return runs


def _encode_map(changed):
    drop = [cp for cp, out in changed.items() if out == ""]
    space = [cp for cp, out in changed.items() if out == " "]
    pad_self = [cp for cp, out in changed.items() if out == f" {chr(cp)} "]
    special = set(drop) | set(space) | set(pad_self)
    explicit = {str(cp): out for cp, out in sorted(changed.items()) if cp not in special}
    return {"drop": code_point_runs(drop), "space": code_point_runs(space), "pad": code_point_runs(pad_self),
            "map": explicit}


def measure():
    """Returns the data dict that unicode_data.load() reads."""
    import tokenizers
    import tensorflow_text

    hf_splits = _hf_splits()
    tf_splits = _tf_text_splits()
    return {
        "format": 1,
        "measured_with": {"tokenizers": tokenizers.__version__, "tensorflow_text": tensorflow_text.__version__},
        "uncased": _encode_map(_normalization_map(lower_case=True)),
        "cased": _encode_map(_normalization_map(lower_case=False)),
        "hf_only_splits": code_point_runs(hf_splits - tf_splits),
        "tf_only_splits": code_point_runs(tf_splits - hf_splits),
    }


def write_or_check(argv, data, load_shipped, data_file):
    """Writes `data` to `data_file` as gzipped JSON, or with `--check` in `argv` compares it with `load_shipped()`.

    Returns: the exit status (1: `--check` found the shipped data stale).
    """
    if "--check" in argv:
        stale = data != load_shipped()
        print("stale" if stale else "up to date")
        return 1 if stale else 0
    text = json.dumps(data, ensure_ascii=True, separators=(",", ":"), sort_keys=True)
    with open(data_file, "wb") as f, gzip.GzipFile(fileobj=f, mode="wb", mtime=0) as z:
        z.write(text.encode("utf-8"))  # mtime=0: the same data gives the same bytes
    print(f"wrote {data_file}")
    return 0


def main(argv):
    return write_or_check(argv, measure(), unicode_data.load_raw, unicode_data.DATA_FILE)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
