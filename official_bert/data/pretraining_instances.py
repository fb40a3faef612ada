"""BERT pre-training instances from raw text, streamed: documents -> sentence pairs (NSP) -> masked-LM predictions.

The recipe is the original `create_pretraining_data.py`'s (Devlin et al. 2019), on token ids:

- Input: text files, one sentence per line, a blank line between documents.
- `create_sentence_pairs`: each document is cut into chunks of sentences up to a target length of
  `max_seq_length - 3` tokens (drawn once per document: a random shorter one in [2, max] with probability
  `short_seq_prob`);
  segment A is the first 1..n-1 sentences of a chunk, segment B the rest, or (50%, and always for a chunk
  of one sentence) sentences from a random other document, the unused sentences going back to the stream.
  `truncate_seq_pair` trims the longer segment one token at a time from the front or the back at random.
- `create_masked_lm_predictions`: predicts `min(max_predictions_per_seq, max(1, round(len(tokens) *
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

import numpy as np

from official_bert.text.vocab import is_sentencepiece_continuation, is_suffix_piece


@dataclasses.dataclass(frozen=True)
class MaskingVocab:
    """The ids the recipe needs: special tokens, vocabulary size and which ids continue a word (`##` pieces).

    Args:
        vocab_size: number of ids; random replacements are drawn uniformly from [0, vocab_size).
        cls_id, sep_id, mask_id, pad_id: ids of [CLS], [SEP], [MASK], [PAD] (ALBERT's SentencePiece: <pad>).
        suffix_ids: frozenset of the ids of continuation pieces (for whole-word masking): WordPiece's `##`
            pieces, or the SentencePiece pieces `is_sentencepiece_continuation` finds (none for RoBERTa's BPE).
        layout: how pairs are packed: "bert" (`[CLS] A [SEP] B [SEP]`, type ids 0 then 1) or "roberta"
            (`<s> A </s></s> B </s>`, type ids 0).
    """

    vocab_size: int
    cls_id: int
    sep_id: int
    mask_id: int
    pad_id: int
    suffix_ids: frozenset
    layout: str = "bert"

    @classmethod
    def from_tokens(cls, tokens, sentencepiece=False):
        """Builds it from a vocabulary list (index = id), as in `vocab.txt`.

        Args:
            tokens: the vocabulary.
            sentencepiece: the pieces of an ALBERT `spiece.model` (padding `<pad>`, words start with "▁").
        """
        index = {}
        for i, token in enumerate(tokens):
            index.setdefault(token, i)
        pad = "<pad>" if sentencepiece else "[PAD]"
        missing = [t for t in ("[CLS]", "[SEP]", "[MASK]", pad) if t not in index]
        if missing:
            raise ValueError(f"vocabulary lacks {', '.join(missing)}, needed for pre-training data")
        continuation = is_sentencepiece_continuation(tokens) if sentencepiece else is_suffix_piece(tokens)
        suffix = frozenset(np.flatnonzero(continuation).tolist())
        return cls(len(tokens), index["[CLS]"], index["[SEP]"], index["[MASK]"], index[pad], suffix)

    @classmethod
    def from_tokenizer(cls, tokenizer):
        """Builds it from an `official_bert.text.BertTokenizer`, ALBERT's `SentencepieceTokenizer` or RoBERTa's
        `BytePairTokenizer` (its `<s>`, `</s>`, `<mask>`, `<pad>`; no whole words; the "roberta" layout)."""
        from official_bert.text.bpe_tokenizer import BytePairTokenizer
        from official_bert.text.sentencepiece_tokenizer import SentencepieceTokenizer

        if isinstance(tokenizer, BytePairTokenizer):
            special = tokenizer.get_special_tokens_dict()
            if "mask_id" not in special:
                raise ValueError("vocabulary lacks <mask>, needed for pre-training data")
            return cls(special["vocab_size"], special["start_of_sequence_id"], special["end_of_segment_id"],
                       special["mask_id"], special["padding_id"], frozenset(), layout="roberta")
        return cls.from_tokens(tokenizer.get_vocab(), isinstance(tokenizer, SentencepieceTokenizer))

    def is_suffix_table(self):
        """bool array (vocab_size,): True on `##` pieces."""
        table = np.zeros(self.vocab_size, bool)
        table[list(self.suffix_ids)] = True
        return table


def tokenize_documents(tokenizer, documents, batch_size=1024):
    """Tokenizes documents in large batches (see `official_bert.text.dataset.tokenize_dataset`).

    Sentences that give no tokens (e.g. only control characters) are dropped, and then documents with no
    sentence left, as in the original.

    Args:
        tokenizer: a `BertTokenizer` (or ALBERT's `SentencepieceTokenizer`).
        documents: list of documents, each a list of str.
        batch_size: sentences per tokenizer call.

    Returns:
        `(tokenized, num_empty_sentences)`: tokenized is a list of documents, each a list of sentences,
        each a non-empty list of int ids.
    """
    from official_bert.text.dataset import tokenize_dataset

    sentences = [s for document in documents for s in document]
    if not sentences:
        return [], 0
    values, lengths = [], []
    for batch in tokenize_dataset(tokenizer, sentences, batch_size):
        values.append(batch.values.numpy())
        lengths.append(np.diff(batch.row_splits.numpy()))
    values = np.concatenate(values).tolist()
    starts = np.concatenate([[0], np.cumsum(np.concatenate(lengths))]).tolist()
    tokenized, sentence, empty = [], 0, 0
    for document in documents:
        pieces = []
        for _ in document:
            begin, end = starts[sentence], starts[sentence + 1]
            sentence += 1
            if end > begin:
                pieces.append(values[begin:end])
            else:
                empty += 1
        if pieces:
            tokenized.append(pieces)
    return tokenized, empty


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


def create_masked_lm_predictions(tokens, masked_lm_prob, max_predictions_per_seq, vocab, rng,
                                 do_whole_word_mask=False, ngram_masking=False, ngram_draws=None):
    """Chooses and corrupts the masked-LM positions of one sequence.

    Args:
        tokens: list of int ids with [CLS]/[SEP].
        masked_lm_prob: fraction of tokens to predict.
        max_predictions_per_seq: cap on predictions.
        vocab: a `MaskingVocab`.
        rng: a `random.Random`.
        do_whole_word_mask: choose whole words (a piece and the `##` pieces right after it).
        ngram_masking: choose ALBERT's spans of 1 to 3 words (see the module notes).
        ngram_draws: with `ngram_masking`, a `collections.Counter` to which the drawn length of every span
            with all lengths open (3 or more words left from its start) is added (statistics).

    Returns:
        `(output_tokens, positions, labels)`: the corrupted copy of `tokens`, the sorted predicted positions
        and the original ids there. Without whole-word masking there are exactly
        `min(max_predictions_per_seq, max(1, round(len(tokens) * masked_lm_prob)))` positions; with it (or
        n-grams), words that would overshoot that number are skipped, so there may be fewer.
    """
    words = []  # lists of candidate positions, one per word (or per token)
    for i, token in enumerate(tokens):
        if token == vocab.cls_id or token == vocab.sep_id:
            continue
        if do_whole_word_mask and words and words[-1][-1] == i - 1 and token in vocab.suffix_ids:
            words[-1].append(i)
        else:
            words.append([i])
    num_to_predict = min(max_predictions_per_seq, max(1, int(round(len(tokens) * masked_lm_prob))))
    output = list(tokens)
    if ngram_masking:
        positions = _ngram_positions(words, num_to_predict, rng, ngram_draws)
        for index in positions:
            _corrupt(output, index, vocab, rng)
        positions.sort()
        return output, positions, [tokens[p] for p in positions]
    positions = []
    for word in _lazy_shuffle(words, rng):  # the words in random order, drawn only as far as needed
        if len(positions) >= num_to_predict:
            break
        if len(positions) + len(word) > num_to_predict:
            continue
        for index in word:
            _corrupt(output, index, vocab, rng)
            positions.append(index)
    positions.sort()
    return output, positions, [tokens[p] for p in positions]


def _corrupt(output, index, vocab, rng):
    """The recipe's corruption of a predicted token, in place: [MASK] 80%, unchanged 10%, a random id 10%."""
    if rng.random() < 0.8:
        output[index] = vocab.mask_id
    elif rng.random() < 0.5:
        pass  # 10%: unchanged
    else:
        output[index] = rng.randint(0, vocab.vocab_size - 1)  # 10%: a random id


MAX_NGRAM = 3
NGRAM_PROBS = tuple((1 / n) / sum(1 / k for k in range(1, MAX_NGRAM + 1)) for n in range(1, MAX_NGRAM + 1))


def _ngram_positions(words, num_to_predict, rng, ngram_draws=None):
    """ALBERT's n-gram choice: positions of spans of 1..3 consecutive words, in the order chosen.

    Span starts are visited in random order; the span's length n is drawn with probability 1/n normalised
    over the lengths that fit before the last word, then shortened while it overshoots `num_to_predict`;
    a span that still overshoots or overlaps a chosen one is skipped.
    """
    starts = list(range(len(words)))
    rng.shuffle(starts)
    chosen, covered = [], set()
    for start in starts:
        if len(chosen) >= num_to_predict:
            break
        open_lengths = min(MAX_NGRAM, len(words) - start)
        n = rng.choices(range(1, open_lengths + 1), weights=NGRAM_PROBS[:open_lengths])[0]
        if ngram_draws is not None and open_lengths == MAX_NGRAM:
            ngram_draws[n] += 1
        span = [i for word in words[start:start + n] for i in word]
        while len(chosen) + len(span) > num_to_predict and n > 1:
            n -= 1
            span = [i for word in words[start:start + n] for i in word]
        if len(chosen) + len(span) > num_to_predict or covered.intersection(span):
            continue
        covered.update(span)
        chosen.extend(span)
    return chosen


def _lazy_shuffle(items, rng):
    """Yields `items` (a list, permuted in place) in uniformly random order: Fisher-Yates, one draw per item taken."""
    n = len(items)
    for i in range(n):
        j = rng.randrange(i, n)
        items[i], items[j] = items[j], items[i]
        yield items[i]


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
