"""Dynamic masking: pre-training batches straight from text files, with fresh masks every epoch (RoBERTa).

The pipeline, per epoch (training repeats it forever, with the epoch number in every seed):

1. Python reads the files (one sentence per line, blank line between documents; their order shuffled per
   epoch when training) and groups documents into chunks (`sentence_corpus.document_chunks`).
2. In-graph: the chunk's sentences go through the model's tokenizer in one batch (a parallel `map`): WordPiece,
   ALBERT's SentencePiece or RoBERTa's byte-level BPE (each line on its own, as fairseq encodes RoBERTa's data).
3. Python (`tf.numpy_function`): the chunk's documents are cut into `[CLS] A [SEP] B [SEP]` pairs (RoBERTa:
   `<s> A </s></s> B </s>`, one token type) with NSP labels by the same code as the TFRecord path
   (`create_sentence_pairs`: short targets, 50% random next from another document of the chunk, random-side
   truncation), with a generator seeded by (seed, input pipeline, epoch, chunk); so pairs change from epoch to
   epoch too.
4. In-graph, per batch (`mask_tokens`): the masked-LM positions and corruptions are drawn with stateless
   random ops seeded by (seed, input pipeline, batch number): the recipe's count per sequence, never
   [CLS]/[SEP]/padding, 80% [MASK] / 10% random id / 10% unchanged, optionally whole words.

Pair building stays in Python because it follows the original's sequential, document-level algorithm; it
costs a few microseconds per pair, far below a training step. Masking, the part RoBERTa made dynamic, is
vectorized TF.
"""

import logging
import random

import numpy as np
import tensorflow as tf

from official_bert.data import pretraining_instances as pi
from official_bert.data.pretraining_vocab import MaskingVocab
from official_bert.data.sentence_corpus import document_chunks, expand_file_patterns

logger = logging.getLogger(__name__)


def mask_tokens(input_ids, input_mask, seed, vocab, masked_lm_prob, max_predictions_per_seq,
                do_whole_word_mask=False):
    """Draws masked-LM predictions for a batch, in-graph, as the recipe does.

    Args:
        input_ids: int32 (batch, seq) with [CLS]/[SEP], padded.
        input_mask: int32 (batch, seq), 1 on real tokens.
        seed: int (2,) Tensor for the stateless random ops.
        vocab: a `MaskingVocab`.
        masked_lm_prob, max_predictions_per_seq: the recipe.
        do_whole_word_mask: choose whole words (a piece and the `##` pieces right after it); words that would
            overshoot the count are skipped, as in the original.

    Returns:
        dict: `input_word_ids` (corrupted) int32 (batch, seq); `masked_lm_positions` (sorted, 0-padded),
        `masked_lm_ids` (original ids, 0-padded) int32 and `masked_lm_weights` float32 (batch, predictions).
    """
    seq_length = tf.shape(input_ids)[1]
    select_seed, decide_seed, random_seed = tf.unstack(tf.random.experimental.stateless_split(seed, 3))
    lengths = tf.reduce_sum(input_mask, axis=1)  # (batch,)
    num_to_predict = tf.cast(tf.round(tf.cast(lengths, tf.float64) * masked_lm_prob), tf.int32)  # half to even
    num_to_predict = tf.minimum(max_predictions_per_seq, tf.maximum(1, num_to_predict))[:, None]  # (batch, 1)
    candidate = (input_mask > 0) & (input_ids != vocab.cls_id) & (input_ids != vocab.sep_id)  # (batch, seq)
    scores = tf.random.stateless_uniform(tf.shape(input_ids), select_seed)  # (batch, seq)
    if do_whole_word_mask:
        selected = _select_whole_words(input_ids, candidate, scores, num_to_predict, vocab)
    else:
        # The first n candidates of a random order: rank the candidates by a uniform score.
        order = tf.argsort(tf.where(candidate, scores, 2.0), axis=1, stable=True)
        rank = tf.argsort(order, axis=1, stable=True)  # (batch, seq)
        selected = candidate & (rank < num_to_predict)
    decide = tf.random.stateless_uniform(tf.shape(input_ids), decide_seed)  # (batch, seq)
    random_ids = tf.random.stateless_uniform(tf.shape(input_ids), random_seed, minval=0, maxval=vocab.vocab_size,
                                             dtype=tf.int32)  # (batch, seq)
    corrupted = tf.where(decide < 0.8, tf.constant(vocab.mask_id, tf.int32),
                         tf.where(decide < 0.9, input_ids, random_ids))
    positions = tf.range(seq_length)[None, :]  # (1, seq)
    first = tf.sort(tf.where(selected, positions, seq_length + positions), axis=1)[:, :max_predictions_per_seq]
    real = first < seq_length  # (batch, predictions)
    masked_positions = tf.where(real, first, 0)
    return {"input_word_ids": tf.where(selected, corrupted, input_ids),
            "masked_lm_positions": masked_positions,
            "masked_lm_ids": tf.where(real, tf.gather(input_ids, masked_positions, batch_dims=1), 0),
            "masked_lm_weights": tf.cast(real, tf.float32)}


