"""RoBERTa's byte-level BPE: a vocab trained here, a fuzz corpus, and the parity check against transformers.

`train_bpe` trains a byte-level BPE with Hugging Face `tokenizers` on real text of ../shared/data and saves it in
RoBERTa's format (`vocab.json` + `merges.txt`); `mismatches` compares our in-graph `BytePairTokenizer` with
`RobertaTokenizerFast` on ids and on character offsets. The command checks every text of the real corpora and
the fuzz corpus and prints the counts:

    python -m tests.text.bpe_parity [path/to/shared/data]
"""

import pathlib
import random
import sys

try:
    import text_corpora as corpora  # under pytest, tests/text is on sys.path
except ImportError:
    from tests.text import text_corpora as corpora

from benchmarks.tokenizer_throughput import BPE_SPECIAL_TOKENS as SPECIAL_TOKENS
from benchmarks.tokenizer_throughput import train_byte_level_bpe

NUM_MERGES = 8000


def train_bpe(data, directory, num_merges=NUM_MERGES):
    """Trains a byte-level BPE of `num_merges` merges on SST-2 and SQuAD text; writes vocab.json + merges.txt."""
    return train_byte_level_bpe(corpora.sst2(data)[:20000] + corpora.squad(data)[:3000], directory, num_merges)


_POOLS = {
    "ascii": list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"),
    "words": ["the", "The", "cat", "don", "I", "we", "You", "hello", "World", "naïve", "Straße", "ok"],
    "contractions": ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'RE", "'", "''", "'l", "'r"],
    "digits": ["0", "7", "12345", "3.14", "1,000", "٣٤", "½", "²", "Ⅻ", "①"],
    "punctuation": list(".,;:!?-\"()[]{}/@#$%^&*_+=|~`<>\\") + ["...", "--", "“", "”", "’", "—", "…"],
    "accents": ["é", "e\u0301", "ñ", "ü", "ø", "ß", "İ", "ﬁ", "Å", "a\u0308\u0301", "\u0301"],
    "cjk": ["日本語", "中文", "한국어", "ｶﾀｶﾅ", "の", "。", "ー"],
    "emoji": ["😀", "👍🏽", "👨\u200d👩\u200d👧", "🇫🇷", "❤️", "\U0001FAE0"],
    "control": ["\x00", "\x01", "\x07", "\x1b", "\x1c", "\x1f", "\x7f", "\x85", "\u200b", "\u200d", "\ufeff",
                "\u00ad"],
    "whitespace": [" ", "  ", "   ", "\t", "\n", "\r\n", "\n\n", "\u00a0", "\u2009", "\u3000", "\u2028", "\x0b",
                   "\x0c", " \t ", "\t "],
}


def fuzz_corpus(count=400, seed=0):
    """Random texts mixing words, contractions, digits, accents, CJK, emoji, control characters, whitespace runs,
    long words and random code points (never a special-token string, which `tokenizers` would not split)."""
    rng = random.Random(seed)
    texts = []
    while len(texts) < count:
        parts = []
        for _ in range(rng.randint(0, 30)):
            kind = rng.random()
            if kind < 0.05:
                parts.append(rng.choice("abxé日😀1") * rng.randint(30, 400))  # a long word
            elif kind < 0.1:
                cp = rng.randint(0, 0x10FFFF)
                parts.append(chr(cp) if not 0xD800 <= cp <= 0xDFFF else "?")
            else:
                parts.append(rng.choice(_POOLS[rng.choice(sorted(_POOLS))]))
            if rng.random() < 0.5:
                parts.append(rng.choice(_POOLS["whitespace"]))
        text = "".join(parts)
        if not any(token in text for token in SPECIAL_TOKENS):
            texts.append(text)
    return texts


def reference_tokenizer(directory):
    from transformers import RobertaTokenizerFast

    return RobertaTokenizerFast(str(pathlib.Path(directory) / "vocab.json"),
                                str(pathlib.Path(directory) / "merges.txt"))


def mismatches(ours, reference, texts, batch_size=1000):
    """(texts whose ids differ, texts whose character offsets differ, first differing text or None)."""
    import tensorflow as tf

    from official_bert.text.ragged_ops import characters_before

    bad_ids = bad_offsets = 0
    first = None
    for begin in range(0, len(texts), batch_size):
        batch = texts[begin:begin + batch_size]
        text = tf.constant(batch)
        ids, starts, ends = ours(text, with_offsets=True)
        char_starts = characters_before(text, starts.to_tensor(-1)).numpy()
        char_ends = characters_before(text, ends.to_tensor(-1)).numpy()
        encodings = reference(batch, add_special_tokens=False, return_offsets_mapping=True)
        for i, sample in enumerate(batch):
            got = ids[i].numpy().tolist()
            offsets = list(zip(char_starts[i][:len(got)].tolist(), char_ends[i][:len(got)].tolist()))
            expected_offsets = [tuple(o) for o in encodings["offset_mapping"][i]]
            if got != encodings["input_ids"][i]:
                bad_ids += 1
            elif offsets != expected_offsets:
                bad_offsets += 1
            else:
                continue
            first = first if first is not None else sample
    return bad_ids, bad_offsets, first


def main(argv):
    import tempfile

    from official_bert.text import BytePairTokenizer

    data = pathlib.Path(argv[0] if argv else pathlib.Path(__file__).resolve().parents[3] / "shared" / "data")
    directory = train_bpe(data, tempfile.mkdtemp(prefix="bpe_parity_"))
    ours = BytePairTokenizer(f"{directory}/vocab.json", f"{directory}/merges.txt")
    reference = reference_tokenizer(directory)
    print(f"byte-level BPE, {NUM_MERGES} merges trained on SST-2 + SQuAD text; RobertaTokenizerFast vs ours")
    for name, texts in [*((n, f(data)) for n, f in corpora.REAL_CORPORA.items()), ("fuzz", fuzz_corpus(5000))]:
        bad_ids, bad_offsets, first = mismatches(ours, reference, texts)
        print(f"{name:10s} {len(texts):6d} texts: {bad_ids} id mismatches, {bad_offsets} offset mismatches"
              + (f"; first: {first[:80]!r}" if first else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
