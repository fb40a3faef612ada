"""Text files -> pre-training TFRecord shards, streamed in chunks over several worker processes.

The main process reads documents and groups them into chunks (`document_chunks`); each chunk goes to a
worker that tokenizes it in batches, builds `dupe_factor` passes of instances with a random generator seeded
by `(random_seed, chunk index)`, shuffles them and serializes them. The main process writes the chunks' records
in chunk order, round-robin over the output shards. The output therefore depends on the seed and the chunk
size but not on the number of workers, and memory holds only a few chunks at a time.
"""

import collections
import dataclasses
import logging
import multiprocessing
import time

from official_bert.data import pretraining_instances as pi
from official_bert.data.pretraining_vocab import MaskingVocab, tokenize_documents
from official_bert.data.pretraining_records import ShardedRecordWriter, instances_to_arrays, serialize_arrays
from official_bert.data.pretraining_stats import MaskingStatistics
from official_bert.data.sentence_corpus import document_chunks

logger = logging.getLogger(__name__)


@dataclasses.dataclass
class PretrainingDataConfig:
    """The recipe and the tokenizer, everything a worker needs (picklable).

    Args:
        vocab_file: WordPiece vocab.txt, or ALBERT's spiece.model.
        do_lower_case: uncased tokenization.
        max_seq_length, max_predictions_per_seq, masked_lm_prob, short_seq_prob, dupe_factor,
        do_whole_word_mask, random_seed: the recipe (flag names of the original).
        sentence_order: ALBERT's sentence-order labels (A and B swapped half the time) instead of NSP's.
        ngram_masking: ALBERT's n-gram masking (spans of 1 to 3 words).
        chunk_chars: characters per chunk of documents (the unit of work and the random-next buffer).
        tokenize_batch_size: sentences per tokenizer call.
    """

    vocab_file: str
    do_lower_case: bool = True
    max_seq_length: int = 128
    max_predictions_per_seq: int = 20
    masked_lm_prob: float = 0.15
    short_seq_prob: float = 0.1
    dupe_factor: int = 10
    do_whole_word_mask: bool = False
    random_seed: int = 12345
    sentence_order: bool = False
    ngram_masking: bool = False
    chunk_chars: int = 2_000_000
    tokenize_batch_size: int = 1024


@dataclasses.dataclass
class ChunkResult:
    records: list
    stats: MaskingStatistics
    documents: int
    sentences: int
    empty_sentences: int
    first_tokens: list  # ids of the chunk's first instance (for the log)


class ChunkProcessor:
    """Tokenizes one chunk of documents and turns it into serialized, shuffled instances."""

    def __init__(self, config):
        from official_bert.text.preprocessing import tokenizer_from_files

        pi.check_recipe(config.max_seq_length, config.max_predictions_per_seq, config.masked_lm_prob,
                        config.short_seq_prob)
        self.config = config
        self.tokenizer = tokenizer_from_files(config.vocab_file, config.do_lower_case)
        self.vocab = MaskingVocab.from_tokenizer(self.tokenizer)

    def new_statistics(self):
        c = self.config
        return MaskingStatistics(self.vocab, c.masked_lm_prob, c.max_predictions_per_seq, c.do_whole_word_mask,
                                 c.sentence_order, c.ngram_masking)

    def __call__(self, chunk_index, documents):
        c = self.config
        tokenized, empty = tokenize_documents(self.tokenizer, documents, c.tokenize_batch_size)
        targets, ngram_draws = [], collections.Counter()
        instances = pi.create_instances(tokenized, c.max_seq_length, c.short_seq_prob, c.masked_lm_prob,
                                        c.max_predictions_per_seq, self.vocab, pi.chunk_rng(c.random_seed, chunk_index),
                                        dupe_factor=c.dupe_factor, do_whole_word_mask=c.do_whole_word_mask,
                                        document_targets=targets, sentence_order=c.sentence_order,
                                        ngram_masking=c.ngram_masking, ngram_draws=ngram_draws)
        arrays = instances_to_arrays(instances, c.max_seq_length, c.max_predictions_per_seq)
        stats = self.new_statistics()
        stats.update(arrays)
        stats.update_generation(targets, c.max_seq_length - 3, [i.forced_random_next for i in instances], ngram_draws,
                                [len(sentence) for document in tokenized for sentence in document])
        return ChunkResult(serialize_arrays(arrays), stats, len(documents), sum(len(d) for d in documents), empty,
                           instances[0].tokens if instances else [])


