"""BERT pre-training instances from raw text, streamed: documents -> sentence pairs (NSP) -> masked-LM predictions.

The recipe is the original `create_pretraining_data.py`'s (Devlin et al. 2019), on token ids:

- Input: text files, one sentence per line, a blank line between documents, tokenized
  (`pretraining_vocab.tokenize_documents`).
- `create_sentence_pairs`: each document is cut into chunks of sentences up to a target length of
  `max_seq_length - 3` tokens (drawn once per document: a random shorter one in [2, max] with probability
  `short_seq_prob`);
  segment A is the first 1..n-1 sentences of a chunk, segment B the rest, or (50%, and always for a chunk
  of one sentence) sentences from a random other document, the unused sentences going back to the stream.
  `truncate_seq_pair` trims the longer segment one token at a time from the front or the back at random.
- `create_masked_lm_predictions` (`pretraining_masking`): predicts `min(max_predictions_per_seq, max(1, round(len(tokens) *
  masked_lm_prob)))` positions (never [CLS]/[SEP]); each predicted token becomes [MASK] (80%), a random
  vocabulary id (10%) or stays (10%). With whole-word masking, a word's `##` pieces are chosen together.

ALBERT's variants (Lan et al. 2020, its `create_pretraining_data.py`):

- `sentence_order`: sentence-order prediction instead of NSP. B is the rest of the chunk; half the time A
  and B are swapped, and the label (the `next_sentence_labels` feature, as ALBERT writes it) is 1 then. A
  chunk of one sentence still gets a B from a random document, label 1, as ALBERT's code does.
- `ngram_masking`: spans of 1 to 3 consecutive words (tokens, or whole words with whole-word masking),
  each span's length n drawn with probability proportional to 1/n (6/11, 3/11, 2/11), shortened until it
  fits the prediction budget; spans that overlap chosen ones are skipped.

Differences from the original, all for bounded memory on multi-GB corpora:

- Documents are streamed in chunks of about `chunk_chars` characters (`sentence_corpus.document_chunks`)
  instead of read all at once; `dupe_factor` passes and the shuffle of instances happen within a chunk. The
  random next sentence comes from another document of the same chunk (a bounded buffer: with the default
  2M characters, several hundred Wikipedia articles) rather than from the whole corpus, and documents
  are not shuffled first.
- A file ends its last document (the original carries an unterminated document over into the next file).
- With whole-word masking, a `##` piece that follows [CLS]/[SEP] (left there by truncation) is a word of its
  own, where the original would join it to the word before the [SEP].
"""

import dataclasses
import random
from typing import List

from official_bert.data.pretraining_masking import create_masked_lm_predictions


@dataclasses.dataclass
class SentencePair:
    """`[CLS] A [SEP] B [SEP]` before masking.

    Attributes:
        tokens: list of int ids, special tokens included (at most max_seq_length).
        segment_ids: 0 on [CLS], A and its [SEP]; 1 on B and its [SEP].
        is_random_next: the label 1: B comes from another document (NSP), or with sentence order, A and B are
            swapped (or B is random, see `forced_random_next`).
        target_seq_length: the token budget this pair was cut for (< max_seq_length - 3 for short targets).
        forced_random_next: B was random because the chunk held a single sentence (not a coin flip).
    """

    tokens: List[int]
    segment_ids: List[int]
    is_random_next: bool
    target_seq_length: int
    forced_random_next: bool


@dataclasses.dataclass
class TrainingInstance:
    """A masked sentence pair, as written to the TFRecord files.

    Attributes:
        tokens: list of int ids after masking.
        segment_ids: as in `SentencePair`.
        is_random_next: as in `SentencePair`.
        masked_lm_positions: sorted positions of the predicted tokens.
        masked_lm_labels: the original ids at those positions.
        target_seq_length, forced_random_next: as in `SentencePair` (statistics only).
    """

    tokens: List[int]
    segment_ids: List[int]
    is_random_next: bool
    masked_lm_positions: List[int]
    masked_lm_labels: List[int]
    target_seq_length: int
    forced_random_next: bool


def truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng):
    """Trims the longer list (B on a tie) in place, one token at a time from the front or back at random."""
    while len(tokens_a) + len(tokens_b) > max_num_tokens:
        longer = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
        if rng.random() < 0.5:
            del longer[0]
        else:
            longer.pop()


def create_sentence_pairs(documents, document_index, max_seq_length, short_seq_prob, vocab, rng,
                          sentence_order=False):
    """Cuts one document into `[CLS] A [SEP] B [SEP]` pairs (RoBERTa's vocab: `<s> A </s></s> B </s>`, one token
    type) with next-sentence (or sentence-order) labels.

    Args:
        documents: the chunk's tokenized documents (lists of sentences of ids); random next sentences
            come from the others.
        document_index: the document to cut.
        max_seq_length: pair length with its 3 special tokens (RoBERTa's layout: 4).
        short_seq_prob: probability of a random shorter target length in [2, max_seq_length - 3].
        vocab: a `MaskingVocab`.
        rng: a `random.Random`.
        sentence_order: ALBERT's sentence-order labels (A and B swapped half the time) instead of NSP's.

    Returns:
        list of `SentencePair`.
    """
    document = documents[document_index]
    separators = 2 if vocab.layout == "roberta" else 1  # between A and B
    max_num_tokens = max_seq_length - 2 - separators
    target_seq_length = max_num_tokens
    if rng.random() < short_seq_prob:
        target_seq_length = rng.randint(2, max_num_tokens)
    pairs, chunk, chunk_length, i = [], [], 0, 0
    while i < len(document):
        chunk.append(document[i])
        chunk_length += len(document[i])
        if i == len(document) - 1 or chunk_length >= target_seq_length:
            a_end = rng.randint(1, len(chunk) - 1) if len(chunk) >= 2 else 1
            tokens_a = [t for sentence in chunk[:a_end] for t in sentence]
            forced = len(chunk) == 1
            is_random_next = forced or (not sentence_order and rng.random() < 0.5)
            tokens_b = []
            if is_random_next:
                target_b_length = target_seq_length - len(tokens_a)
                other = _random_other_document(len(documents), document_index, rng)
                random_document = documents[other]
                for sentence in random_document[rng.randint(0, len(random_document) - 1):]:
                    tokens_b.extend(sentence)
                    if len(tokens_b) >= target_b_length:
                        break
                i -= len(chunk) - a_end  # the chunk's unused sentences go back to the stream
            else:
                tokens_b = [t for sentence in chunk[a_end:] for t in sentence]
                if sentence_order and rng.random() < 0.5:
                    tokens_a, tokens_b = tokens_b, tokens_a
                    is_random_next = True  # the label: out of order
            truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng)
            tokens = [vocab.cls_id] + tokens_a + [vocab.sep_id] * separators + tokens_b + [vocab.sep_id]
            b_type = 0 if vocab.layout == "roberta" else 1
            segment_ids = [0] * (len(tokens_a) + 1 + separators) + [b_type] * (len(tokens_b) + 1)
            pairs.append(SentencePair(tokens, segment_ids, is_random_next, target_seq_length, forced))
            chunk, chunk_length = [], 0
        i += 1
    return pairs


def _random_other_document(num_documents, document_index, rng):
    """Uniform over the other documents; the document itself when it is the only one (as the original ends up)."""
    if num_documents < 2:
        return document_index
    other = rng.randint(0, num_documents - 2)
    return other + 1 if other >= document_index else other


def mask_pair(pair, masked_lm_prob, max_predictions_per_seq, vocab, rng, do_whole_word_mask=False,
              ngram_masking=False, ngram_draws=None):
    """A `SentencePair` with its masked-LM predictions: a `TrainingInstance`."""
    tokens, positions, labels = create_masked_lm_predictions(pair.tokens, masked_lm_prob, max_predictions_per_seq,
                                                             vocab, rng, do_whole_word_mask, ngram_masking,
                                                             ngram_draws)
    return TrainingInstance(tokens, pair.segment_ids, pair.is_random_next, positions, labels,
                            pair.target_seq_length, pair.forced_random_next)


