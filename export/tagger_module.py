"""TaggerModule: raw text -> the tag of every word and the named entities with their spans, in-graph.

It reproduces `official_bert.pipelines.EntityTagger` with dense core ops:

1. Words are the tokenizer's words: a piece that is not a `##` suffix (or is first in its text) starts one.
   RoBERTa's byte-level BPE (a `Preprocessor` with `layout="roberta"`) tokenizes the text after a space, as in
   training, and a piece that begins with a space ("Ġ") or follows whitespace starts a word; whitespace-only
   pieces start none (`tagging_dataset.text_words`, which `EntityTagger` follows). ALBERT's SentencePiece: a
   piece that begins with "▁" or is a user-defined symbol starts a word (`tagging_dataset.starts_word`).
2. The words are packed into windows of whole words, `[CLS] pieces [SEP]` (RoBERTa: `<s> pieces </s>`; the
   training layout) with up to `seq_length - 2` pieces each, a new window at the first word that does not fit,
   as `EntityTagger` and training pack them (`export.word_windows`); all windows of a request run as one batch,
   and each word takes the argmax tag of its first piece in its window. Only a word of more than
   `seq_length - 2` pieces is cut (to its first ones; its tag is read as ever), and `truncated` says so.
3. Entities are chunks of the word tags by conlleval's rules (`official_bert.metrics.tagging`), computed
   from each word's tag and its neighbours' within the text, across window borders.

Offsets: `*_byte_start` / `*_byte_end` are byte offsets into the UTF-8 input (the tokenizer's); `word_start`,
`word_end`, `entity_start`, `entity_end` count Unicode characters (code points: Python `str` indices, so
`text[start:end]` is the entity), computed with core `Substr` + `StringLength(unit="UTF8_CHAR")`. Input that
is not valid UTF-8 is no error: each run of invalid bytes is an [UNK] word, the byte offsets stay exact, and
characters are counted as UTF-8 lead bytes (Python's `errors="replace"` agrees except on stray continuation
bytes, which count as no character here and as one U+FFFD there).

The TFLite form (`tflite_answer_text`) has no string-slicing ops, so it outputs the byte offsets only.
"""

import numpy as np
import tensorflow as tf

from export.request_length import RequestLengthModel
from export.serving_module import ServingModule, with_labels_file
from export.traced_once import TracedOnce
from export.warmup import SAMPLE_TEXTS
from export.word_windows import word_windows
from official_bert.data.padding import trim_inputs, zeros_after
from official_bert.data.tagging_dataset import bare_space, starts_word, whitespace_pieces, word_prefix
from official_bert.text.eager_constants import eager_constant
from official_bert.text.ragged_ops import characters_before, row_ids, slice_rows

# Chunk prefixes as integers; O is 0.
_PREFIXES = {"O": 0, "B": 1, "I": 2, "E": 3, "S": 4}
O, B, I, E, S = range(5)


# Python's `str.isspace()` characters at the start of a string (`str.lstrip()`), in RE2 syntax.
LEADING_WHITESPACE = r"^[\s\v\pZ\x{1c}-\x{1f}\x{85}]+"


def tag_tables(label_names):
    """The prefix code and entity type index of every label.

    Args:
        label_names: IOB1/IOB2/IOBES tags, e.g. ["O", "B-PER", "I-PER"].

    Returns:
        `(prefixes, types, type_names)`: int lists (one per label; O's type is -1) and the sorted types.

    Raises:
        ValueError: a label that is not `O` or `B-`/`I-`/`E-`/`S-` followed by a type.
    """
    split = []
    for index, label in enumerate(label_names):
        if label == "O":
            split.append(("O", None))
        elif len(label) > 2 and label[0] in "BIES" and label[1] == "-":
            split.append((label[0], label[2:]))
        else:
            raise ValueError(f"label {index} ({label!r}) is not an entity tag: expected O or B-/I-/E-/S- + type")
    type_names = sorted({t for _, t in split if t is not None})
    prefixes = [_PREFIXES[p] for p, _ in split]
    types = [-1 if t is None else type_names.index(t) for _, t in split]
    return prefixes, types, type_names


def _in(x, codes):
    result = tf.equal(x, codes[0])
    for code in codes[1:]:
        result = tf.logical_or(result, tf.equal(x, code))
    return result