def _select_whole_words(input_ids, candidate, scores, num_to_predict, vocab):
    """Whole words in random order, each taken if it still fits in the count (a greedy pass over the words)."""
    batch, seq_length = tf.shape(input_ids)[0], tf.shape(input_ids)[1]
    is_suffix = tf.gather(tf.constant(vocab.is_suffix_table()), input_ids)  # (batch, seq)
    previous = tf.pad(candidate[:, :-1], [[0, 0], [1, 0]])  # (batch, seq): the token before is a candidate
    starts = candidate & ~(is_suffix & previous)
    word = tf.cumsum(tf.cast(starts, tf.int32), axis=1) - 1  # (batch, seq): word index of each candidate
    num_words = tf.reduce_sum(tf.cast(starts, tf.int32), axis=1)  # (batch,)
    slot = tf.where(candidate, tf.range(batch)[:, None] * seq_length + word, batch * seq_length)
    word_lengths = tf.math.unsorted_segment_sum(tf.cast(candidate, tf.int32), slot, batch * seq_length + 1)
    word_lengths = tf.reshape(word_lengths[:-1], [batch, seq_length])  # (batch, words): 0 past the last word
    order = tf.argsort(tf.where(tf.range(seq_length)[None, :] < num_words[:, None], scores, 2.0), axis=1,
                       stable=True)  # (batch, words): word indices in random order
    ordered_lengths = tf.gather(word_lengths, order, batch_dims=1)  # (batch, words)
    limit = num_to_predict[:, 0]

    def take(total, length):  # total, length: (batch,)
        return total + tf.where((length > 0) & (total + length <= limit), length, 0)

    totals = tf.transpose(tf.scan(take, tf.transpose(ordered_lengths), initializer=tf.zeros([batch], tf.int32)))
    before = tf.pad(totals[:, :-1], [[0, 0], [1, 0]])
    taken_in_order = totals > before  # (batch, words)
    taken = tf.gather(taken_in_order, tf.argsort(order, axis=1, stable=True), batch_dims=1)  # by word index
    return candidate & tf.gather(taken, tf.maximum(word, 0), batch_dims=1)


