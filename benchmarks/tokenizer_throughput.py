"""Texts per second: our in-graph tokenizer (tf.data, batched, parallel) vs `tokenizers.encode_batch`.

Both tokenize GLUE SST-2 train (67,349 sentences) without special tokens, truncation or padding, in the same
process on the same machine; each is timed as the best of a few repeats after a warm-up, and the ids are
checked to be identical. `--tokenizer=wordpiece` (default): our `BertTokenizer` and the uncased vocab;
`sentencepiece`: ALBERT's `SentencepieceTokenizer` and `AlbertTokenizerFast`, with a 2,000-piece unigram model
trained here on the sentences (ALBERT's options; no ALBERT `spiece.model` is reachable here); `bpe`: RoBERTa's
`BytePairTokenizer` and `RobertaTokenizerFast`, with a byte-level BPE of 8,000 merges trained here on the
sentences. Ours is timed without offsets and with them (`--with_offsets`: SQuAD and tagging need them;
`tokenizers` always computes them).

    python -m benchmarks.tokenizer_throughput [--data ../shared/data] [--repeats 3] [--batch_size 1024]
    python -m benchmarks.tokenizer_throughput --tokenizer=sentencepiece --with_offsets
    python -m benchmarks.tokenizer_throughput --tokenizer=bpe
"""

import argparse
import functools
import os
import pathlib
import shutil
import time


def _sst2_train(data):
    with open(data / "glue" / "SST-2" / "train.tsv", encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f]
    column = rows[0].index("sentence")
    return [row[column] for row in rows[1:]]


def _wordpiece_pair(data):
    """Our BertTokenizer and `tokenizers`' on the uncased vocab (all-MiniLM-L6-v2's tokenizer.json)."""
    import tokenizers

    from official_bert.text import BertTokenizer

    return (BertTokenizer(vocab_file=str(data / "bert-vocab" / "bert-base-uncased-vocab.txt")),
            tokenizers.Tokenizer.from_file(str(data / "all-MiniLM-L6-v2" / "tokenizer.json")))


def _sentencepiece_pair(texts):
    """Our SentencepieceTokenizer and AlbertTokenizerFast's `tokenizers` backend, on a unigram model trained on
    `texts` with ALBERT's options."""
    import tempfile

    import sentencepiece
    import transformers

    from official_bert.text.sentencepiece_tokenizer import SentencepieceTokenizer

    directory = tempfile.mkdtemp(prefix="spiece_")
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(texts), model_prefix=os.path.join(directory, "spiece"), vocab_size=2000,
        model_type="unigram", pad_id=0, unk_id=1, bos_id=-1, eos_id=-1, control_symbols=["[CLS]", "[SEP]", "[MASK]"],
        user_defined_symbols=["(", ")", '"', "-", ".", "–", "£", "€"], num_threads=2, minloglevel=2)
    reference = transformers.AlbertTokenizerFast.from_pretrained(directory).backend_tokenizer
    reference.encode_special_tokens = True  # literal "[SEP]" is text, as in ours
    ours = SentencepieceTokenizer(model_file=os.path.join(directory, "spiece.model"))
    shutil.rmtree(directory)  # both tokenizers hold what they read
    return ours, reference


BPE_SPECIAL_TOKENS = ("<s>", "<pad>", "</s>", "<unk>", "<mask>")  # RoBERTa's