def chunk_ends(prev_prefix, prefix, prev_type, type_):
    """conlleval's end-of-chunk test: does a chunk end at the previous word? (elementwise int Tensors)"""
    return tf.logical_or(tf.logical_or(
        _in(prev_prefix, (E, S)), tf.logical_and(_in(prev_prefix, (B, I)), _in(prefix, (B, S, O)))),
        tf.logical_and(tf.not_equal(prev_prefix, O), tf.not_equal(prev_type, type_)))


def chunk_starts(prev_prefix, prefix, prev_type, type_):
    """conlleval's start-of-chunk test: does a chunk start at this word? (elementwise int Tensors)"""
    return tf.logical_or(tf.logical_or(
        _in(prefix, (B, S)), tf.logical_and(_in(prefix, (I, E)), _in(prev_prefix, (E, S, O)))),
        tf.logical_and(tf.not_equal(prefix, O), tf.not_equal(prev_type, type_)))


def _ragged_to_dense(rows, num_rows, values_list, pads):
    """Lays out values grouped by row (rows ascending) as dense [num_rows, max per row] Tensors.

    Args:
        rows: int64 [n], the row of each value, ascending.
        num_rows: int64 scalar.
        values_list: int Tensors [n] to lay out.
        pads: the fill value of each.

    Returns:
        `(counts, dense)`: int32 [num_rows] values per row, and one [num_rows, max count] Tensor per value.
    """
    ones = tf.ones_like(rows, dtype=tf.int32)
    counts = tf.math.unsorted_segment_sum(ones, rows, num_rows)  # (rows,)
    row_start = tf.cumsum(counts, exclusive=True)  # (rows,)
    index = tf.cumsum(ones, exclusive=True) - tf.gather(row_start, rows)  # (n,) position within its row
    width = tf.reduce_max(tf.concat([counts, tf.zeros([1], tf.int32)], axis=0))
    shape = tf.stack([num_rows, tf.cast(width, tf.int64)])
    indices = tf.stack([rows, tf.cast(index, tf.int64)], axis=1)  # (n, 2)
    dense = [tf.scatter_nd(indices, v - pad, shape) + pad for v, pad in zip(values_list, pads)]
    return counts, dense


