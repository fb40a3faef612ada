"""BertPackInputs: [CLS] a [SEP] b [SEP] (or RoBERTa's <s> a </s></s> b </s>), truncated longest-first and padded,
with dense ops only."""

import keras
import tensorflow as tf


class BertPackInputs(keras.layers.Layer):
    """Packs one or more tokenized segments into the encoder's fixed-length int32 inputs.

    Layout: `[CLS] seg_0 [SEP] seg_1 [SEP] ... [PAD] ...`; `input_type_ids` is i on segment i and its
    closing [SEP] (0 on [CLS] and padding); `input_mask` is 1 on real tokens. With `layout="roberta"`, RoBERTa's
    (`RobertaTokenizerFast`'s): `<s> seg_0 </s></s> seg_1 </s> <pad> ...`, every segment after the first opened by
    one more `</s>`, and `input_type_ids` all 0 (RoBERTa has one token type).

    Truncation keeps the first tokens of each segment and trims the longest segment first, exactly as
    Hugging Face `tokenizers` does with `truncation="longest_first"`: with a budget of m tokens, a
    segment shorter than its fair share keeps all its tokens, and when both of two segments are long,
    the shorter one (the first one on a tie) keeps m // 2. For more than two segments the same
    water-filling rule applies (leftover tokens go to the longest segments, later ones first on ties).

    Only dense ops (gather, cumsum, comparisons, where) touch the data, so the graph runs in TFLite
    with no Flex ops and has no RaggedRange.

    Args:
        seq_length: the output length, special tokens included.
        special_tokens_dict: `BertTokenizer.get_special_tokens_dict()` (needs `start_of_sequence_id`,
            `end_of_segment_id`, `padding_id`).
        layout: "bert" or "roberta".
        **kwargs: passed to `keras.layers.Layer`.

    Examples:

    >>> packer = BertPackInputs(128, tokenizer.get_special_tokens_dict())
    >>> inputs = packer([tokenizer(questions), tokenizer(contexts)])
    >>> inputs["input_word_ids"].shape
    TensorShape([batch, 128])
    """

    def __init__(self, seq_length, special_tokens_dict, layout="bert", **kwargs):
        super().__init__(**kwargs)
        if layout not in ("bert", "roberta"):
            raise ValueError(f"layout is {layout!r}; expected 'bert' or 'roberta'")
        self.layout = layout
        missing = [k for k in ("start_of_sequence_id", "end_of_segment_id", "padding_id")
                   if k not in special_tokens_dict]
        if missing:
            raise ValueError(f"special_tokens_dict lacks {', '.join(missing)}")
        self.seq_length = int(seq_length)
        self.special_tokens_dict = dict(special_tokens_dict)
        self.start_of_sequence_id = int(special_tokens_dict["start_of_sequence_id"])
        self.end_of_segment_id = int(special_tokens_dict["end_of_segment_id"])
        self.padding_id = int(special_tokens_dict["padding_id"])

    def call(self, inputs):
        """Packs segments.

        Args:
            inputs: a RaggedTensor [batch, (tokens)] or a list of them (one per segment), int ids.

        Returns:
            dict of int32 Tensors [batch, seq_length]: `input_word_ids`, `input_mask`, `input_type_ids`.
        """
        segments = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        if not segments:
            raise ValueError("BertPackInputs needs at least one segment")
        budget = self.budget(len(segments))
        if budget < 0:
            raise ValueError(f"seq_length={self.seq_length} leaves no room for {len(segments)} segment(s)")
        values, splits = [], []
        for segment in segments:
            if not isinstance(segment, tf.RaggedTensor) or segment.ragged_rank != 1:
                raise ValueError("each segment must be a RaggedTensor [batch, (tokens)]")
            values.append(tf.cast(segment.values, tf.int32))  # (tokens,)
            splits.append(tf.cast(segment.row_splits, tf.int32))  # (batch + 1,)
        lengths = tf.stack([s[1:] - s[:-1] for s in splits], axis=1)  # (batch, segments)
        kept = truncate_longest_first(lengths, budget)  # (batch, segments)

        positions = tf.range(self.seq_length, dtype=tf.int32)[None, :]  # (1, seq)
        word_ids = tf.fill(tf.shape(positions * kept[:, :1]), self.padding_id)  # (batch, seq)
        word_ids = tf.where(positions == 0, self.start_of_sequence_id, word_ids)
        type_ids = tf.zeros_like(word_ids)
        start = tf.ones_like(kept[:, 0])  # (batch,) position of the segment's first token
        opening = 1 if self.layout == "roberta" else 0  # the extra </s> before every segment after the first
        for i, (segment_values, segment_splits) in enumerate(zip(values, splits)):
            if i and opening:
                word_ids = tf.where(positions == start[:, None], self.end_of_segment_id, word_ids)
                start = start + opening
            first = start[:, None]  # (batch, 1)
            end = first + kept[:, i:i + 1]  # (batch, 1): position of this segment's [SEP]
            in_segment = tf.logical_and(positions >= first, positions < end)  # (batch, seq)
            source = segment_splits[:-1, None] + positions - first  # (batch, seq) index into values
            padded_values = tf.concat([segment_values, tf.zeros([1], tf.int32)], axis=0)  # never empty
            source = tf.clip_by_value(source, 0, tf.shape(padded_values)[0] - 1)
            word_ids = tf.where(in_segment, tf.gather(padded_values, source), word_ids)
            word_ids = tf.where(positions == end, self.end_of_segment_id, word_ids)
            if self.layout == "bert":
                type_ids = tf.where(tf.logical_and(positions >= first, positions <= end), i, type_ids)
            start = start + kept[:, i] + 1
        mask = tf.cast(positions < start[:, None], tf.int32)  # (batch, seq)
        return {"input_word_ids": word_ids, "input_mask": mask, "input_type_ids": type_ids}

    def truncated(self, segments):
        """bool [batch]: True where the segments' pieces exceed the budget, so packing cuts some.

        Args:
            segments: the one or more int RaggedTensors [batch, (pieces)] this layer packs.
        """
        total = 0
        for segment in segments:
            total += segment.row_splits[1:] - segment.row_splits[:-1]  # (batch,) pieces of all segments
        return total > tf.cast(self.budget(len(segments)), total.dtype)

    def budget(self, num_segments):
        """How many tokens `num_segments` segments may keep together: seq_length less the special tokens."""
        extra = num_segments - 1 if self.layout == "roberta" else 0
        return self.seq_length - num_segments - 1 - extra  # [CLS] + one [SEP] per segment (+ RoBERTa's extra)

    def get_config(self):
        config = super().get_config()
        config.update({"seq_length": self.seq_length, "special_tokens_dict": self.special_tokens_dict,
                       "layout": self.layout})
        return config


