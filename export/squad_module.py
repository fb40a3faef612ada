"""SquadModule: a question and a context -> the answer span, its text, character offsets and score, in-graph.

It reads answers as `official_bert.data.squad_postprocessing.postprocess` does, with dense core ops:

1. Doc-stride windows, as `build_features` makes them (`export.squad_windows`): the question is cut to
   `max_query_length` pieces, and the context is cut into windows of `seq_length - question - 3` pieces (RoBERTa:
   `- 4`), each starting `doc_stride` pieces after the one before, until one reaches the context's end. Each window
   is packed as `[CLS] question [SEP] window [SEP]` (RoBERTa: `<s> question </s></s> window </s>`, the question's
   leading whitespace stripped first, as `build_features` and transformers' `run_qa.py` do). All windows of a
   request run as one batch. `max_windows` caps the windows of one context; `truncated` says when the question or
   the context was cut.
2. The answer is the span of context pieces with the highest start + end logit, over all the windows of the
   question, among those with start <= end, end - start + 1 <= `max_answer_length` (the run's values, from
   `task.json`), and a start piece whose maximum-context window this is (`token_is_max_context`): the first entry
   of `postprocess`'s n-best list (with every position a candidate). Ties go to the lower window, then the lower
   start, then the lower end.
3. SQuAD 2.0 models: the null score is the smallest start + end logit of [CLS] over the windows; the answer is ""
   (`no_answer`) when the null score exceeds the best span's score by more than `null_score_diff_threshold`
   (saved by `tasks.run_squad`), as `postprocess` predicts.

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
from export.squad_windows import best_rows, doc_stride_windows, first_argmax, max_context_mask, smallest
from export.tagger_module import LEADING_WHITESPACE
from export.traced_once import TracedOnce
from official_bert.data.padding import trim_inputs, zeros_after
from official_bert.data.squad import special_tokens_between
from official_bert.text.ragged_ops import characters_before, row_lengths, slice_rows

NEG_INF = float("-inf")
DEFAULT_MAX_WINDOWS = 64  # windows of one context a request reads at most (`export.saved_model --max_windows`)


def keep_first(ragged, keep):
    """The first `keep[row]` values of each row of a ragged tensor, with dense ops only.

    Args:
        ragged: a RaggedTensor [batch, (n)].
        keep: int64 [batch], values to keep per row.

    Returns:
        `(kept, lengths)`: the RaggedTensor [batch, (min(n, keep))] and the int64 [batch] original lengths.
    """
    lengths = row_lengths(ragged)  # (batch,)
    rows = tf.range(tf.shape(lengths, out_type=tf.int64)[0])
    return slice_rows(ragged, rows, tf.zeros_like(lengths), tf.minimum(lengths, keep)), lengths


def best_spans(start_logits, end_logits, start_mask, end_mask, max_answer_length):
    """The highest-scoring valid span of each row.

    A span (s, e) is valid when `start_mask[s]` and `end_mask[e]`, s <= e and e - s + 1 <= max_answer_length. Its
    score is start_logits[s] + end_logits[e]. Ties go to the lower s, then the lower e (the order of
    `postprocess`'s candidates).

    Args:
        start_logits: float32 [batch, seq].
        end_logits: float32 [batch, seq].
        start_mask: bool [batch, seq], True where a span may start (context pieces with their maximum context here).
        end_mask: bool [batch, seq], True where a span may end (context pieces).
        max_answer_length: Python int, the longest span in pieces.

    Returns:
        `(start, end, score)`: int32 [batch] positions and float32 [batch] score; a row without a valid span
        has score -inf (and start = end = 0).
    """
    seq_length = start_logits.shape[1]
    width = min(int(max_answer_length), seq_length)
    neg_inf = tf.constant(NEG_INF, tf.float32)
    start = tf.where(start_mask, start_logits, neg_inf)  # (batch, seq)
    end = tf.where(end_mask, end_logits, neg_inf)  # (batch, seq)
    end_padded = tf.concat([end, tf.fill(tf.stack([tf.shape(end)[0], width - 1]), neg_inf)], axis=1)
    # candidates[b, s, d]: the end logit at s + d, the span (s, s + d)
    offsets = tf.constant([[s + d for d in range(width)] for s in range(seq_length)], tf.int32)  # (seq, width)
    ends = tf.gather(end_padded, offsets, axis=1)  # (batch, seq, width)
    scores = start[:, :, None] + ends  # (batch, seq, width); -inf where invalid
    best_length = first_argmax(scores, axis=2)  # (batch, seq) best d for each start: the lower end on ties
    best_per_start = tf.reduce_max(scores, axis=2)  # (batch, seq)
    best_start = first_argmax(best_per_start, axis=1)  # (batch,) the lower start on ties
    score = tf.reduce_max(best_per_start, axis=1)  # (batch,)
    batch_index = tf.range(tf.shape(best_start)[0])
    best_end = best_start + tf.gather_nd(best_length, tf.stack([batch_index, best_start], axis=1))
    return best_start, best_end, score


class SquadModule(ServingModule):
    """Serves a `BertSpanLabeler` trained by `tasks.run_squad` (see the module notes).

    Raw-text outputs (`question`, `context` [batch] strings in): `answer_text` [batch] string,
    `answer_start` / `answer_end` [batch] int64 characters and `answer_byte_start` / `answer_byte_end` bytes
    (-1 for ""), `score` [batch] float32 (start + end logit of the best span), `num_windows` [batch] int32 (the
    windows read), `answer_window` [batch] int32 (the window of the answer; of the best span for SQuAD 2.0's "";
    0 without a span), `answer_token_start` / `answer_token_end` [batch] int32 (positions in that window's packed
    sequence, -1 for ""), `start_logits` / `end_logits` [batch, seq] (that window's; 0 after the longest packed
    window of the request, the length the model runs at), `truncated` [batch] bool; SQuAD 2.0 models also
    `no_answer` [batch] bool, `null_score` (the smallest start + end logit of [CLS] over the windows) and
    `null_score_diff` (null_score - score) [batch] float32.
    `serve_tokens` reads each packed row as one window and gives the outputs without text: the context is the type-1
    tokens before the last [SEP] (RoBERTa: the tokens between the first `</s></s>` and the last `</s>`).

    Args:
        model: a `BertSpanLabeler` with its trained weights.
        preprocessor: an `official_bert.text.Preprocessor`, or a `Preprocessor` (its `layout`).
        max_query_length: question pieces kept.
        max_answer_length: the longest answer, in pieces.
        version_2_with_negative: SQuAD 2.0: some questions have no answer.
        null_score_diff_threshold: SQuAD 2.0: answer "" when null_score - score exceeds this.
        assets: file name -> path of files to ship in `assets/`.
        doc_stride: pieces between the starts of a context's windows (the run's).
        max_windows: windows of one context read at most.
    """

    reads_windows = True

    def __init__(self, model, preprocessor, max_query_length, max_answer_length, version_2_with_negative,
                 null_score_diff_threshold, assets, doc_stride=128, max_windows=DEFAULT_MAX_WINDOWS):
        self.layout = getattr(preprocessor, "layout", "bert")
        self._extra = special_tokens_between(self.layout)  # RoBERTa's second </s> between question and context
        limit = preprocessor.seq_length - 4 - self._extra
        if not 1 <= max_query_length <= limit:
            raise ValueError(f"max_query_length={max_query_length} must be between 1 and max_seq_length - "
                             f"{4 + self._extra} ({limit}), to leave room for context")
        if max_answer_length < 1:
            raise ValueError(f"max_answer_length must be at least 1, got {max_answer_length}")
        if doc_stride < 1 or max_windows < 1:
            raise ValueError(f"doc_stride and max_windows must be at least 1, got {doc_stride} and {max_windows}")
        super().__init__(preprocessor, ("question", "context"), assets, name="squad")
        self.model = model
        self._model = TracedOnce(lambda inputs: self.model(inputs, training=False))  # (reads self.model when traced)
        self.max_query_length = int(max_query_length)
        self.max_answer_length = int(max_answer_length)
        self.version_2_with_negative = bool(version_2_with_negative)
        self.null_score_diff_threshold = float(null_score_diff_threshold)
        self.doc_stride = int(doc_stride)
        self.max_windows = int(max_windows)

    @classmethod
    def from_model_dir(cls, loaded, seq_length, assets, staging_dir, top_k=None, jit_compile=False,
                       max_windows=None):
        """A SQuAD model_dir's module: its answer settings and doc stride come from task.json (the latest run's;
        the doc stride of a model_dir written before task.json recorded it, from run.json)."""
        from official_bert.tasks.squad import ANSWER_SETTINGS

        info = loaded.info
        for field in ANSWER_SETTINGS:
            if field not in info and field != "doc_stride":  # (`_doc_stride` reads an older model_dir's run.json)
                raise ValueError(f"{os.path.join(loaded.model_dir, 'task.json')}: field '{field}' missing (written by "
                                 "an old tasks.run_squad); re-run it with --do_train=false to record it")
        return cls(loaded.model, cls.preprocessor_for(loaded, seq_length), info["max_query_length"],
                   info["max_answer_length"], bool(info.get("version_2_with_negative", False)),
                   info["null_score_diff_threshold"], assets, doc_stride=_doc_stride(loaded),
                   max_windows=max_windows or DEFAULT_MAX_WINDOWS)

    def warmup_texts(self):
        long_context = " ".join(["Peter Blackburn flew to Brussels on Monday to meet the European Commission."]
                                * (self.seq_length // 10 + 1)  # (15 pieces each) more than one window
                                + [f"The meeting lasted {self.seq_length} minutes."])
        return {"question": ["Where did Peter Blackburn fly on Monday?", "What is the journey like?",
                             "How long did the meeting last?"],
                "context": ["Peter Blackburn flew to Brussels on Monday to meet the European Commission.",
                            "It's a charming and often affecting journey.", long_context]}

    def _window_spans(self, inputs, start_mask, end_mask, trim):
        """Each packed window's logits and best span (`best_spans`): a dict of [windows, ...] Tensors. `trim`: run
        the model at the longest packed window, the logits 0 after it (outside every context)."""
        if trim:
            logits = self._model(trim_inputs(inputs)[0])  # (windows, longest) each
            logits = {name: zeros_after(logits[name], self.seq_length) for name in ("start_logits", "end_logits")}
        else:
            logits = self._model(inputs)  # traced for any length: the static (windows, seq) comes back here
            for name in ("start_logits", "end_logits"):
                logits[name].set_shape(inputs["input_word_ids"].shape)
        start_logits, end_logits = logits["start_logits"], logits["end_logits"]  # (windows, seq) each
        start, end, score = best_spans(start_logits, end_logits, start_mask, end_mask, self.max_answer_length)
        return {"start_logits": start_logits, "end_logits": end_logits, "score": score, "start": start, "end": end,
                "null_score": start_logits[:, 0] + end_logits[:, 0]}  # null: [CLS]

    def _answer(self, windows, row_splits):
        """The answer of each question from its windows' spans (`_window_spans`), rows `row_splits[q]` to
        `row_splits[q + 1]` of `windows`; positions -1 where the answer is "". Also returns each answer's row."""
        row = best_rows(windows["score"], row_splits)  # (batch,) the window of the best span, the first on ties
        picked = {name: tf.gather(windows[name], row) for name in ("start_logits", "end_logits", "score", "start",
                                                                   "end")}
        score = picked["score"]
        answered = score > NEG_INF  # (batch,)
        outputs = {"start_logits": picked["start_logits"], "end_logits": picked["end_logits"], "score": score}
        if self.version_2_with_negative:
            null_score = smallest(windows["null_score"], row_splits)  # (batch,)
            null_score_diff = null_score - score  # +inf without a span
            answered = tf.logical_and(answered, null_score_diff <= self.null_score_diff_threshold)
            outputs.update(null_score=null_score, null_score_diff=null_score_diff, no_answer=tf.logical_not(answered))
        outputs["answer_token_start"] = tf.where(answered, picked["start"], -1)
        outputs["answer_token_end"] = tf.where(answered, picked["end"], -1)
        return outputs, row

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
        one_window_each = tf.range(tf.shape(mask, out_type=tf.int64)[0] + 1)  # every row its own question
        return self._answer(self._window_spans(inputs, context, context, trim=False), one_window_each)[0]

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
        kept_question = row_lengths(question_ids)  # (batch,)
        room = self.seq_length - 3 - self._extra - kept_question  # (batch,) context pieces a window holds
        windows = doc_stride_windows(context_ids, room, self.doc_stride, self.max_windows)
        question_rows = slice_rows(question_ids, windows.example, tf.zeros_like(windows.example),
                                   tf.gather(kept_question, windows.example))  # each window's question
        inputs, _ = self.preprocessor.pack_tokens([question_rows, windows.context])  # fits: no further cut
        truncated = tf.logical_or(question_length > self.max_query_length, windows.cut)

        first = tf.gather(kept_question, windows.example) + 2 + self._extra  # (windows,) [CLS] question [SEP]
        positions = tf.range(self.seq_length, dtype=tf.int64)[None, :]  # (1, seq)
        in_window = tf.logical_and(positions >= first[:, None],
                                   positions < (first + windows.length)[:, None])  # (windows, seq)
        starts_here = tf.logical_and(in_window, max_context_mask(windows, first, self.seq_length))
        spans = self._window_spans(inputs, starts_here, in_window, trim=True)
        outputs, row = self._answer(spans, windows.row_splits)
        outputs.update(num_windows=tf.cast(windows.count, tf.int32),
                       answer_window=tf.cast(tf.gather(windows.window, row), tf.int32))

        # Byte offsets of the span's first and last pieces, from the tokenizer's offsets of the whole context.
        answered = outputs["answer_token_start"] >= 0  # (batch,)
        base = tf.cast(starts.row_splits[:-1], tf.int64) + tf.gather(windows.start - first, row)  # piece - position
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


def _doc_stride(loaded):
    """The run's doc stride: task.json's, else (a model_dir written before task.json recorded it) run.json's."""
    from official_bert.model_dir import read_json
    from official_bert.run_record import RUN_FILE

    if "doc_stride" in loaded.info:
        return int(loaded.info["doc_stride"])
    run_file = os.path.join(loaded.model_dir, RUN_FILE)
    recorded = read_json(run_file).get("task", {}).get("doc_stride") if os.path.isfile(run_file) else None
    if recorded is None:
        raise ValueError(f"{os.path.join(loaded.model_dir, 'task.json')}: field 'doc_stride' missing (written by an "
                         "old tasks.run_squad), and no run.json records it; re-run it with --do_train=false to record "
                         "it")
    return int(recorded)
