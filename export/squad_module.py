"""SquadModule: a question and a context -> the answer span, its text, character offsets and score, in-graph.

It reads answers as `official_bert.data.squad_postprocessing.postprocess` does on one window, with dense
core ops:

1. One window per question: `[CLS] question [SEP] context [SEP]`, the question cut to `max_query_length`
   pieces first (as `build_features` does), the context then cut to the `seq_length - question - 3` pieces
   left, and `truncated` says when either was cut. RoBERTa (a `Preprocessor` with `layout="roberta"`):
   `<s> question </s></s> context </s>`, `seq_length - question - 4` context pieces, the question's leading
   whitespace stripped first (as `build_features` and transformers' `run_qa.py` do). The Python path
   (`tasks.run_squad`) slides doc-stride windows over a long context instead; the export reads only the first
   window, so export with a larger `--max_seq_length` (up to the model's position limit) to cover longer
   contexts.
2. The answer is the span of context pieces with the highest start + end logit among those with
   start <= end and end - start + 1 <= `max_answer_length` (the run's values, from `task.json`): the first
   entry of `postprocess`'s n-best list (with every position a candidate). Ties go to the lower start, then
   the lower end.
3. SQuAD 2.0 models: the null score is start + end logit of [CLS]; the answer is "" (`no_answer`) when the
   null score exceeds the best span's score by more than `null_score_diff_threshold` (saved by
   `tasks.run_squad`), as `postprocess` predicts.

A context with no piece (empty, or only whitespace) has no span: the answer is "", offsets -1, score -inf
(and for SQuAD 2.0 `no_answer` is true, `null_score_diff` +inf), as `postprocess` predicts "" there.

Offsets: `answer_start` / `answer_end` count Unicode characters (Python `str` indices: `context[start:end]`
is `answer_text`), `answer_byte_start` / `answer_byte_end` are UTF-8 byte offsets (ends exclusive), both -1
when the answer is "". A span runs from its first piece's start to its last piece's end, so casing, accents
and inner whitespace come back exactly. Invalid UTF-8 is handled as by the tagger (`export.tagger_module`):
no error, runs of invalid bytes are [UNK] pieces, characters counted as UTF-8 lead bytes.

The TFLite form (`tflite_answer_text`) has no string-slicing ops: no `answer_text` and no character offsets,
the byte offsets and everything else as in the SavedModel.
"""

import os

import tensorflow as tf

from export.serving_module import ServingModule
from export.tagger_module import LEADING_WHITESPACE
from official_bert.data.padding import trim_inputs, zeros_after
from official_bert.data.squad import special_tokens_between
from official_bert.text.ragged_ops import characters_before, row_ids

NEG_INF = float("-inf")


def keep_first(ragged, keep):
    """The first `keep[row]` values of each row of a ragged tensor, with dense ops only.

    Args:
        ragged: a RaggedTensor [batch, (n)].
        keep: int64 [batch], values to keep per row.

    Returns:
        `(kept, lengths)`: the RaggedTensor [batch, (min(n, keep))] and the int64 [batch] original lengths.
    """
    splits = tf.cast(ragged.row_splits, tf.int64)  # (batch + 1,)
    lengths = splits[1:] - splits[:-1]  # (batch,)
    kept_lengths = tf.minimum(lengths, keep)  # (batch,)
    num_values = tf.shape(ragged.values, out_type=tf.int64)[0]
    rows = row_ids(splits, num_values)  # (n,)
    position = tf.range(num_values) - tf.gather(splits, rows)  # (n,) index within its row
    kept = tf.reshape(tf.where(position < tf.gather(kept_lengths, rows)), [-1])
    kept_splits = tf.concat([tf.zeros([1], tf.int64), tf.cumsum(kept_lengths)], axis=0)
    return tf.RaggedTensor.from_row_splits(tf.gather(ragged.values, kept), kept_splits, validate=False), lengths


def best_spans(start_logits, end_logits, context_mask, max_answer_length):
    """The highest-scoring valid span of each row.

    A span (s, e) is valid when both are context positions, s <= e and e - s + 1 <= max_answer_length. Its
    score is start_logits[s] + end_logits[e]. Ties go to the lower s, then the lower e (the order of
    `postprocess`'s candidates).

    Args:
        start_logits: float32 [batch, seq].
        end_logits: float32 [batch, seq].
        context_mask: bool [batch, seq], True on context pieces.
        max_answer_length: Python int, the longest span in pieces.

    Returns:
        `(start, end, score)`: int32 [batch] positions and float32 [batch] score; a row without a valid span
        has score -inf (and start = end = 0).
    """
    seq_length = start_logits.shape[1]
    width = min(int(max_answer_length), seq_length)
    neg_inf = tf.constant(NEG_INF, tf.float32)
    start = tf.where(context_mask, start_logits, neg_inf)  # (batch, seq)
    end = tf.where(context_mask, end_logits, neg_inf)  # (batch, seq)
    end_padded = tf.concat([end, tf.fill(tf.stack([tf.shape(end)[0], width - 1]), neg_inf)], axis=1)
    # candidates[b, s, d]: the end logit at s + d, the span (s, s + d)
    offsets = tf.constant([[s + d for d in range(width)] for s in range(seq_length)], tf.int32)  # (seq, width)
    ends = tf.gather(end_padded, offsets, axis=1)  # (batch, seq, width)
    scores = start[:, :, None] + ends  # (batch, seq, width); -inf where invalid
    best_length = tf.argmax(scores, axis=2, output_type=tf.int32)  # (batch, seq) best d for each start
    best_per_start = tf.reduce_max(scores, axis=2)  # (batch, seq)
    best_start = tf.argmax(best_per_start, axis=1, output_type=tf.int32)  # (batch,) first maximum: lower start
    score = tf.reduce_max(best_per_start, axis=1)  # (batch,)
    batch_index = tf.range(tf.shape(best_start)[0])
    best_end = best_start + tf.gather_nd(best_length, tf.stack([batch_index, best_start], axis=1))
    return best_start, best_end, score