class TaggerModule(ServingModule):
    """Serves a `BertTokenClassifier` trained by `tasks.run_ner` (see the module notes).

    Raw-text outputs (padded dense; `num_words` / `num_entities` [batch] int32 say how many are real):
    `word_labels` [batch, words] string, `word_start`/`word_end` (characters) and
    `word_byte_start`/`word_byte_end` [batch, words] int64; `entity_type` [batch, entities] string,
    `entity_text` string, `entity_start`/`entity_end` (characters), `entity_byte_start`/`entity_byte_end`
    int64 (end exclusive); `logits` [batch, seq, labels] of each text's first window (the model runs at the
    request's longest window, on its real tokens only when the windows differ in length: 0 at padding and after
    the longest window; 0 for a text without words); `truncated` [batch] bool (a word was longer than a window).
    Padding is "" and -1.
    `serve_tokens` gives `logits` and `token_labels` [batch, seq] string (every position, special ones too).

    With `jit_compile`, a raw-text request without padding (one text, or texts of one length) runs the model as one
    XLA program (`export.request_length`); TF Serving then needs `--xla_cpu_compilation_enabled=true`.

    Args:
        model: a `BertTokenClassifier` with its trained weights.
        preprocessor: an `official_bert.text.Preprocessor`, or a `Preprocessor` (its `layout`).
        label_names: the tag of each label id (IOB2, as in the model_dir's `task.json`).
        assets: file name -> path of files to ship in `assets/`.
        jit_compile: XLA-compile the model for raw-text requests without padding.
    """

    compiles_requests = True

    def __init__(self, model, preprocessor, label_names, assets, jit_compile=False):
        super().__init__(preprocessor, ("text",), assets, name="tagger", jit_compile=jit_compile)
        self.model = model
        self._model = TracedOnce(lambda inputs: self.model(inputs, training=False))  # (reads self.model when traced)
        self._at_request_length = RequestLengthModel(
            self._model, TracedOnce(lambda inputs: self.model(inputs, training=False, real_tokens=True)), jit_compile)
        self.label_names = [str(name) for name in label_names]
        if model.num_labels != len(self.label_names):
            raise ValueError(f"the model has {model.num_labels} labels, but {len(self.label_names)} label names")
        self._prefixes, self._types, self.type_names = tag_tables(self.label_names)
        layout = getattr(preprocessor, "layout", "bert")
        self._prefix = word_prefix(layout)  # "" (WordPiece) or " " (RoBERTa)
        # (vocab,) tables, captured by every signature (stored once in the SavedModel)
        self._is_suffix = eager_constant(~starts_word(preprocessor.tokenizer, layout))
        self._lone_space = eager_constant(bare_space(preprocessor.tokenizer.get_vocab(), layout))
        self._space = eager_constant(whitespace_pieces(preprocessor.tokenizer.get_vocab(), layout))

    @classmethod
    def from_model_dir(cls, loaded, seq_length, assets, staging_dir, top_k=None, jit_compile=False):
        """A tagging model_dir's module, with its tags (task.json's `label_names`, shipped as `labels.txt`)."""
        labels = list(loaded.info["label_names"])
        return cls(loaded.model, cls.preprocessor_for(loaded, seq_length), labels,
                   with_labels_file(assets, labels, staging_dir), jit_compile)

    def warmup_requests(self):
        """Every export's requests (`ServingModule.warmup_requests`), then one text longer than a window on
        `serving_default`, so that a server's warm-up also runs the windows of whole words."""
        long_text = " ".join(SAMPLE_TEXTS * (self.seq_length // 8 + 1))  # several windows at any length
        return super().warmup_requests() + [("serving_default", {"text": np.array([long_text], dtype=object)})]

    def answer_tokens(self, inputs):
        logits = self._model(inputs)  # (batch, seq, labels)
        best = tf.argmax(logits, axis=-1, output_type=tf.int32)  # (batch, seq)
        return {"logits": logits, "token_labels": tf.gather(tf.constant(self.label_names), best)}

    def answer_text(self, texts):
        return self._tag(texts[0], with_characters=True)

    def tflite_answer_text(self, texts):
        return self._tag(texts[0], with_characters=False)

    def _tag_words(self, ids, word_rows, first_piece, end_piece, num_rows, with_characters):
        """Packs the words into windows of whole words (`export.word_windows`, as `EntityTagger` does), runs the
        model on all windows of the request as one batch and reads each word's tag at its first piece.

        Args:
            ids: RaggedTensor [batch, (pieces)], the texts' pieces.
            word_rows: int64 [words], each word's text.
            first_piece, end_piece: int64 [words], each word's pieces in `ids.values` ([first, end)).
            num_rows: int64, the texts.
            with_characters: the SavedModel (its real-token path for windows of unequal length); else TFLite.

        Returns:
            `(logits, word_label, truncated)`: each text's first window's logits [batch, seq, labels] (0 after the
            window and for a text without words), the label id of each word [words] int32, and [batch] bool, True
            where a word had more pieces than a window holds (its first `seq_length - 2` are packed).
        """
        budget = self.seq_length - 2
        length = end_piece - first_piece  # (words,)
        def segment_sum(values, segments, count):  # int32 values: LiteRT's UnsortedSegmentSum takes no int64 ones
            return tf.cast(tf.math.unsorted_segment_sum(tf.cast(values, tf.int32), segments, count), tf.int64)

        words_per_text = segment_sum(tf.ones_like(word_rows), word_rows, num_rows)  # (batch,)
        word_splits = tf.concat([tf.zeros([1], tf.int64), tf.cumsum(words_per_text)], axis=0)  # (batch + 1,)
        sizes = tf.minimum(length, budget)  # (words,)
        window, offset, starts = word_windows(sizes, tf.gather(word_splits[1:], word_rows), budget)
        num_windows = tf.reduce_sum(tf.cast(starts, tf.int64))
        row_start = tf.gather(tf.cast(ids.row_splits, tf.int64), word_rows)  # (words,) the text's first piece
        pieces = slice_rows(ids, word_rows, first_piece - row_start, sizes)  # [words, (sizes)]
        window_pieces = tf.RaggedTensor.from_row_splits(pieces.values, tf.concat([tf.zeros([1], tf.int64), tf.cumsum(
            segment_sum(sizes, window, num_windows))], axis=0), validate=False)
        inputs, _ = self.preprocessor.pack_tokens([window_pieces])  # (windows, seq) each; fits: no cut
        if with_characters:  # the SavedModel: the model at the longest window's length, zero logits past it
            logits, _ = self._at_request_length(inputs)  # (windows, longest, labels)
            logits = zeros_after(logits, self.seq_length)  # (windows, seq, labels)
        else:  # TFLite: the model at the longest window's length (no real-token path: its gathers and cond), 0 at
            # padding as the SavedModel's
            trimmed, _ = trim_inputs(inputs)  # (windows, longest) each
            logits = self._model(trimmed)  # (windows, longest, labels)
            real = tf.expand_dims(tf.cast(trimmed["input_mask"], logits.dtype), -1)  # (windows, longest, 1)
            logits = zeros_after(logits * real, self.seq_length)
        best = tf.argmax(logits, axis=-1, output_type=tf.int32)  # (windows, seq)
        word_label = tf.gather_nd(best, tf.stack([window, offset + 1], axis=1))  # (words,) +1: [CLS]
        first_window = tf.gather(tf.concat([window, tf.zeros([1], tf.int64)], axis=0), word_splits[:-1])  # (batch,)
        long_words = segment_sum(length > budget, word_rows, num_rows)
        return _first_rows(logits, first_window, words_per_text), word_label, long_words > 0

    def _tag(self, text, with_characters):
        if self._prefix:  # RoBERTa: leading whitespace stripped, then tokenized after a space (if anything is left)
            stripped = tf.strings.regex_replace(text, LEADING_WHITESPACE, "")
            source = tf.where(tf.strings.length(stripped) > 0, tf.strings.join([self._prefix, stripped]), stripped)
            shift = tf.cast(tf.strings.length(text) - tf.strings.length(source), tf.int64)  # (batch,) bytes
            ids, starts, ends = self.preprocessor.tokenize(source, with_offsets=True)
            rows = row_ids(tf.cast(starts.row_splits, tf.int64), tf.shape(starts.values, out_type=tf.int64)[0])
            starts, ends = (offsets.with_flat_values(offsets.flat_values + tf.gather(shift, rows))
                            for offsets in (starts, ends))
        else:
            ids, starts, ends = self.preprocessor.tokenize(text, with_offsets=True)  # [batch, (pieces)]

        splits = tf.cast(ids.row_splits, tf.int64)  # (batch + 1,)
        num_rows = tf.shape(splits, out_type=tf.int64)[0] - 1
        num_pieces = tf.shape(ids.values, out_type=tf.int64)[0]
        piece_rows = row_ids(splits, num_pieces)  # (pieces,)
        position = tf.range(num_pieces) - tf.gather(splits, piece_rows)  # (pieces,) index within its text
        is_suffix = tf.gather(self._is_suffix, ids.values)  # (pieces,)
        # A whitespace-only piece (RoBERTa's "Ġ", "Ċ", ...) starts no word, ends the word before it
        # and makes the next piece start one; except a lone "Ġ" before a piece of its own word (`text_words`).
        is_space = tf.gather(self._space, ids.values)  # (pieces,)
        next_same_row = tf.equal(tf.concat([piece_rows, [-1]], axis=0)[1:], piece_rows)  # (pieces,)
        next_is_space = tf.concat([is_space, [True]], axis=0)[1:]
        next_may_start = tf.concat([tf.logical_not(is_suffix), [True]], axis=0)[1:]
        lone_space = tf.gather(self._lone_space, ids.values)  # (pieces,)
        attached = tf.logical_and(tf.logical_and(lone_space, next_same_row),
                                  tf.logical_not(tf.logical_or(next_is_space, next_may_start)))
        is_space = tf.logical_and(is_space, tf.logical_not(attached))
        after_space = tf.concat([[False], is_space], axis=0)[:-1]  # (pieces,)
        word_start = tf.logical_and(tf.logical_not(is_space), tf.logical_or(
            tf.logical_or(tf.logical_not(is_suffix), after_space), tf.equal(position, 0)))
        boundary = tf.reshape(tf.where(tf.logical_or(word_start, is_space)), [-1])  # (boundaries,)
        next_boundary = tf.concat([boundary[1:], tf.reshape(num_pieces, [1])], axis=0)  # (boundaries,)
        starts_one = tf.reshape(tf.where(tf.gather(word_start, boundary)), [-1])  # (words,)
        first_piece = tf.gather(boundary, starts_one)  # (words,)
        last_piece = tf.gather(next_boundary, starts_one) - 1  # (words,) the word's last non-space piece
        word_rows = tf.gather(piece_rows, first_piece)
        word_byte_start = tf.gather(tf.cast(starts.values, tf.int64), first_piece)  # (words,)
        word_byte_end = tf.gather(tf.cast(ends.values, tf.int64), last_piece)  # (words,)
        # A word's pieces run to the next word's first piece, its trailing whitespace pieces too (`text_words`).
        next_first = tf.concat([first_piece[1:], tf.reshape(num_pieces, [1])], axis=0)  # (words,)
        next_same_text = tf.concat([tf.equal(word_rows[1:], word_rows[:-1]), [False]], axis=0)  # (words,)
        end_piece = tf.where(next_same_text, next_first, tf.gather(splits, word_rows + 1))  # (words,)
        logits, word_label, truncated = self._tag_words(ids, word_rows, first_piece, end_piece, num_rows,
                                                        with_characters)

        # Chunks: each word against its neighbours in the same text (O before the first, after the last).
        prefix = tf.gather(tf.constant(self._prefixes, tf.int32), word_label)  # (words,)
        type_ = tf.gather(tf.constant(self._types, tf.int32), word_label)  # (words,)
        same_row_before = tf.concat([[False], tf.equal(word_rows[1:], word_rows[:-1])], axis=0)  # (words,)
        same_row_after = tf.concat([same_row_before[1:], [False]], axis=0)
        prev_prefix = tf.where(same_row_before, tf.concat([[O], prefix[:-1]], axis=0), O)
        prev_type = tf.where(same_row_before, tf.concat([[-1], type_[:-1]], axis=0), -1)
        next_prefix = tf.where(same_row_after, tf.concat([prefix[1:], [O]], axis=0), O)
        next_type = tf.where(same_row_after, tf.concat([type_[1:], [-1]], axis=0), -1)
        begins = tf.reshape(tf.where(chunk_starts(prev_prefix, prefix, prev_type, type_)), [-1])  # (entities,)
        last_words = tf.reshape(tf.where(chunk_ends(prefix, next_prefix, type_, next_type)), [-1])  # (entities,)
        entity_rows = tf.gather(word_rows, begins)
        entity_type = tf.gather(type_, begins)
        entity_byte_start = tf.gather(word_byte_start, begins)
        entity_byte_end = tf.gather(word_byte_end, last_words)

        num_words, (word_label, word_byte_start, word_byte_end) = _ragged_to_dense(
            word_rows, num_rows, [word_label, word_byte_start, word_byte_end], [-1, -1, -1])
        num_entities, (entity_type, entity_byte_start, entity_byte_end) = _ragged_to_dense(
            entity_rows, num_rows, [entity_type, entity_byte_start, entity_byte_end], [-1, -1, -1])

        def names(table, index):  # index -1 (padding) reads the table's last entry, ""
            return tf.gather(tf.constant(table + [""]), tf.math.floormod(index, len(table) + 1))

        outputs = {
            "logits": logits, "truncated": truncated,
            "num_words": num_words, "word_labels": names(self.label_names, word_label),
            "word_byte_start": word_byte_start, "word_byte_end": word_byte_end,
            "num_entities": num_entities, "entity_type": names(self.type_names, entity_type),
            "entity_byte_start": entity_byte_start, "entity_byte_end": entity_byte_end,
        }
        if with_characters:
            outputs.update({
                "word_start": characters_before(text, word_byte_start),
                "word_end": characters_before(text, word_byte_end),
                "entity_start": characters_before(text, entity_byte_start),
                "entity_end": characters_before(text, entity_byte_end),
                "entity_text": _slices(text, entity_byte_start, entity_byte_end)})
        return outputs


def _first_rows(values, first, count):
    """values[first[g]] where `count[g] > 0`, zeros elsewhere: values [n, ...], first and count int64 [groups]."""
    zeros = tf.zeros(tf.concat([[1], tf.shape(values)[1:]], axis=0), values.dtype)  # (1, ...), also when n is 0
    padded = tf.concat([values, zeros], axis=0)  # (n + 1, ...): row n is zeros
    return tf.gather(padded, tf.where(count > 0, first, tf.shape(values, out_type=tf.int64)[0]))


def _slices(text, byte_start, byte_end):
    """`text[row][start:end]` in bytes, "" for padding. text [batch], byte_start/byte_end [batch, n]."""
    rows = tf.broadcast_to(tf.range(tf.shape(byte_start, out_type=tf.int64)[0])[:, None], tf.shape(byte_start))
    return tf.strings.substr(tf.gather(text, rows), tf.maximum(byte_start, 0), tf.maximum(byte_end - byte_start, 0))
