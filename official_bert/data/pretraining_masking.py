"""The masked-LM half of the pre-training recipe: which positions of a sequence are predicted, and how each is
corrupted (see `pretraining_instances` for the whole recipe).

- BERT (Devlin et al. 2019): predicts `min(max_predictions_per_seq, max(1, round(len(tokens) * masked_lm_prob)))`
  positions (never [CLS]/[SEP]); each predicted token becomes [MASK] (80%), a random vocabulary id (10%) or
  stays (10%). With whole-word masking, a word's `##` pieces are chosen together.
- ALBERT's `ngram_masking` (Lan et al. 2020): spans of 1 to 3 consecutive words (tokens, or whole words with
  whole-word masking), each span's length n drawn with probability proportional to 1/n (6/11, 3/11, 2/11),
  shortened until it fits the prediction budget; spans that overlap chosen ones are skipped.
"""


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