def dynamic_masking_dataset(file_patterns, tokenizer, batch_size, max_seq_length, max_predictions_per_seq,
                            masked_lm_prob=0.15, is_training=True, seed=0, do_whole_word_mask=False,
                            input_context=None, short_seq_prob=0.1, chunk_chars=1_000_000,
                            shuffle_buffer_size=10000, sentence_order=False):
    """Batches for pre-training from raw text files, tokenized in-graph and masked afresh every epoch.

    Args:
        file_patterns: comma-separated globs or a list; text files with one sentence per line and a blank
            line between documents.
        tokenizer: an `official_bert.text.BertTokenizer`, ALBERT's `SentencepieceTokenizer` or RoBERTa's
            `BytePairTokenizer` (`pretraining_vocab.MaskingVocab.from_tokenizer` reads its special tokens).
        batch_size: the batch size of this dataset (per replica under `distribute_datasets_from_function`).
        max_seq_length, max_predictions_per_seq, masked_lm_prob, short_seq_prob, do_whole_word_mask: the recipe.
        is_training: shuffle files and instances, new pairs and masks every epoch, repeat forever, drop the
            last partial batch; otherwise one pass in file order (masks still drawn with `seed`).
        seed: seed of everything random.
        input_context: a `tf.distribute.InputContext`; each input pipeline reads its share of the files (or of
            the documents when there are fewer files than pipelines) and draws its own masks.
        chunk_chars: characters per chunk of documents (the random-next buffer; see `document_chunks`).
        shuffle_buffer_size: instances in the shuffle buffer, which is filled within one epoch.
        sentence_order: ALBERT's sentence-order labels (A and B swapped half the time, label 1) instead of
            next-sentence ones (see `pretraining_instances.create_sentence_pairs`).

    Returns:
        A `tf.data.Dataset` of the dict `pretraining_dataset` yields. The first chunk holding sentences longer than
        a sequence (they are cut in every pair they are in) is warned about with its count, once per dataset.
    """
    pi.check_recipe(max_seq_length, max_predictions_per_seq, masked_lm_prob, short_seq_prob)
    files = expand_file_patterns(file_patterns)
    vocab = MaskingVocab.from_tokenizer(tokenizer)
    pipelines, pipeline = 1, 0
    if input_context is not None:
        pipelines, pipeline = input_context.num_input_pipelines, input_context.input_pipeline_id
    doc_shards, doc_shard = 1, 0
    if pipelines > 1 and len(files) >= pipelines:
        files = files[pipeline::pipelines]
    elif pipelines > 1:
        doc_shards, doc_shard = pipelines, pipeline
    plain = tf.autograph.experimental.do_not_convert  # every function below is plain TF: no conversion cost

    def chunks(epoch):
        order = list(files)
        if is_training:
            random.Random(f"{seed}:{pipeline}:files:{int(epoch)}").shuffle(order)
        for index, documents in enumerate(document_chunks(order, chunk_chars, doc_shards, doc_shard)):
            sentences = np.array([s for d in documents for s in d], dtype=object)
            doc_splits = np.cumsum([0] + [len(d) for d in documents]).astype(np.int64)
            yield sentences, doc_splits, np.int64(index)

    def tokenize(sentences, doc_splits, index):
        ids = tokenizer(sentences)  # (sentences, (tokens))
        return ids.flat_values, tf.cast(ids.row_splits, tf.int64), doc_splits, index

    warned_long = []  # set on the first warning: one per dataset, not one per chunk and epoch

    def warn_long_sentences(sentence_splits):
        lengths = np.diff(sentence_splits)  # (sentences,) pieces each
        long = lengths > max_seq_length - 3
        if long.any() and not warned_long:
            warned_long.append(True)
            logger.warning("%d of %d sentences (lines) of a chunk of --text_files are longer than a sequence (%d "
                           "pieces with --max_seq_length=%d): at least %d of their pieces are cut in every pair they "
                           "are in; put one sentence a line (tasks.create_pretraining_data counts them over the "
                           "whole corpus)", int(long.sum()), len(lengths), max_seq_length - 3, max_seq_length,
                           int((lengths[long] - (max_seq_length - 3)).sum()))

    def build_pairs(values, sentence_splits, doc_splits, index, epoch):
        warn_long_sentences(sentence_splits)
        rng = pi.chunk_rng(seed, pipeline, epoch, index)
        values, sentence_splits = values.tolist(), sentence_splits.tolist()
        documents = []
        for d in range(len(doc_splits) - 1):
            sentences = [values[sentence_splits[s]:sentence_splits[s + 1]]
                         for s in range(doc_splits[d], doc_splits[d + 1])]
            sentences = [s for s in sentences if s]
            if sentences:
                documents.append(sentences)
        pairs = [p for i in range(len(documents))
                 for p in pi.create_sentence_pairs(documents, i, max_seq_length, short_seq_prob, vocab, rng,
                                                   sentence_order)]
        if is_training:
            rng.shuffle(pairs)
        splits = np.cumsum([0] + [len(p.tokens) for p in pairs]).astype(np.int64)
        tokens = np.array([t for p in pairs for t in p.tokens], np.int32)
        segments = np.array([t for p in pairs for t in p.segment_ids], np.int32)
        labels = np.array([int(p.is_random_next) for p in pairs], np.int32)
        return tokens, segments, splits, labels

    def pairs_dataset(values, sentence_splits, doc_splits, index, epoch):
        tokens, segments, splits, labels = tf.numpy_function(
            build_pairs, [values, sentence_splits, doc_splits, index, epoch],
            [tf.int32, tf.int32, tf.int64, tf.int32], stateful=False)
        tokens.set_shape([None])
        segments.set_shape([None])
        splits.set_shape([None])
        labels.set_shape([None])
        return tf.data.Dataset.from_tensor_slices((splits[:-1], splits[1:], labels)).map(
            plain(lambda start, end, label: (tokens[start:end], segments[start:end], label)))

    def epoch_dataset(epoch):
        signature = (tf.TensorSpec([None], tf.string), tf.TensorSpec([None], tf.int64), tf.TensorSpec([], tf.int64))
        dataset = tf.data.Dataset.from_generator(chunks, output_signature=signature, args=(epoch,))
        dataset = dataset.map(plain(tokenize), num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
        dataset = dataset.flat_map(plain(lambda v, s, d, i: pairs_dataset(v, s, d, i, epoch)))
        if not is_training:
            return dataset
        # Shuffled within the epoch: a corpus smaller than the buffer fills it with one epoch, not with thousands
        # (a 10-line file took 7 s of tokenizing and pairing before its first batch). The buffer's seed is the same
        # every epoch, and so is its permutation; the instances differ, each epoch's files and pairs being shuffled
        # by (seed, epoch) above: a resumed run shuffles as the unbroken one did. (A seed computed from the `epoch`
        # tensor made `Dataset.shuffle` fail when TensorFlow's global seed was 0, as `--seed=0` sets it.)
        return dataset.shuffle(shuffle_buffer_size, seed=seed, reshuffle_each_iteration=False)

    if is_training:
        dataset = tf.data.Dataset.counter().flat_map(plain(epoch_dataset))
    else:
        dataset = epoch_dataset(tf.constant(0, tf.int64))

    def pad(tokens, segments, label):
        length = tf.shape(tokens)[0]
        padding = [[0, max_seq_length - length]]
        tokens = tf.ensure_shape(tf.pad(tokens, padding, constant_values=vocab.pad_id), [max_seq_length])
        segments = tf.ensure_shape(tf.pad(segments, padding), [max_seq_length])
        mask = tf.ensure_shape(tf.pad(tf.ones([length], tf.int32), padding), [max_seq_length])
        return tokens, mask, segments, label

    dataset = dataset.map(plain(pad), num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    dataset = dataset.batch(batch_size, drop_remainder=is_training).enumerate()
    base_seed = tf.constant([seed, pipeline], tf.int64)

    def mask(step, batch):
        tokens, input_mask, segments, labels = batch
        masked = mask_tokens(tokens, input_mask, tf.random.experimental.stateless_fold_in(base_seed, step), vocab,
                             masked_lm_prob, max_predictions_per_seq, do_whole_word_mask)
        return {"input_word_ids": masked["input_word_ids"], "input_mask": input_mask, "input_type_ids": segments,
                "masked_lm_positions": masked["masked_lm_positions"], "masked_lm_ids": masked["masked_lm_ids"],
                "masked_lm_weights": masked["masked_lm_weights"], "next_sentence_labels": labels}

    return dataset.map(plain(mask), num_parallel_calls=tf.data.AUTOTUNE, deterministic=True).prefetch(tf.data.AUTOTUNE)
