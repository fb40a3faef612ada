"""Text files -> BERT pre-training TFRecords (masked LM + next sentence), with the original recipe and flags.

ALBERT's variants: --sentence_order=true (sentence-order labels instead of next-sentence ones, for
`run_pretraining --objective=mlm_sop`) and --ngram_masking=true (spans of 1 to 3 words).

    python -m tasks.create_pretraining_data --input_file='corpus/*.txt' --output_file='out/wiki-*.tfrecord' \
        --vocab_file=../shared/data/bert-vocab/bert-base-uncased-vocab.txt --do_lower_case=true \
        --max_seq_length=128 --max_predictions_per_seq=20 --masked_lm_prob=0.15 --short_seq_prob=0.1 \
        --dupe_factor=10 --random_seed=12345 --num_output_shards=16 --num_workers=2

Input: UTF-8 text files (comma-separated globs), one sentence per line, a blank line between documents.
Output: `--num_output_shards` files with Google's features (`input_ids`, `input_mask`, `segment_ids`,
`masked_lm_positions`, `masked_lm_ids`, `masked_lm_weights`, `next_sentence_labels`), instances dealt
round-robin. A `*` in --output_file is replaced by `NNNNN-of-MMMMM` (so the same string is the glob that
`tasks.run_pretraining --input_file` reads); without one, shards are `<output_file>-NNNNN-of-MMMMM`. Existing
outputs are never overwritten.

Memory stays bounded: documents are streamed in chunks of --chunk_chars characters, each chunk is processed
by one of --num_workers processes (tokenized in batches, `dupe_factor` passes, shuffled), and the random next
sentence comes from another document of the same chunk rather than the whole corpus (see
`official_bert/data/pretraining_instances.py` for every difference from the original). The output depends on
--random_seed and --chunk_chars, not on --num_workers.
"""

import logging

from absl import app, flags

FLAGS = flags.FLAGS
REQUIRED_FLAGS = ("input_file", "output_file", "vocab_file")
flags.DEFINE_string("input_file", None, "Input text files: comma-separated globs.")
flags.DEFINE_string("output_file", None, "Output TFRecord name: comma-separated files, a name with one '*' "
                    "(replaced by NNNNN-of-MMMMM), or a prefix (shards <prefix>-NNNNN-of-MMMMM).")
flags.DEFINE_string("vocab_file", None, "WordPiece vocab.txt, or ALBERT's SentencePiece spiece.model.")
flags.DEFINE_boolean("do_lower_case", True, "Lower-case and strip accents (uncased models).")
flags.DEFINE_integer("max_seq_length", 128, "Tokens per instance, [CLS] and [SEP]s included.")
flags.DEFINE_integer("max_predictions_per_seq", 20, "Most masked-LM predictions per instance.")
flags.DEFINE_float("masked_lm_prob", 0.15, "Fraction of tokens predicted.")
flags.DEFINE_float("short_seq_prob", 0.1, "Probability that a document gets a random shorter target length.")
flags.DEFINE_integer("dupe_factor", 10, "Passes over the input, each with different pairs and masks.")
flags.DEFINE_boolean("do_whole_word_mask", False, "Mask whole words (all their pieces) at once.")
flags.DEFINE_boolean("sentence_order", False, "ALBERT's sentence-order prediction labels instead of next-sentence "
                     "ones: B is the rest of the chunk, A and B swapped half the time (label 1 = swapped).")
flags.DEFINE_boolean("ngram_masking", False, "ALBERT's n-gram masking: spans of 1 to 3 words (tokens, or whole "
                     "words with --do_whole_word_mask), length n with probability proportional to 1/n.")
flags.DEFINE_integer("random_seed", 12345, "Seed of everything random.")
flags.DEFINE_integer("num_output_shards", 1, "Output files.")
flags.DEFINE_integer("num_workers", 2, "Worker processes (0 or 1: in this process; the output is the same).")
flags.DEFINE_integer("chunk_chars", 2_000_000, "Characters of documents per chunk: the unit of work and the "
                     "buffer random next sentences are drawn from.")


def main(argv):
    from official_bert.cli import check_command_line
    from official_bert.data.pretraining_instances import check_recipe
    from official_bert.data.pretraining_records import output_paths
    from official_bert.data.pretraining_writer import PretrainingDataConfig, write_pretraining_records
    from official_bert.data.sentence_corpus import expand_file_patterns
    from official_bert.output_files import prepare_output_file

    check_command_line(argv, required=REQUIRED_FLAGS)
    if FLAGS.dupe_factor < 1:
        raise app.UsageError(f"--dupe_factor={FLAGS.dupe_factor}: expected at least 1")
    check_recipe(FLAGS.max_seq_length, FLAGS.max_predictions_per_seq, FLAGS.masked_lm_prob, FLAGS.short_seq_prob)
    inputs = expand_file_patterns(FLAGS.input_file)
    outputs = output_paths(FLAGS.output_file, FLAGS.num_output_shards)
    for path in outputs:  # (an existing shard: the writer refuses it, FileExistsError)
        prepare_output_file("output_file", path, overwrite=True, inputs=[("input_file", name) for name in inputs])
    logging.info("Reading %d input file(s): %s%s", len(inputs), ", ".join(inputs[:5]),
                 " ..." if len(inputs) > 5 else "")
    config = PretrainingDataConfig(
        vocab_file=FLAGS.vocab_file, do_lower_case=FLAGS.do_lower_case, max_seq_length=FLAGS.max_seq_length,
        max_predictions_per_seq=FLAGS.max_predictions_per_seq, masked_lm_prob=FLAGS.masked_lm_prob,
        short_seq_prob=FLAGS.short_seq_prob, dupe_factor=FLAGS.dupe_factor,
        do_whole_word_mask=FLAGS.do_whole_word_mask, random_seed=FLAGS.random_seed, chunk_chars=FLAGS.chunk_chars,
        sentence_order=FLAGS.sentence_order, ngram_masking=FLAGS.ngram_masking)
    result = write_pretraining_records(inputs, outputs, config, num_workers=FLAGS.num_workers)
    stats = result["statistics"]
    summary = stats.summary()
    print(f"documents: {result['documents']}, sentences: {result['sentences']} "
          f"(dropped, no tokens: {result['empty_sentences']})")
    print(f"instances: {summary['instances']}, tokens: {summary['tokens']}, masked-LM predictions: "
          f"{summary['masked_lm_predictions']} (masked fraction {summary['masked_fraction']:.4f}), "
          f"{summary['instances'] / result['seconds']:.0f} instances/s")
    print(stats.format_report(short_seq_prob=FLAGS.short_seq_prob))
    for path, count in result["files"].items():
        print(f"wrote {count} instances to {path}")


if __name__ == "__main__":
    from official_bert.cli import run_main  # importing official_bert quiets TensorFlow's native start-up lines

    run_main(main, required=REQUIRED_FLAGS)
