"""Masking statistics of pre-training batches, next to the values the recipe implies and their sampling error.

Works on the batch dicts that `pretraining_dataset` and `dynamic_masking_dataset` yield (NumPy arrays), so
the same check runs on written TFRecords and on the dynamic pipeline.

What can be told from a batch: a predicted position whose input is [MASK] was masked; one whose input equals
its label was kept or drawn at random as the same id; anything else was a random id. So, with V ids,
P([MASK] seen) = 0.8 + 0.1/V, P(unchanged) = 0.1 + 0.1/V, P(other id) = 0.1 - 0.2/V.
"""

import math

import numpy as np

from official_bert.data.pretraining_masking import MAX_NGRAM, NGRAM_PROBS

# The recipe's corruption of a predicted token: 80% [MASK], 10% unchanged, 10% a uniformly random id.
MASK_PROB, KEEP_PROB, RANDOM_PROB = 0.8, 0.1, 0.1


def expected_num_predictions(lengths, masked_lm_prob, max_predictions_per_seq):
    """The recipe's count per sequence: min(max_predictions, max(1, round(length * prob))), round half to even.

    Args:
        lengths: int array, tokens per sequence ([CLS]/[SEP] included).
    """
    counts = np.round(np.asarray(lengths, np.float64) * masked_lm_prob).astype(np.int64)
    return np.minimum(max_predictions_per_seq, np.maximum(1, counts))


