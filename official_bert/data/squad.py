"""SQuAD v1.1 / v2.0 doc-stride windows of word pieces (the examples: `squad_examples`).

Features follow Google's original `run_squad.py`, with character offsets where it had whitespace words:

1. Tokenize (batched tf.data, `official_bert.text.BertTokenizer(..., with_offsets=True)`): every distinct
   context once and every question; the tokenizer's byte offsets become Python character offsets into
   `example.context`, so pieces and offsets are those of Hugging Face's `BertTokenizerFast` (tested on the
   whole dev set).
2. The question (leading whitespace stripped, as Hugging Face's `run_qa.py` does) keeps its first
   `max_query_length` pieces. Each window is `[CLS] question [SEP] context-window [SEP] [PAD]...` with type ids
   0 up to the first [SEP] and 1 after; RoBERTa's (`layout="roberta"`, byte-level BPE) is
   `<s> question </s></s> context-window </s> <pad>...` with type ids 0, as `RobertaTokenizerFast` packs a pair.
   Windows cover the context pieces as the original does: each holds up to
   `max_seq_length - len(question) - 3` pieces (RoBERTa: `- 4`) and the next starts `min(length, doc_stride)`
   pieces later (doc_stride is a step, not Hugging Face's overlap), until one reaches the end. A context with no
   pieces still gets one (empty) window, so every question is predicted.
3. Targets (training): the gold answer's character span maps to the first and last context pieces that
   overlap it (the first: the last of those that start at or before it, as `run_qa.py` picks it). A window
   that does not hold both gets target 0 ([CLS]), as do SQuAD 2.0 unanswerable questions. Training uses the
   first gold answer (training files have one; dev files used for training have several, and Hugging Face's
   `run_qa.py` also takes the first).
4. `token_is_max_context`: a piece in several windows counts only in the one where
   `min(left context, right context) + 0.01 * window length` is largest (the first on ties; computed in exact
   integers, see `max_context_windows`).

Answers whose `text` differs from `context[answer_start:answer_start + len(text)]`, or that cover no word
piece, are counted in the returned stats and logged with their qas_id, never an error. In training, an
example whose first answer is such an answer is skipped (as the original skips answers it cannot find):
its targets would be wrong. Prediction always keeps every example.

Examples:

>>> from official_bert.data.squad_examples import read_squad_json
>>> examples = read_squad_json("dev-v1.1.json")
>>> features, stats = build_features(examples, tokenizer, max_seq_length=384, doc_stride=128,
...                                  max_query_length=64, is_training=False)
>>> outputs = model.predict(squad_dataset(features, batch_size=64, is_training=False))
"""

import dataclasses
import functools
import logging
from typing import List, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf

from official_bert.data.epochs import repeat_shuffled
from official_bert.data.squad_examples import SquadExample

logger = logging.getLogger(__name__)

_LOGGED_MISMATCHES = 20  # mismatched answers logged one by one; all are counted and listed in the stats


@dataclasses.dataclass
class SquadFeatures:
    """All windows of all examples, arrays aligned on axis 0 (n windows).

    Args:
        inputs: `input_word_ids` / `input_mask` / `input_type_ids`, each (n, seq) int32.
        start_positions: (n,) int32 training targets (0 = [CLS]: no answer in this window); None when not
            training.
        end_positions: (n,) int32; None when not training.
        example_index: (n,) int32 index into the examples list.
        token_char_spans: (n, seq, 2) int32 `[start, end)` character offsets into `example.context` of context
            pieces; -1 for [CLS], question, [SEP] and padding.
        token_is_max_context: (n, seq) bool: this window gives the piece its maximum context.
    """

    inputs: dict
    start_positions: Optional[np.ndarray]
    end_positions: Optional[np.ndarray]
    example_index: np.ndarray
    token_char_spans: np.ndarray
    token_is_max_context: np.ndarray

    def __len__(self) -> int:
        return len(self.example_index)