_WORKER = None


def _init_worker(config):
    global _WORKER
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    _WORKER = ChunkProcessor(config)


def _process_in_worker(chunk_index, documents):
    return _WORKER(chunk_index, documents)


def write_pretraining_records(input_files, output_paths, config, num_workers=2, log_every_seconds=30.0):
    """Builds pre-training instances from text files and writes them to TFRecord shards.

    Args:
        input_files: list of text files (see `sentence_corpus.expand_file_patterns`).
        output_paths: the shards to write (see `pretraining_records.output_paths`); none may exist.
        config: a `PretrainingDataConfig`.
        num_workers: worker processes; 0 or 1 works in this process (same output).
        log_every_seconds: seconds between progress lines.

    Returns:
        dict: `statistics` (a `MaskingStatistics` over all instances), `documents`, `sentences`,
        `empty_sentences` (dropped: no tokens), `files` (path -> instances), `seconds`.
    """
    processor = ChunkProcessor(config) if num_workers <= 1 else None
    stats = processor.new_statistics() if processor else None
    totals = collections.Counter()
    start = last_log = time.perf_counter()
    with ShardedRecordWriter(output_paths) as writer:

        def consume(result):
            nonlocal stats, last_log
            if stats is None:
                stats = MaskingStatistics(result.stats.vocab, config.masked_lm_prob, config.max_predictions_per_seq,
                                          config.do_whole_word_mask, config.sentence_order, config.ngram_masking)
            if totals["chunks"] == 0 and result.first_tokens:
                from official_bert.text.preprocessing import tokenizer_from_files

                tokenizer = processor.tokenizer if processor else tokenizer_from_files(config.vocab_file,
                                                                                       config.do_lower_case)
                tokens = tokenizer.get_vocab()
                logger.info("First instance: %s", " ".join(tokens[t] for t in result.first_tokens))
            writer.write(result.records)
            stats.merge(result.stats)
            totals.update(chunks=1, documents=result.documents, sentences=result.sentences,
                          empty_sentences=result.empty_sentences)
            now = time.perf_counter()
            if now - last_log >= log_every_seconds:
                last_log = now
                logger.info("%d chunks, %d documents, %d instances written (%.0f instances/s)", totals["chunks"],
                            totals["documents"], stats.counts["instances"], stats.counts["instances"] / (now - start))

        chunks = document_chunks(input_files, config.chunk_chars)
        if processor is not None:
            for index, documents in enumerate(chunks):
                consume(processor(index, documents))
        else:
            context = multiprocessing.get_context("spawn")  # TF is not fork-safe
            with context.Pool(num_workers, initializer=_init_worker, initargs=(config,)) as pool:
                pending = collections.deque()
                for index, documents in enumerate(chunks):
                    pending.append(pool.apply_async(_process_in_worker, (index, documents)))
                    while len(pending) > 2 * num_workers:  # bounded: a few chunks in flight
                        consume(pending.popleft().get())
                while pending:
                    consume(pending.popleft().get())
        if stats is None or stats.counts["instances"] == 0:
            raise ValueError(f"no instance could be built from {len(input_files)} input file(s) "
                             f"({input_files[:3]}...): they hold no non-empty sentence")
    if stats.counts["long_sentences"]:
        logger.warning("%d of %d sentences (lines) are longer than a sequence (%d pieces with --max_seq_length=%d): at "
                       "least %d of their pieces are cut, in every pass; put one sentence a line",
                       stats.counts["long_sentences"], totals["sentences"], config.max_seq_length - 3,
                       config.max_seq_length, stats.counts["long_sentence_pieces_cut"])
    seconds = time.perf_counter() - start
    logger.info("Done: %d documents, %d instances in %d files, %.1f s", totals["documents"],
                stats.counts["instances"], len(output_paths), seconds)
    return {"statistics": stats, "documents": totals["documents"], "sentences": totals["sentences"],
            "empty_sentences": totals["empty_sentences"], "files": dict(zip(writer.paths, writer.counts)),
            "seconds": seconds}