class MaskingStatistics:
    """Accumulates masking figures over batches and compares them with the recipe.

    Args:
        vocab: a `MaskingVocab`.
        masked_lm_prob: the recipe's probability.
        max_predictions_per_seq: the recipe's cap.
        do_whole_word_mask: whole words were masked (the count may fall short of the rule; no word is split).
        sentence_order: the pair labels are ALBERT's sentence order (1 = swapped) rather than NSP's.
        ngram_masking: ALBERT's n-gram spans were masked (the count may fall short of the rule).
    """

    COUNTERS = ("instances", "tokens", "predictions", "count_equal", "count_below", "count_above", "special_masked",
                "mask_token", "unchanged", "random_token", "random_next", "split_words", "padding_nonzero",
                "document_passes", "short_targets", "generated_instances", "forced_random_next", "long_sentences",
                "long_sentence_pieces_cut",
                *(f"ngram_{n}" for n in range(1, MAX_NGRAM + 1)))

    def __init__(self, vocab, masked_lm_prob, max_predictions_per_seq, do_whole_word_mask=False,
                 sentence_order=False, ngram_masking=False):
        self.vocab = vocab
        self.masked_lm_prob = masked_lm_prob
        self.max_predictions_per_seq = max_predictions_per_seq
        self.do_whole_word_mask = do_whole_word_mask
        self.sentence_order = sentence_order
        self.ngram_masking = ngram_masking
        self.counts = dict.fromkeys(self.COUNTERS, 0)
        self._is_suffix = vocab.is_suffix_table()

    def merge(self, other):
        """Adds the counts of another `MaskingStatistics` (e.g. from a worker process)."""
        for key in self.COUNTERS:
            self.counts[key] += other.counts[key]

    def update(self, batch):
        """Adds one batch.

        Args:
            batch: dict of arrays as `pretraining_dataset` yields: `input_word_ids`, `input_mask`
                (batch, seq), `masked_lm_positions`, `masked_lm_ids`, `masked_lm_weights` (batch, predictions),
                `next_sentence_labels` (batch,).
        """
        ids = np.asarray(batch["input_word_ids"])  # (batch, seq)
        mask = np.asarray(batch["input_mask"]).astype(bool)  # (batch, seq)
        positions = np.asarray(batch["masked_lm_positions"])  # (batch, predictions)
        labels = np.asarray(batch["masked_lm_ids"])  # (batch, predictions)
        real = np.asarray(batch["masked_lm_weights"]) > 0  # (batch, predictions)
        rows = np.arange(ids.shape[0])[:, None]
        lengths = mask.sum(axis=1)
        count = real.sum(axis=1)
        expected = expected_num_predictions(lengths, self.masked_lm_prob, self.max_predictions_per_seq)
        seen = ids[rows, positions]  # (batch, predictions): the input at each predicted position
        c = self.counts
        c["instances"] += ids.shape[0]
        c["tokens"] += int(lengths.sum())
        c["predictions"] += int(count.sum())
        c["count_equal"] += int((count == expected).sum())
        c["count_below"] += int((count < expected).sum())
        c["count_above"] += int((count > expected).sum())
        special = (labels == self.vocab.cls_id) | (labels == self.vocab.sep_id) | ~mask[rows, positions]
        c["special_masked"] += int((special & real).sum())
        c["mask_token"] += int(((seen == self.vocab.mask_id) & real).sum())
        c["unchanged"] += int(((seen == labels) & (seen != self.vocab.mask_id) & real).sum())
        c["random_token"] += int(((seen != labels) & (seen != self.vocab.mask_id) & real).sum())
        c["random_next"] += int(np.asarray(batch["next_sentence_labels"]).reshape(-1).sum())
        c["padding_nonzero"] += int(((ids != self.vocab.pad_id) & ~mask).sum()
                                    + ((positions != 0) | (labels != 0))[~real].sum())
        # Whole words: rebuild the original tokens and look for a word with some pieces predicted, others not.
        original = ids.copy()
        selected = np.zeros_like(mask)
        original[rows, positions] = np.where(real, labels, seen)
        selected[rows, positions] |= real
        candidate = mask & (original != self.vocab.cls_id) & (original != self.vocab.sep_id)
        continues = candidate[:, 1:] & candidate[:, :-1] & self._is_suffix[original[:, 1:]]
        c["split_words"] += int(((selected[:, 1:] != selected[:, :-1]) & continues).any(axis=1).sum())

    def update_generation(self, document_targets, max_num_tokens, forced_random_next, ngram_draws=None,
                          sentence_lengths=()):
        """Adds generator-side facts that the records do not hold.

        Args:
            document_targets: the target length drawn for each (pass, document) (see
                `pretraining_instances.create_instances`).
            max_num_tokens: max_seq_length - 3 (targets below it are the short ones).
            forced_random_next: one bool per instance: B random because the chunk held one sentence.
            ngram_draws: {n: spans drawn with length n where all lengths were open} (n-gram masking).
            sentence_lengths: the pieces of each sentence of the chunk: one longer than `max_num_tokens` is cut (by
                at least its excess) in every pair it is in.
        """
        lengths = np.asarray(sentence_lengths, dtype=np.int64)
        self.counts["long_sentences"] += int((lengths > max_num_tokens).sum())
        self.counts["long_sentence_pieces_cut"] += int(np.maximum(lengths - max_num_tokens, 0).sum())
        for n, count in (ngram_draws or {}).items():
            self.counts[f"ngram_{n}"] += count
        document_targets = np.asarray(document_targets)
        self.counts["document_passes"] += document_targets.size
        self.counts["short_targets"] += int((document_targets < max_num_tokens).sum())
        self.counts["generated_instances"] += len(forced_random_next)
        self.counts["forced_random_next"] += int(np.asarray(forced_random_next).sum())

    def comparisons(self, short_seq_prob=None):
        """Observed fractions next to the recipe's, with the binomial standard error of each.

        The next-sentence fraction is compared only with `update_generation` facts: a chunk of one sentence
        always gets a random B, so from records alone the recipe gives only a lower bound of 0.5; with those
        facts, the coin-flip instances must be random half the time.

        Args:
            short_seq_prob: compare the fraction of documents with a short target too (needs `update_generation`).

        Returns:
            list of dicts: `name`, `observed`, `expected`, `sigma` (binomial standard error at the expected
            value), `n` (trials), `z` ((observed - expected) / sigma; 0 when sigma is 0).
        """
        c, v = self.counts, self.vocab.vocab_size
        rows = [("[MASK] among predictions", c["mask_token"], c["predictions"], MASK_PROB + RANDOM_PROB / v),
                ("unchanged among predictions", c["unchanged"], c["predictions"], KEEP_PROB + RANDOM_PROB / v),
                ("random id among predictions", c["random_token"], c["predictions"], RANDOM_PROB * (1 - 2 / v))]
        if not (self.do_whole_word_mask or self.ngram_masking):
            rows.append(("instances with the rule's count", c["count_equal"], c["instances"], 1.0))
        rows.append(("[CLS]/[SEP]/padding predicted", c["special_masked"], c["predictions"], 0.0))
        if self.do_whole_word_mask:
            rows.append(("instances with a split word", c["split_words"], c["instances"], 0.0))
        if c["generated_instances"]:
            # A fair coin decides unless the chunk held one sentence (then B is always random): compare the
            # coin-flip instances alone (records cannot tell them apart; the generator counted the forced ones).
            rows.append((f"{self._label_name()}, coin-flip pairs", c["random_next"] - c["forced_random_next"],
                         c["generated_instances"] - c["forced_random_next"], 0.5))
            if short_seq_prob is not None:
                rows.append(("documents with a short target", c["short_targets"], c["document_passes"],
                             short_seq_prob))
        spans = sum(c[f"ngram_{n}"] for n in range(1, MAX_NGRAM + 1))
        if self.ngram_masking and spans:
            for n in range(1, MAX_NGRAM + 1):  # spans with all lengths open: P(n) = (1/n) / sum(1/k)
                rows.append((f"{n}-word spans (n-gram masking)", c[f"ngram_{n}"], spans, NGRAM_PROBS[n - 1]))
        result = []
        for name, hits, n, p in rows:
            observed = hits / n if n else float("nan")
            sigma = math.sqrt(p * (1 - p) / n) if n else float("nan")
            z = (observed - p) / sigma if sigma else (0.0 if observed == p else float("inf"))
            result.append({"name": name, "observed": observed, "expected": p, "sigma": sigma, "n": n, "z": z})
        return result

    def summary(self):
        """Headline figures: instances, tokens, predictions, masked fraction and the prediction rule's misses."""
        c = self.counts
        return {"instances": c["instances"], "tokens": c["tokens"], "masked_lm_predictions": c["predictions"],
                "masked_fraction": c["predictions"] / c["tokens"] if c["tokens"] else float("nan"),
                "instances_below_rule": c["count_below"], "instances_above_rule": c["count_above"],
                "random_next_fraction": c["random_next"] / c["instances"] if c["instances"] else float("nan")}

    def format_report(self, short_seq_prob=None):
        """A table of `comparisons` as text."""
        lines = [f"{'figure':34s} {'observed':>9s} {'expected':>9s} {'sigma':>8s} {'z':>6s} {'n':>9s}"]
        for row in self.comparisons(short_seq_prob):
            lines.append(f"{row['name']:34s} {row['observed']:9.5f} {row['expected']:9.5f} {row['sigma']:8.5f} "
                         f"{row['z']:6.2f} {row['n']:9d}")
        s = self.summary()
        lines.append(f"instances {s['instances']}, tokens {s['tokens']}, predictions {s['masked_lm_predictions']} "
                     f"({s['masked_fraction']:.4f} of tokens; rule {self.masked_lm_prob} capped at "
                     f"{self.max_predictions_per_seq}), below the rule's count: {s['instances_below_rule']}, "
                     f"above: {s['instances_above_rule']}; {self._label_name()} (label 1): "
                     f"{s['random_next_fraction']:.4f}")
        return "\n".join(lines)

    def _label_name(self):
        return "swapped (SOP)" if self.sentence_order else "random next (NSP)"