def tokenize_with_char_offsets(tokenizer, texts: Sequence[str], batch_size: int = 256
                               ) -> List[Tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Word pieces of each text with `[start, end)` Python character offsets into it (batched tf.data).

    Returns: one `(ids int32, starts int32, ends int32)` triple of (pieces,) arrays per text.
    """
    from official_bert.text.dataset import tokenize_dataset

    if not texts:
        return []
    result = []
    batches = tokenize_dataset(functools.partial(tokenizer, with_offsets=True), list(texts), batch_size)
    for ids, starts, ends in batches:
        splits = ids.row_splits.numpy()
        ids, starts, ends = (t.flat_values.numpy() for t in (ids, starts, ends))
        for row in range(len(splits) - 1):
            text = texts[len(result)]
            piece = slice(splits[row], splits[row + 1])
            char_starts, char_ends = _char_offsets(text, starts[piece], ends[piece])
            result.append((ids[piece].astype(np.int32), char_starts, char_ends))
    return result


def _char_offsets(text: str, byte_starts: np.ndarray, byte_ends: np.ndarray):
    """UTF-8 byte offsets (at character boundaries) -> Python character offsets."""
    if text.isascii():
        return byte_starts.astype(np.int32), byte_ends.astype(np.int32)
    data = np.frombuffer(text.encode("utf-8"), np.uint8)
    chars_before = np.concatenate([[0], np.cumsum((data & 0xC0) != 0x80)]).astype(np.int32)  # (bytes + 1,)
    return chars_before[byte_starts], chars_before[byte_ends]


def doc_spans(num_pieces: int, max_tokens_for_doc: int, doc_stride: int) -> List[Tuple[int, int]]:
    """`(start, length)` of each window over `num_pieces` context pieces, as the original `run_squad.py`."""
    spans, start = [], 0
    while True:
        length = min(num_pieces - start, max_tokens_for_doc)
        spans.append((start, length))
        if start + length >= num_pieces:
            return spans
        start += min(length, doc_stride)


def max_context_windows(spans: Sequence[Tuple[int, int]], num_pieces: int) -> np.ndarray:
    """(num_pieces,) index of the window giving each piece its maximum context: the original's rule,
    `min(left, right) + 0.01 * length`, in exact integers (`100 * min(left, right) + length`), so that the exports'
    windows (`export.squad_windows`) compute the same in int32. The original's float sums choose the same windows
    on every layout of 128, 256, 384 and 512 pieces (doc stride 48, 64 or 128, questions of 1 to 64 pieces,
    contexts of up to 1,600 pieces)."""
    best = np.zeros(num_pieces, np.int64)
    best_score = np.full(num_pieces, -1)
    for w, (start, length) in enumerate(spans):
        position = np.arange(start, start + length)
        score = 100 * np.minimum(position - start, start + length - 1 - position) + length
        better = score > best_score[position]  # strictly: the first window wins ties
        best[position[better]] = w
        best_score[position[better]] = score[better]
    return best


def _answer_pieces(example: SquadExample, starts: np.ndarray, ends: np.ndarray):
    """The (first, last) context pieces overlapping each gold answer, None for a mismatched answer or one that
    covers no piece; and the problem found for each (None when fine).

    Where several overlapping pieces start at or before the answer (a SentencePiece "▁" alone shares its span's
    start with the piece after it), the last of them is the first piece, as transformers' `run_qa.py` picks it.
    """
    result = []
    for answer in example.answers:
        begin, text = answer["answer_start"], answer["text"]
        if begin < 0 or example.context[begin:begin + len(text)] != text:
            result.append((None, "mismatch"))
            continue
        overlapping = np.nonzero((starts < begin + len(text)) & (ends > begin))[0]
        if not len(overlapping):
            result.append((None, "no_pieces"))
            continue
        at_or_before = overlapping[starts[overlapping] <= begin]
        first = at_or_before[-1] if len(at_or_before) else overlapping[0]
        result.append(((int(first), int(overlapping[-1])), None))
    return result


def special_tokens_between(layout: str) -> int:
    """How many special tokens a pair of segments packs besides one per segment's end and the opening one:
    0 for BERT (`[CLS] A [SEP] B [SEP]`), 1 for RoBERTa (`<s> A </s></s> B </s>`)."""
    if layout not in ("bert", "roberta"):
        raise ValueError(f"layout is {layout!r}; expected 'bert' or 'roberta'")
    return 1 if layout == "roberta" else 0


def build_features(examples: Sequence[SquadExample], tokenizer, max_seq_length: int = 384, doc_stride: int = 128,
                   max_query_length: int = 64, is_training: bool = False, batch_size: int = 256,
                   layout: str = "bert") -> Tuple[SquadFeatures, dict]:
    """Packs examples into doc-stride windows (see the module notes).

    Args:
        examples: `SquadExample`s.
        tokenizer: an `official_bert.text.BertTokenizer`, or a `BytePairTokenizer` with `layout="roberta"`.
        max_seq_length: packed length.
        doc_stride: step between window starts, in context pieces.
        max_query_length: question pieces kept.
        is_training: compute `start_positions` / `end_positions`, skipping examples whose (first) answer is
            mismatched; a question with neither answer nor `is_impossible` is an error.
        batch_size: texts per tokenizer call.
        layout: "bert" (`[CLS] Q [SEP] C [SEP]`, type ids 0 then 1) or "roberta" (`<s> Q </s></s> C </s>`, 0).
    Returns: `(SquadFeatures, stats)`; stats counts `examples`, `windows`, `skipped_examples`,
        `mismatched_answers` (with `mismatched_qas_ids`), `answers_without_pieces`, `truncated_questions`,
        `max_windows_per_example` and, in training, `answer_outside_window` (windows of answerable
        examples whose target is [CLS]) and `impossible_examples`.
    """
    extra = special_tokens_between(layout)  # RoBERTa's second </s> between question and context
    if max_seq_length <= max_query_length + 3 + extra:
        raise ValueError(f"max_seq_length={max_seq_length} leaves no room for context after a question of "
                         f"max_query_length={max_query_length} pieces and {3 + extra} special tokens")
    if doc_stride < 1:
        raise ValueError(f"doc_stride must be at least 1, got {doc_stride}")
    special = tokenizer.get_special_tokens_dict()
    cls_id, sep_id, pad_id = special["start_of_sequence_id"], special["end_of_segment_id"], special["padding_id"]
    context_index = {}
    for example in examples:
        context_index.setdefault(example.context, len(context_index))
    contexts = tokenize_with_char_offsets(tokenizer, list(context_index), batch_size)
    questions = tokenize_with_char_offsets(tokenizer, [e.question.lstrip() for e in examples], batch_size)

    stats = {"examples": len(examples), "skipped_examples": 0, "mismatched_answers": 0, "mismatched_qas_ids": [],
             "answers_without_pieces": 0, "truncated_questions": 0}
    if is_training:
        stats.update(answer_outside_window=0, impossible_examples=0)
    plans = []  # (example index, question ids, context index, spans, answer pieces or None)
    for i, example in enumerate(examples):
        question = questions[i][0]
        stats["truncated_questions"] += len(question) > max_query_length
        question = question[:max_query_length]
        c = context_index[example.context]
        _, starts, ends = contexts[c]
        found = _answer_pieces(example, starts, ends)
        for answer, (_, problem) in zip(example.answers, found):
            if problem == "mismatch":
                stats["mismatched_answers"] += 1
                stats["mismatched_qas_ids"].append(example.qas_id)
                if stats["mismatched_answers"] <= _LOGGED_MISMATCHES:
                    logger.warning("qas_id %s: answer %r does not match the context at answer_start=%d (%r)",
                                   example.qas_id, answer["text"], answer["answer_start"],
                                   example.context[max(answer["answer_start"], 0):][:len(answer["text"])])
            elif problem == "no_pieces":
                stats["answers_without_pieces"] += 1
                logger.warning("qas_id %s: answer %r covers no word piece", example.qas_id, answer["text"])
        target = None
        if is_training:
            if example.is_impossible:
                stats["impossible_examples"] += 1
            elif not example.answers:
                raise ValueError(f"qas_id {example.qas_id}: a training question needs an answer (or, for SQuAD "
                                 f"2.0, is_impossible=true)")
            elif found[0][0] is None:
                stats["skipped_examples"] += 1
                continue
            else:
                target = found[0][0]
        spans = doc_spans(len(starts), max_seq_length - len(question) - 3 - extra, doc_stride)
        plans.append((i, question, c, spans, target))
    if stats["mismatched_answers"] > _LOGGED_MISMATCHES:
        logger.warning("%d answers do not match their context in all (qas_ids in the stats)",
                       stats["mismatched_answers"])

    n = sum(len(plan[3]) for plan in plans)
    shape = (n, max_seq_length)
    word_ids = np.full(shape, pad_id, np.int32)
    mask = np.zeros(shape, np.int32)
    type_ids = np.zeros(shape, np.int32)
    char_spans = np.full(shape + (2,), -1, np.int32)
    is_max_context = np.zeros(shape, bool)
    example_index = np.zeros(n, np.int32)
    start_positions = np.zeros(n, np.int32) if is_training else None
    end_positions = np.zeros(n, np.int32) if is_training else None
    row = 0
    for i, question, c, spans, target in plans:
        context_ids, starts, ends = contexts[c]
        best = max_context_windows(spans, len(context_ids))
        offset = len(question) + 2 + extra  # [CLS] question [SEP] (RoBERTa: <s> question </s></s>)
        for w, (start, length) in enumerate(spans):
            end = offset + length
            word_ids[row, 0] = cls_id
            word_ids[row, 1:1 + len(question)] = question
            word_ids[row, 1 + len(question):offset] = sep_id
            word_ids[row, offset:end] = context_ids[start:start + length]
            word_ids[row, end] = sep_id
            mask[row, :end + 1] = 1
            if layout == "bert":
                type_ids[row, offset:end + 1] = 1
            char_spans[row, offset:end, 0] = starts[start:start + length]
            char_spans[row, offset:end, 1] = ends[start:start + length]
            is_max_context[row, offset:end] = best[start:start + length] == w
            example_index[row] = i
            if target is not None:
                first, last = target
                if start <= first and last < start + length:
                    start_positions[row] = first - start + offset
                    end_positions[row] = last - start + offset
                else:
                    stats["answer_outside_window"] += 1
            row += 1
    stats["windows"] = n
    stats["max_windows_per_example"] = max((len(plan[3]) for plan in plans), default=0)
    inputs = {"input_word_ids": word_ids, "input_mask": mask, "input_type_ids": type_ids}
    return SquadFeatures(inputs=inputs, start_positions=start_positions, end_positions=end_positions,
                         example_index=example_index, token_char_spans=char_spans,
                         token_is_max_context=is_max_context), stats


def squad_dataset(features: SquadFeatures, batch_size: int, is_training: bool, seed: int = 0) -> tf.data.Dataset:
    """Batches of `(inputs, {"start_logits": start_positions, "end_logits": end_positions})` for training (the
    label keys are `BertSpanLabeler`'s output names, which Keras matches with the losses), `inputs` alone
    otherwise.

    Args:
        features: from `build_features` (with targets when training).
        batch_size: batch size.
        is_training: shuffle with `seed` (a fresh order every epoch, the same orders on every run), repeat
            forever, and drop the last partial batch so every step has one static shape.
        seed: shuffle seed.
    """
    inputs = dict(features.inputs)
    if is_training:
        if features.start_positions is None:
            raise ValueError("training needs features built with is_training=True")
        labels = {"start_logits": features.start_positions, "end_logits": features.end_positions}
        dataset = repeat_shuffled((inputs, labels), seed)
    else:
        dataset = tf.data.Dataset.from_tensor_slices(inputs)
    return dataset.batch(batch_size, drop_remainder=is_training).prefetch(tf.data.AUTOTUNE)