def train_byte_level_bpe(texts, directory, num_merges=8000):
    """Trains a byte-level BPE of `num_merges` merges on `texts` with Hugging Face `tokenizers` (RoBERTa's special
    tokens, no prefix space) and writes it in RoBERTa's format, `vocab.json` + `merges.txt`, in `directory`
    (created if missing); returns `directory`."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=256 + len(BPE_SPECIAL_TOKENS) + num_merges,
                                  special_tokens=list(BPE_SPECIAL_TOKENS),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tokenizer.train_from_iterator(texts, trainer)
    pathlib.Path(directory).mkdir(parents=True, exist_ok=True)
    tokenizer.model.save(str(directory))
    return directory


def _bpe_pair(texts):
    """Our BytePairTokenizer and RobertaTokenizerFast's `tokenizers` backend, on a byte-level BPE of 8,000 merges
    trained on `texts`."""
    import tempfile

    import transformers

    from official_bert.text import BytePairTokenizer

    directory = train_byte_level_bpe(texts, tempfile.mkdtemp(prefix="bpe_"))
    vocab, merges = os.path.join(directory, "vocab.json"), os.path.join(directory, "merges.txt")
    reference = transformers.RobertaTokenizerFast(vocab, merges).backend_tokenizer
    ours = BytePairTokenizer(vocab, merges)
    shutil.rmtree(directory)  # both tokenizers hold what they read
    return ours, reference


def _best_of(repeats, fn):
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def main():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # here, not at import: tests import this module
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    default_data = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data"
    parser.add_argument("--data", type=pathlib.Path, default=pathlib.Path(os.environ.get(
        "OFFICIAL_BERT_SHARED_DATA", default_data)))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch_size", type=int, default=1024)
    parser.add_argument("--tokenizer", choices=["wordpiece", "sentencepiece", "bpe"], default="wordpiece")
    parser.add_argument("--with_offsets", action="store_true", help="also time ours with byte offsets")
    args = parser.parse_args()

    import tensorflow as tf
    import tokenizers

    from official_bert.text.dataset import tokenize_dataset

    texts = _sst2_train(args.data)
    pairs = {"wordpiece": lambda: _wordpiece_pair(args.data), "sentencepiece": lambda: _sentencepiece_pair(texts),
             "bpe": lambda: _bpe_pair(texts)}
    ours, reference = pairs[args.tokenizer]()
    reference.no_truncation()
    reference.no_padding()
    text_tensor = tf.constant(texts)

    def run_ours(with_offsets=False):
        if with_offsets:  # the offsets are outputs (fetched), so the graph cannot prune their ops away
            tokenizer = functools.partial(ours, with_offsets=True)
            return [tuple(t.values.numpy() for t in b)
                    for b in tokenize_dataset(tokenizer, text_tensor, batch_size=args.batch_size)]
        return [(b.values.numpy(), b.row_splits.numpy())
                for b in tokenize_dataset(ours, text_tensor, batch_size=args.batch_size)]

    def run_reference():
        return reference.encode_batch(texts, add_special_tokens=False)

    run_ours()  # warm-up: traces the tf.data map function
    run_reference()
    ours_s, batches = _best_of(args.repeats, run_ours)
    ref_s, encodings = _best_of(args.repeats, run_reference)
    if args.with_offsets:
        run_ours(with_offsets=True)
        offsets_s, _ = _best_of(args.repeats, lambda: run_ours(with_offsets=True))

    ours_ids = [values[splits[i]:splits[i + 1]].tolist() for values, splits in batches
                for i in range(len(splits) - 1)]
    same = sum(a == e.ids for a, e in zip(ours_ids, encodings))
    print(f"SST-2 train: {len(texts)} texts, {os.cpu_count()} CPU cores, batch {args.batch_size}, "
          f"best of {args.repeats}")
    rows = [(f"ours (tf.data, {type(ours).__name__})", ours_s)]
    if args.with_offsets:
        rows.append(("ours with offsets", offsets_s))
    rows.append((f"tokenizers {tokenizers.__version__} encode_batch", ref_s))
    for label, seconds in rows:
        print(f"  {label:42s}{len(texts) / seconds:12,.0f} texts/s  ({seconds:.3f} s)")
    print(f"  ratio ours / tokenizers: {ref_s / ours_s:.2f}x"
          + (f"; with offsets {ref_s / offsets_s:.2f}x" if args.with_offsets else ""))
    print(f"  identical ids: {same}/{len(texts)}")


if __name__ == "__main__":
    main()