def create_instances_from_document(documents, document_index, max_seq_length, short_seq_prob, masked_lm_prob,
                                   max_predictions_per_seq, vocab, rng, do_whole_word_mask=False,
                                   sentence_order=False, ngram_masking=False, ngram_draws=None):
    """The training instances of one document: `create_sentence_pairs`, each masked. Returns TrainingInstances."""
    return [mask_pair(pair, masked_lm_prob, max_predictions_per_seq, vocab, rng, do_whole_word_mask, ngram_masking,
                      ngram_draws)
            for pair in create_sentence_pairs(documents, document_index, max_seq_length, short_seq_prob, vocab,
                                              rng, sentence_order)]


def create_instances(documents, max_seq_length, short_seq_prob, masked_lm_prob, max_predictions_per_seq, vocab,
                     rng, dupe_factor=1, do_whole_word_mask=False, shuffle=True, document_targets=None,
                     sentence_order=False, ngram_masking=False, ngram_draws=None):
    """All instances of a chunk of tokenized documents: `dupe_factor` passes (each with fresh target lengths,
    pairs and masks), then shuffled together.

    Args:
        documents: tokenized documents (see `tokenize_documents`).
        max_seq_length, short_seq_prob, masked_lm_prob, max_predictions_per_seq, do_whole_word_mask: the recipe.
        vocab: a `MaskingVocab`.
        rng: a `random.Random`.
        dupe_factor: passes over the documents.
        shuffle: shuffle the instances with `rng`.
        document_targets: a list to which the target length of every (pass, document) is appended. The
            target is drawn once per document, as in the original, so about `short_seq_prob` of the documents
            get a short one; their pairs are shorter and more numerous, so more than that fraction of the
            instances are short.
        sentence_order, ngram_masking: ALBERT's sentence-order labels and n-gram masking (module notes).
        ngram_draws: see `create_masked_lm_predictions`.

    Returns:
        list of `TrainingInstance`.
    """
    check_recipe(max_seq_length, max_predictions_per_seq, masked_lm_prob, short_seq_prob)
    instances = []
    for _ in range(dupe_factor):
        for index in range(len(documents)):
            document_instances = create_instances_from_document(
                documents, index, max_seq_length, short_seq_prob, masked_lm_prob, max_predictions_per_seq, vocab,
                rng, do_whole_word_mask, sentence_order, ngram_masking, ngram_draws)
            if document_targets is not None:
                document_targets.append(document_instances[0].target_seq_length)
            instances.extend(document_instances)
    if shuffle:
        rng.shuffle(instances)
    return instances


def check_recipe(max_seq_length, max_predictions_per_seq, masked_lm_prob, short_seq_prob=0.0):
    """Raises ValueError naming the first argument out of range."""
    if max_seq_length < 5:
        raise ValueError(f"max_seq_length={max_seq_length}: needs at least 5 ([CLS] A [SEP] B [SEP])")
    if not 1 <= max_predictions_per_seq <= max_seq_length:
        raise ValueError(f"max_predictions_per_seq={max_predictions_per_seq}: expected 1..max_seq_length "
                         f"({max_seq_length})")
    if not 0.0 < masked_lm_prob < 1.0:
        raise ValueError(f"masked_lm_prob={masked_lm_prob}: expected a probability in (0, 1)")
    if not 0.0 <= short_seq_prob <= 1.0:
        raise ValueError(f"short_seq_prob={short_seq_prob}: expected a probability in [0, 1]")


def chunk_rng(seed, *indexes):
    """The random generator of one unit of work: the same for the same seed and indexes, on any process."""
    return random.Random(":".join(str(int(i)) for i in (seed, *indexes)))
