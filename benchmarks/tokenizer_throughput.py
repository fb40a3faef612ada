"""Texts per second: our in-graph BertTokenizer (tf.data, batched, parallel) vs `tokenizers.encode_batch`.

Both tokenize GLUE SST-2 train (67,349 sentences) with the same uncased vocab, without special tokens,
truncation or padding, in the same process on the same machine; each is timed as the best of a few
repeats after a warm-up, and the ids are checked to be identical.

    python -m benchmarks.tokenizer_throughput [--data ../shared/data] [--repeats 3] [--batch_size 1024]
"""

import argparse
import os
import pathlib
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def _sst2_train(data):
    with open(data / "glue" / "SST-2" / "train.tsv", encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f]
    column = rows[0].index("sentence")
    return [row[column] for row in rows[1:]]


def _best_of(repeats, fn):
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    default_data = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data"
    parser.add_argument("--data", type=pathlib.Path, default=pathlib.Path(os.environ.get(
        "OFFICIAL_BERT_SHARED_DATA", default_data)))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch_size", type=int, default=1024)
    args = parser.parse_args()

    import tensorflow as tf
    import tokenizers

    from official_bert.text import BertTokenizer
    from official_bert.text.dataset import tokenize_dataset

    texts = _sst2_train(args.data)
    ours = BertTokenizer(vocab_file=str(args.data / "bert-vocab" / "bert-base-uncased-vocab.txt"))
    reference = tokenizers.Tokenizer.from_file(str(args.data / "all-MiniLM-L6-v2" / "tokenizer.json"))
    reference.no_truncation()
    reference.no_padding()
    text_tensor = tf.constant(texts)

    def run_ours():
        batches = [(b.values.numpy(), b.row_splits.numpy())
                   for b in tokenize_dataset(ours, text_tensor, batch_size=args.batch_size)]
        return batches

    def run_reference():
        return reference.encode_batch(texts, add_special_tokens=False)

    run_ours()  # warm-up: traces the tf.data map function
    run_reference()
    ours_s, batches = _best_of(args.repeats, run_ours)
    ref_s, encodings = _best_of(args.repeats, run_reference)

    ours_ids = [values[splits[i]:splits[i + 1]].tolist() for values, splits in batches
                for i in range(len(splits) - 1)]
    same = sum(a == e.ids for a, e in zip(ours_ids, encodings))
    print(f"SST-2 train: {len(texts)} texts, {os.cpu_count()} CPU cores, batch {args.batch_size}, "
          f"best of {args.repeats}")
    print(f"  ours (tf.data, BertTokenizer):       {len(texts) / ours_s:12,.0f} texts/s  ({ours_s:.3f} s)")
    print(f"  tokenizers {tokenizers.__version__} encode_batch:    {len(texts) / ref_s:12,.0f} texts/s  ({ref_s:.3f} s)")
    print(f"  ratio ours / tokenizers: {ref_s / ours_s:.2f}x")
    print(f"  identical ids: {same}/{len(texts)}")


if __name__ == "__main__":
    main()
