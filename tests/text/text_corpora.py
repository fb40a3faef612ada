"""Real texts for tokenizer parity: GLUE SST-2, MRPC, CoLA, SQuAD v1.1 dev, CoNLL-2003, hard cases.

Also a command that prints the mismatch counts (ids, then offsets) of BertTokenizer against Hugging Face
`tokenizers`:

    python -m tests.text.text_corpora [path/to/shared/data]
"""

import json
import pathlib
import sys


def _tsv_rows(path):
    with open(path, encoding="utf-8-sig", newline="") as f:  # MRPC starts with a BOM
        return [line.rstrip("\n").split("\t") for line in f]


def sst2(data):
    texts = []
    for split in ("train", "dev", "test"):
        rows = _tsv_rows(data / "glue" / "SST-2" / f"{split}.tsv")
        column = rows[0].index("sentence")
        texts += [row[column] for row in rows[1:]]
    return texts


def mrpc(data):
    texts = []
    for split in ("train", "dev", "test"):
        for row in _tsv_rows(data / "glue" / "MRPC" / f"{split}.tsv")[1:]:
            texts += [row[3], row[4]]
    return texts


def mrpc_pairs(data, split="dev"):
    return [(row[3], row[4]) for row in _tsv_rows(data / "glue" / "MRPC" / f"{split}.tsv")[1:]]


def cola(data):
    texts = []
    for split in ("train_part", "val_part", "dev"):  # GLUE 4-column files, no header
        texts += [row[3] for row in _tsv_rows(data / "glue" / "CoLA" / f"{split}.tsv")]
    texts += [row[1] for row in _tsv_rows(data / "glue" / "CoLA" / "test.tsv")[1:]]
    return texts


def squad(data):
    with open(data / "squad" / "v1.1" / "dev-v1.1.json", encoding="utf-8") as f:
        articles = json.load(f)["data"]
    texts = []
    for article in articles:
        for paragraph in article["paragraphs"]:
            texts.append(paragraph["context"])
            texts += [qa["question"] for qa in paragraph["qas"]]
    return texts