def truncate_longest_first(lengths, budget):
    """How many tokens each segment keeps when the longest is trimmed first.

    Water-filling: the largest cap T with sum(min(n_i, T)) <= budget, then the tokens left over go one
    each to the segments longer than T, longest first, later segments first on ties. For two segments
    this is exactly `tokenizers`' longest_first truncation.

    Args:
        lengths: int32 [batch, segments], tokens per segment.
        budget: Python int, tokens available for all segments together.

    Returns:
        int32 [batch, segments].
    """
    caps = tf.range(1, budget + 1, dtype=tf.int32)[None, :, None]  # (1, budget, 1)
    filled = tf.reduce_sum(tf.minimum(lengths[:, None, :], caps), axis=2)  # (batch, budget)
    cap = tf.reduce_sum(tf.cast(filled <= budget, tf.int32), axis=1, keepdims=True)  # (batch, 1)
    kept = tf.minimum(lengths, cap)  # (batch, segments)
    left_over = budget - tf.reduce_sum(kept, axis=1, keepdims=True)  # (batch, 1)
    longer = lengths > cap  # (batch, segments): segments that can take one more
    num_segments = lengths.shape[1]
    index = tf.range(num_segments)
    # ahead[b, i, j]: segment j gets its extra token before segment i.
    ahead = tf.logical_or(lengths[:, None, :] > lengths[:, :, None],
                          tf.logical_and(lengths[:, None, :] == lengths[:, :, None],
                                         index[None, None, :] > index[None, :, None]))
    ahead = tf.logical_and(ahead, longer[:, None, :])
    rank = tf.reduce_sum(tf.cast(ahead, tf.int32), axis=2)  # (batch, segments)
    extra = tf.logical_and(longer, rank < left_over)
    return kept + tf.cast(extra, tf.int32)
