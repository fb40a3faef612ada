"""Masking statistics of generated pre-training data next to the recipe's values, and creation speed.

Builds a real corpus from the SQuAD v1.1 dev contexts (one sentence per line by a simple splitter, a blank
line between paragraphs; each paragraph a document), runs the same code as `tasks.create_pretraining_data`
(worker processes, sharded TFRecords), reads the records back through `pretraining_dataset` and prints, per
figure, the observed value, the recipe's expected value, the binomial standard error and z. Then does the
same for the dynamic-masking pipeline on the same text. Instances per second are wall-clock figures on this
machine (worker start-up included for the records).

    python -m benchmarks.pretraining_data_stats [--data ../shared/data] [--max_documents 2067] \
        [--dupe_factor 5] [--num_workers 2] [--do_whole_word_mask] [--dynamic_batches 100] \
        [--sentence_order] [--ngram_masking]

--sentence_order (ALBERT's sentence-order labels) adds the swap rate of the coin-flip pairs; --ngram_masking
(ALBERT's spans of 1 to 3 words) the distribution of the span lengths (1/n normalised: 6/11, 3/11, 2/11).
"""

import argparse
import os
import pathlib
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    default_data = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data"
    parser.add_argument("--data", type=pathlib.Path, default=pathlib.Path(os.environ.get(
        "OFFICIAL_BERT_SHARED_DATA", default_data)))
    parser.add_argument("--max_documents", type=int, default=None, help="SQuAD paragraphs used (default: all)")
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--max_predictions_per_seq", type=int, default=20)
    parser.add_argument("--masked_lm_prob", type=float, default=0.15)
    parser.add_argument("--short_seq_prob", type=float, default=0.1)
    parser.add_argument("--dupe_factor", type=int, default=5)
    parser.add_argument("--do_whole_word_mask", action="store_true")
    parser.add_argument("--sentence_order", action="store_true", help="ALBERT's sentence-order labels")
    parser.add_argument("--ngram_masking", action="store_true", help="ALBERT's n-gram masking (TFRecords only)")
    parser.add_argument("--random_seed", type=int, default=12345)
    parser.add_argument("--num_workers", type=int, default=2)
    parser.add_argument("--num_output_shards", type=int, default=4)
    parser.add_argument("--chunk_chars", type=int, default=200_000)
    parser.add_argument("--dynamic_batches", type=int, default=100, help="batches of 64 (0: skip the dynamic run)")
    args = parser.parse_args()

    from official_bert.data.pretraining_dataset import dynamic_masking_dataset, pretraining_dataset
    from official_bert.data.pretraining_vocab import MaskingVocab
    from official_bert.data.pretraining_records import output_paths
    from official_bert.data.pretraining_stats import MaskingStatistics
    from official_bert.data.pretraining_writer import PretrainingDataConfig, write_pretraining_records
    from official_bert.data.sentence_corpus import squad_documents, write_documents
    from official_bert.text import BertTokenizer

    vocab_file = str(args.data / "bert-vocab" / "bert-base-uncased-vocab.txt")
    documents = squad_documents(args.data / "squad" / "v1.1" / "dev-v1.1.json", args.max_documents)
    work = tempfile.mkdtemp(prefix="pretraining_data_stats_")
    corpus = os.path.join(work, "squad_contexts.txt")
    write_documents(corpus, documents)
    print(f"corpus: {len(documents)} SQuAD v1.1 dev paragraphs, {sum(len(d) for d in documents)} sentences -> "
          f"{corpus}")
    config = PretrainingDataConfig(
        vocab_file=vocab_file, max_seq_length=args.max_seq_length, max_predictions_per_seq=args.max_predictions_per_seq,
        masked_lm_prob=args.masked_lm_prob, short_seq_prob=args.short_seq_prob, dupe_factor=args.dupe_factor,
        do_whole_word_mask=args.do_whole_word_mask, random_seed=args.random_seed, chunk_chars=args.chunk_chars,
        sentence_order=args.sentence_order, ngram_masking=args.ngram_masking)
    paths = output_paths(os.path.join(work, "records", "squad-*.tfrecord"), args.num_output_shards)
    start = time.perf_counter()
    result = write_pretraining_records([corpus], paths, config, num_workers=args.num_workers)
    seconds = time.perf_counter() - start
    written = result["statistics"]

    tokenizer = BertTokenizer(vocab_file=vocab_file)
    vocab = MaskingVocab.from_tokenizer(tokenizer)
    stats = MaskingStatistics(vocab, args.masked_lm_prob, args.max_predictions_per_seq, args.do_whole_word_mask,
                              args.sentence_order, args.ngram_masking)
    for batch in pretraining_dataset(os.path.join(work, "records", "squad-*.tfrecord"), 256, args.max_seq_length,
                                     args.max_predictions_per_seq, is_training=False):
        stats.update({k: v.numpy() for k, v in batch.items()})
    for key in ("document_passes", "short_targets", "generated_instances", "forced_random_next", "ngram_1",
                "ngram_2", "ngram_3"):
        stats.counts[key] = written.counts[key]  # generator-side facts the records do not hold
    print(f"\n== TFRecords (create_pretraining_data recipe: max_seq_length={args.max_seq_length}, "
          f"max_predictions_per_seq={args.max_predictions_per_seq}, masked_lm_prob={args.masked_lm_prob}, "
          f"short_seq_prob={args.short_seq_prob}, dupe_factor={args.dupe_factor}, "
          f"do_whole_word_mask={args.do_whole_word_mask}, sentence_order={args.sentence_order}, "
          f"ngram_masking={args.ngram_masking}), read back from {len(paths)} files")
    print(stats.format_report(short_seq_prob=args.short_seq_prob))
    print(f"creation: {stats.counts['instances']} instances in {seconds:.1f} s with {args.num_workers} worker(s) = "
          f"{stats.counts['instances'] / seconds:.0f} instances/s (wall clock, worker start-up included)")
    # The same work in this process, TensorFlow already loaded: the per-core creation rate without start-up.
    single = output_paths(os.path.join(work, "single", "squad-*.tfrecord"), args.num_output_shards)
    start = time.perf_counter()
    write_pretraining_records([corpus], single, config, num_workers=0)
    seconds = time.perf_counter() - start
    same = all(open(a, "rb").read() == open(b, "rb").read() for a, b in zip(paths, single))
    print(f"creation in one process: {stats.counts['instances'] / seconds:.0f} instances/s "
          f"({seconds:.1f} s; tokenizing, pairing, masking, serializing, writing); files identical to the "
          f"{args.num_workers}-worker run: {same}")

    if args.dynamic_batches:
        dataset = dynamic_masking_dataset(corpus, tokenizer, 64, args.max_seq_length, args.max_predictions_per_seq,
                                          args.masked_lm_prob, is_training=True, seed=args.random_seed,
                                          do_whole_word_mask=args.do_whole_word_mask,
                                          short_seq_prob=args.short_seq_prob, sentence_order=args.sentence_order)
        dynamic = MaskingStatistics(vocab, args.masked_lm_prob, args.max_predictions_per_seq, args.do_whole_word_mask,
                                    args.sentence_order)
        iterator = iter(dataset)
        dynamic.update({k: v.numpy() for k, v in next(iterator).items()})  # warm-up batch (tracing)
        start = time.perf_counter()
        for _ in range(args.dynamic_batches - 1):
            dynamic.update({k: v.numpy() for k, v in next(iterator).items()})
        seconds = time.perf_counter() - start
        print(f"\n== Dynamic masking ({args.dynamic_batches} batches of 64 from the text file)")
        print(dynamic.format_report())
        print(f"dynamic pipeline: {64 * (args.dynamic_batches - 1) / seconds:.0f} instances/s after the first batch "
              f"(statistics included)")
    print(f"\n(files kept in {work})")


if __name__ == "__main__":
    main()