def conll2003(data):
    """One text per sentence: the tokens joined by spaces."""
    texts = []
    for split in ("train", "valid", "test"):
        words = []
        with open(data / "conll2003" / "hf-iob2" / f"{split}.txt", encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if not line:
                    if words:
                        texts.append(" ".join(words))
                    words = []
                elif not line.startswith("-DOCSTART-"):
                    words.append(line.split(" ")[0])
        if words:
            texts.append(" ".join(words))
    return texts


REAL_CORPORA = {"sst2": sst2, "mrpc": mrpc, "cola": cola, "squad": squad, "conll2003": conll2003}


def hard_cases():
    """The hand-built corpus of edge cases (tests/text/hard_cases.txt plus generated ones)."""
    path = pathlib.Path(__file__).with_name("hard_cases.txt")
    # Escapes keep control and invisible characters readable in the file.
    texts = [line.rstrip("\n").encode("ascii", "backslashreplace").decode("unicode_escape")
             for line in path.read_text(encoding="utf-8").splitlines() if not line.startswith("#")]
    texts += ["", " ", "   ", "\t\n\r", "\u3000\u00a0\u2028", "\x00", "\ufffd", "\u200b\u200d\ufeff"]
    # Word lengths around the reference's 100-character limit, in characters and in bytes.
    for n in (98, 99, 100, 101, 102, 150):
        texts += ["a" * n, "x " + "ab" * (n // 2) + "a" * (n % 2) + " y",  # ASCII: chars == bytes
                  "é" * n,  # 2 bytes per character (precomposed, stripped to "e")
                  "e\u0301" * n,  # decomposed: 2n characters in, n after accent stripping
                  "ж" * n, "中" * n, "😀" * n, "ab" * (n // 2) + "é" + "cd"]
    for n in (24, 25, 26, 33, 34, 49, 50, 51):  # 2-, 3- and 4-byte characters around 100 bytes
        texts += ["ж" * n, "ж" * n + "z" * (100 - n), "日本" + "ह" * n, "ह" * n + "a", "😀" * n, "x" + "😀" * n]
    texts += ["un" + "aff" * 40 + "able", "##" * 60, "[CLS] " * 3, "word" * 26]
    # Every 97th code point of the BMP and the supplementary planes (skipping surrogates), in words.
    sample = [chr(cp) for cp in range(0x20, 0x110000, 97) if not 0xD800 <= cp <= 0xDFFF]
    texts += ["a" + "".join(sample[i:i + 8]) + "b " + " ".join(sample[i:i + 8])
              for i in range(0, len(sample), 8)]
    return texts


# Characters the reference normalizer deletes: format characters (zero-width space, BOM, direction
# marks, word joiner, soft hyphen, zero-width (non-)joiners), controls (NUL, SOH, DEL, NEL), private use.
DELETED = "\u200b\ufeff\u200e\u200f\u2060\u00ad\u200c\u200d\x00\x01\x7f\x85\ue000"
# Combining marks: deleted with the accents when lower-casing, kept (inside the word) when cased.
MARKS = "\u0301\u0308\u0323\u030a"
# Where a deleted character X goes: inside, before and after words, between word pieces (un ##aff ##able),
# before punctuation, after CJK and after characters the normalizer rewrites (é -> e, İ -> i + mark,
# ǆ -> dž, 한 -> three jamo, Ж -> ж), runs of them, and text that is nothing else.
_PLACES = ("wordX", "wordX next", "woXrd", "Xword", "word X", "unXaffXable", "unaffableX.", "wordXXX more",
           "(wordX)", "wordX,X next", "中X文X", "caféX", "İX", "ǆX ǆ", "한X국", "ЖX", "XXX", "aX", "X")


def deleted_character_cases():
    """Texts with each of `DELETED` and `MARKS` at each of `_PLACES`, plus accent-stripping cases."""
    texts = [place.replace("X", char) for char in DELETED + MARKS for place in _PLACES]
    return texts + ["cafe\u0301", "Cafe\u0301\u0301 bar", "CAFÉ naïve", "e\u0301\u0301", "Zu\u0308rich!",
                    "A\u030angstro\u0308m\u200b.", "\u0301lead", "o\u0323\u0302\u200b\ufeff x"]


def reference_tokenizer(tokenizer_json=None, vocab_file=None, special_tokens_as_text=False):
    """A Hugging Face `tokenizers.Tokenizer` with no special tokens added, no truncation, no padding.

    Args:
        tokenizer_json: path of an uncased BERT `tokenizer.json`; or
        vocab_file: a `vocab.txt` for a cased reference (BertNormalizer without lower-casing or accent
            stripping, BertPreTokenizer, WordPiece).
        special_tokens_as_text: tokenize literal "[CLS]", "[SEP]", ... in the text as text (as Google's
            original tokenizer and ours do) instead of emitting the special ids.
    """
    import tokenizers

    if tokenizer_json is not None:
        tokenizer = tokenizers.Tokenizer.from_file(str(tokenizer_json))
    else:
        tokenizer = tokenizers.Tokenizer(tokenizers.models.WordPiece.from_file(str(vocab_file), unk_token="[UNK]"))
        tokenizer.normalizer = tokenizers.normalizers.BertNormalizer(lowercase=False, strip_accents=False)
        tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.BertPreTokenizer()
    tokenizer.encode_special_tokens = special_tokens_as_text
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def reference_ids(texts, tokenizer_json, special_tokens_as_text=False):
    """Ids from Hugging Face `tokenizers` (no special tokens added, no truncation).

    Args:
        texts: list of str.
        tokenizer_json: path of a `tokenizer.json`.
        special_tokens_as_text: as in `reference_tokenizer`.
    """
    tokenizer = reference_tokenizer(tokenizer_json, special_tokens_as_text=special_tokens_as_text)
    return [e.ids for e in tokenizer.encode_batch(texts, add_special_tokens=False)]


def our_ids(tokenizer, texts, batch_size=4096):
    import tensorflow as tf

    out = []
    for i in range(0, len(texts), batch_size):
        out += tokenizer(tf.constant(texts[i:i + batch_size])).to_list()
    return out


def mismatches(tokenizer, texts, tokenizer_json, special_tokens_as_text=False):
    """Indices of the texts whose ids differ from the reference."""
    ours = our_ids(tokenizer, texts)
    reference = reference_ids(texts, tokenizer_json, special_tokens_as_text)
    return [i for i, (a, b) in enumerate(zip(ours, reference)) if a != b]


def offset_mismatches(tokenizer, texts, reference, batch_size=4096):
    """Indices of the texts whose pieces, or their offsets, differ from the reference's.

    Args:
        tokenizer: a `BertTokenizer`; its byte offsets are compared with the reference's character
            offsets converted to UTF-8 byte offsets.
        texts: list of str.
        reference: a `tokenizers.Tokenizer` from `reference_tokenizer`.
        batch_size: texts per tokenizer call.
    """
    import tensorflow as tf

    bad = []
    for first in range(0, len(texts), batch_size):
        batch = texts[first:first + batch_size]
        ids, starts, ends = tokenizer(tf.constant(batch), with_offsets=True)
        expected = reference.encode_batch(batch, add_special_tokens=False)
        for i, (text, row_ids, row_starts, row_ends, encoding) in enumerate(
                zip(batch, ids.to_list(), starts.to_list(), ends.to_list(), expected)):
            byte_at = [0]  # byte offset of every character boundary
            for char in text:
                byte_at.append(byte_at[-1] + len(char.encode("utf-8")))
            if (row_ids != encoding.ids
                    or list(zip(row_starts, row_ends)) != [(byte_at[a], byte_at[b]) for a, b in encoding.offsets]):
                bad.append(first + i)
    return bad


def main(argv):
    data = pathlib.Path(argv[0]) if argv else pathlib.Path(__file__).resolve().parents[3] / "shared" / "data"
    from official_bert.text import BertTokenizer

    vocab_file = data / "bert-vocab" / "bert-base-uncased-vocab.txt"
    tokenizer = BertTokenizer(vocab_file=str(vocab_file))
    tokenizer_json = data / "all-MiniLM-L6-v2" / "tokenizer.json"
    corpora = {name: load(data) for name, load in REAL_CORPORA.items()}
    corpora["hard_cases"] = hard_cases()
    corpora["deleted_chars"] = deleted_character_cases()
    total = 0
    for name, texts in corpora.items():
        bad = mismatches(tokenizer, texts, tokenizer_json, special_tokens_as_text=name == "hard_cases")
        total += len(bad)
        print(f"ids      {name:14s} texts={len(texts):6d} mismatches={len(bad)}")
        for i in bad[:5]:
            print("   ", repr(texts[i][:120]))
    for lower_case in (True, False):
        ours = tokenizer if lower_case else BertTokenizer(vocab_file=str(vocab_file), lower_case=False)
        reference = reference_tokenizer(tokenizer_json if lower_case else None, vocab_file,
                                        special_tokens_as_text=True)
        for name, texts in corpora.items():
            bad = offset_mismatches(ours, texts, reference)
            total += len(bad)
            print(f"offsets  {name:14s} lower_case={lower_case!s:5s} texts={len(texts):6d} mismatches={len(bad)}")
            for i in bad[:5]:
                print("   ", repr(texts[i][:120]))
    print(f"total mismatches: {total}")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