class SquadModule(ServingModule):
    """Serves a `BertSpanLabeler` trained by `tasks.run_squad` (see the module notes).

    Raw-text outputs (`question`, `context` [batch] strings in): `answer_text` [batch] string,
    `answer_start` / `answer_end` [batch] int64 characters and `answer_byte_start` / `answer_byte_end` bytes
    (-1 for ""), `score` [batch] float32 (start + end logit of the best span), `answer_token_start` /
    `answer_token_end` [batch] int32 (positions in the packed sequence, -1 for ""), `start_logits` /
    `end_logits` [batch, seq] (0 after the longest packed question + context, the length the model runs at),
    `truncated` [batch] bool; SQuAD 2.0 models also `no_answer` [batch] bool,
    `null_score` (start + end logit of [CLS]) and `null_score_diff` (null_score - score) [batch] float32.
    `serve_tokens` gives the outputs without text: the context is the type-1 tokens before the last [SEP] (RoBERTa:
    the tokens between the first `</s></s>` and the last `</s>`).

    Args:
        model: a `BertSpanLabeler` with its trained weights.
        preprocessor: an `official_bert.text.Preprocessor`, or a `Preprocessor` (its `layout`).
        max_query_length: question pieces kept.
        max_answer_length: the longest answer, in pieces.
        version_2_with_negative: SQuAD 2.0: some questions have no answer.
        null_score_diff_threshold: SQuAD 2.0: answer "" when null_score - score exceeds this.
        assets: file name -> path of files to ship in `assets/`.
    """

    def __init__(self, model, preprocessor, max_query_length, max_answer_length, version_2_with_negative,
                 null_score_diff_threshold, assets):
        self.layout = getattr(preprocessor, "layout", "bert")
        self._extra = special_tokens_between(self.layout)  # RoBERTa's second </s> between question and context
        limit = preprocessor.seq_length - 4 - self._extra
        if not 1 <= max_query_length <= limit:
            raise ValueError(f"max_query_length={max_query_length} must be between 1 and max_seq_length - "
                             f"{4 + self._extra} ({limit}), to leave room for context")
        if max_answer_length < 1:
            raise ValueError(f"max_answer_length must be at least 1, got {max_answer_length}")
        super().__init__(preprocessor, ("question", "context"), assets, name="squad")
        self.model = model
        self.max_query_length = int(max_query_length)
        self.max_answer_length = int(max_answer_length)
        self.version_2_with_negative = bool(version_2_with_negative)
        self.null_score_diff_threshold = float(null_score_diff_threshold)

    @classmethod
    def from_model_dir(cls, loaded, seq_length, assets, staging_dir, top_k=None, jit_compile=False):
        """A SQuAD model_dir's module: its answer settings come from task.json (the latest run's)."""
        from official_bert.tasks.squad import ANSWER_SETTINGS

        info = loaded.info
        for field in ANSWER_SETTINGS:
            if field not in info:
                raise ValueError(f"{os.path.join(loaded.model_dir, 'task.json')}: field '{field}' missing (written by "
                                 "an old tasks.run_squad); re-run it with --do_train=false to record it")
        return cls(loaded.model, cls.preprocessor_for(loaded, seq_length), info["max_query_length"],
                   info["max_answer_length"], bool(info.get("version_2_with_negative", False)),
                   info["null_score_diff_threshold"], assets)

    def warmup_texts(self):
        return {"question": ["Where did Peter Blackburn fly on Monday?", "What is the journey like?"],
                "context": ["Peter Blackburn flew to Brussels on Monday to meet the European Commission.",
                            "It's a charming and often affecting journey."]}

    def _answer(self, inputs, context_mask, trim=False):
        """Logits and the best span of packed inputs; positions -1 where the answer is "". `trim`: run the model at
        the longest packed sequence, the logits 0 after it (outside every context)."""
        if trim:
            logits = self.model(trim_inputs(inputs)[0], training=False)  # (batch, longest) each
            logits = {name: zeros_after(logits[name], self.seq_length) for name in ("start_logits", "end_logits")}
        else:
            logits = self.model(inputs, training=False)
        start_logits, end_logits = logits["start_logits"], logits["end_logits"]  # (batch, seq) each
        start, end, score = best_spans(start_logits, end_logits, context_mask, self.max_answer_length)
        answered = score > NEG_INF  # (batch,)
        outputs = {"start_logits": start_logits, "end_logits": end_logits, "score": score}
        if self.version_2_with_negative:
            null_score = start_logits[:, 0] + end_logits[:, 0]  # (batch,) [CLS]
            null_score_diff = null_score - score  # +inf without a span
            answered = tf.logical_and(answered, null_score_diff <= self.null_score_diff_threshold)
            outputs.update(null_score=null_score, null_score_diff=null_score_diff, no_answer=tf.logical_not(answered))
        outputs["answer_token_start"] = tf.where(answered, start, -1)
        outputs["answer_token_end"] = tf.where(answered, end, -1)
        return outputs

    def answer_tokens(self, inputs):
        mask = tf.equal(inputs["input_mask"], 1)  # (batch, seq)
        last = tf.reduce_sum(inputs["input_mask"], axis=1, keepdims=True) - 1  # (batch, 1) the closing [SEP]
        positions = tf.range(self.seq_length)[None, :]
        if self._extra:  # RoBERTa: type ids are all 0; the context starts after the first </s></s>
            sep_id = self.preprocessor.tokenizer.get_special_tokens_dict()["end_of_segment_id"]
            is_sep = tf.equal(inputs["input_word_ids"], sep_id)
            first = tf.argmax(tf.cast(is_sep, tf.int32), axis=1, output_type=tf.int32)[:, None] + 2  # (batch, 1)
            in_context = positions >= tf.cast(first, positions.dtype)
        else:
            in_context = tf.equal(inputs["input_type_ids"], 1)
        context = tf.logical_and(tf.logical_and(mask, in_context), positions < last)
        return self._answer(inputs, context)

    def answer_text(self, texts):
        return self._read(texts[0], texts[1], with_characters=True)

    def tflite_answer_text(self, texts):
        return self._read(texts[0], texts[1], with_characters=False)

    def _read(self, question, context, with_characters):
        if self._extra:  # RoBERTa: a leading space would be a piece of its own ("Ġ")
            question = tf.strings.regex_replace(question, LEADING_WHITESPACE, "")
        question_ids, question_length = keep_first(self.preprocessor.tokenize(question),
                                                   tf.constant(self.max_query_length, tf.int64))
        context_ids, starts, ends = self.preprocessor.tokenize(context, with_offsets=True)  # [batch, (pieces)]
        kept_question = question_ids.row_splits[1:] - question_ids.row_splits[:-1]  # (batch,) int64
        room = self.seq_length - 3 - self._extra - kept_question  # (batch,) context pieces that fit
        context_ids, context_length = keep_first(context_ids, room)
        inputs, _ = self.preprocessor.pack_tokens([question_ids, context_ids])  # fits: no further cut
        truncated = tf.logical_or(question_length > self.max_query_length, context_length > room)

        first = tf.cast(kept_question + 2 + self._extra, tf.int32)[:, None]  # (batch, 1) [CLS] question [SEP]
        kept_context = tf.cast(context_ids.row_splits[1:] - context_ids.row_splits[:-1], tf.int32)[:, None]
        positions = tf.range(self.seq_length)[None, :]  # (1, seq)
        context_mask = tf.logical_and(positions >= first, positions < first + kept_context)  # (batch, seq)
        outputs = self._answer(inputs, context_mask, trim=with_characters)  # (TFLite: the fixed shape)

        # Byte offsets of the span's first and last pieces, from the tokenizer's offsets of the whole context.
        answered = outputs["answer_token_start"] >= 0  # (batch,)
        base = tf.cast(starts.row_splits[:-1], tf.int64) - tf.cast(first[:, 0], tf.int64)  # (batch,) piece - position
        num_pieces = tf.shape(starts.values, out_type=tf.int64)[0]
        dummy = tf.fill([1], tf.constant(-1, tf.int64))  # read where there is no answer: never an empty gather
        start_index = tf.where(answered, base + tf.cast(outputs["answer_token_start"], tf.int64), num_pieces)
        end_index = tf.where(answered, base + tf.cast(outputs["answer_token_end"], tf.int64), num_pieces)
        byte_start = tf.gather(tf.concat([tf.cast(starts.values, tf.int64), dummy], axis=0), start_index)
        byte_end = tf.gather(tf.concat([tf.cast(ends.values, tf.int64), dummy], axis=0), end_index)
        outputs.update(answer_byte_start=byte_start, answer_byte_end=byte_end, truncated=truncated)
        if with_characters:
            outputs.update(answer_start=characters_before(context, byte_start[:, None])[:, 0],
                           answer_end=characters_before(context, byte_end[:, None])[:, 0],
                           answer_text=tf.strings.substr(context, tf.maximum(byte_start, 0),
                                                         tf.maximum(byte_end - byte_start, 0)))
        return outputs

