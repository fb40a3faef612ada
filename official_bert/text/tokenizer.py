"""BertTokenizer: in-graph WordPiece that gives the reference BERT tokenizer's ids on every input."""

import functools

import keras
import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the FastBertNormalize / FastWordpiece kernels)
from tensorflow_text.core.pybinds import pywrap_fast_wordpiece_tokenizer_model_builder
from tensorflow_text.python.ops.fast_bert_normalizer import gen_fast_bert_normalizer
from tensorflow_text.python.ops.fast_wordpiece_tokenizer import gen_fast_wordpiece_tokenizer

from official_bert.text import normalizer_model, unicode_data
from official_bert.text.eager_constants import eager_constant
from official_bert.text.ragged_ops import row_ids
from official_bert.text.vocab import SUFFIX_INDICATOR, PieceTable, is_suffix_piece, load_vocab

REQUIRED_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]")


@functools.lru_cache(maxsize=4)
def _normalizer_models(lower_case, vocab):
    """The `FastBertNormalize` models, uint8 arrays: (normalization, character bounds).

    The normalization's offsets skip the characters it deletes, so they cannot tell where the
    character before a deleted one ends. The bounds model replaces every multi-byte character that
    the normalization changes (and keeps) by as many spaces as it has bytes, and keeps the rest: its
    output is as long as the input, and its offset at input byte q is q exactly where q starts a
    character or lies in a character the normalization copies unchanged.
    """
    mapping, _ = unicode_data.normalizer_table(lower_case, vocab)
    bounds = {cp: " " * len(chr(cp).encode("utf-8")) for cp, out in mapping.items() if out and cp >= 0x80}
    return (np.frombuffer(normalizer_model.build_normalizer_model(mapping), np.uint8),
            np.frombuffer(normalizer_model.build_normalizer_model(bounds), np.uint8))


# The reference's `max_input_chars_per_word`: a longer word is one [UNK].
DEFAULT_MAX_CHARS_PER_WORD = 100


@functools.lru_cache(maxsize=4)
def _wordpiece_model(vocab, max_chars_per_word):
    """The `FastWordpieceTokenize` model of `vocab` (a tuple of tokens), a uint8 array. The kernel's limit is in
    bytes: up to 4 a character, so that no word within the character limit is cut by the byte limit."""
    return np.frombuffer(pywrap_fast_wordpiece_tokenizer_model_builder.build_fast_wordpiece_model(
        list(vocab), 4 * max_chars_per_word, SUFFIX_INDICATOR, "[UNK]", False, False), np.uint8)


class BertTokenizer(keras.layers.Layer):
    """Maps strings to WordPiece ids exactly as the reference BERT tokenizer does, inside the graph.

    The graph holds only two tensorflow-text kernels, `FastBertNormalize` and
    `FastWordpieceTokenizeWithOffsets` (the ones TFLite's tf-text registrar and TF Serving provide), and
    core TF ops. The normalizer gets a code-point table with the reference normalization (see
    `unicode_data.py`): uncased = clean control characters, pad CJK, NFD, strip accents, lower case;
    cased = clean control characters, pad CJK. Words longer than `max_chars_per_word` characters
    become one `[UNK]`, counting characters as the reference does (the kernel counts bytes).

    Literal special-token strings in the text (say "[SEP]") are tokenized as text, as Google's
    original tokenizer does; Hugging Face's fast tokenizer would emit the special id.

    Args:
        vocab_file: path of a `vocab.txt`; give this or `vocab`.
        vocab: the tokens as a list of str; give this or `vocab_file`.
        lower_case: True for uncased models, False for cased.
        max_chars_per_word: longer words map to `[UNK]` (the reference's `max_input_chars_per_word`).
        **kwargs: passed to `keras.layers.Layer`.

    Examples:

    >>> tokenizer = BertTokenizer(vocab_file="vocab.txt")
    >>> tokenizer(tf.constant(["Hello world!"]))
    <tf.RaggedTensor [[7592, 2088, 999]]>
    >>> ids, starts, ends = tokenizer(tf.constant(["Hello world!"]), with_offsets=True)
    """

    def __init__(self, vocab_file=None, vocab=None, lower_case=True, max_chars_per_word=DEFAULT_MAX_CHARS_PER_WORD,
                 **kwargs):
        super().__init__(**kwargs)
        if (vocab_file is None) == (vocab is None):
            raise ValueError("Give exactly one of vocab_file and vocab.")
        tokens = load_vocab(vocab_file) if vocab_file is not None else [str(t) for t in vocab]
        source = f"vocab file {vocab_file}" if vocab_file is not None else "the given vocab"
        missing = [t for t in REQUIRED_TOKENS if t not in tokens]
        if missing:
            raise ValueError(f"{source} lacks the special token(s) {', '.join(missing)}; BERT needs "
                             f"{', '.join(REQUIRED_TOKENS)}.")
        self.vocab_file = vocab_file
        self.vocab = None if vocab_file is not None else tokens
        self.lower_case = lower_case
        self.max_chars_per_word = max_chars_per_word
        self._pieces = PieceTable(tokens)  # a repeated piece: its first id
        self._unk_id = self._pieces.token_to_id["[UNK]"]
        normalizer, bounds = _normalizer_models(lower_case, self._pieces.tokens)
        self._normalizer_model, self._bounds_model = eager_constant(normalizer), eager_constant(bounds)
        try:
            self._wordpiece_model = eager_constant(_wordpiece_model(self._pieces.tokens, max_chars_per_word))
        except RuntimeError as error:  # tensorflow-text's "No valid vocab tokens were found to build the trie"
            raise ValueError(f"{source} has no tokens to tokenize text with, only {', '.join(tokens[:8])}"
                             f"{' ...' if len(tokens) > 8 else ''} ({error})") from None
        is_suffix = is_suffix_piece(tokens)  # (vocab,)
        self._is_suffix = eager_constant(is_suffix)
        self._char_lengths = eager_constant(np.array(  # (vocab,) characters each piece covers in its word
            [len(t) - len(SUFFIX_INDICATOR) if s else len(t) for t, s in zip(tokens, is_suffix)], np.int32))

    @property
    def vocab_size(self):
        return len(self._pieces.tokens)

    def get_vocab(self):
        """Returns the tokens, a list of str whose index is the id."""
        return list(self._pieces.tokens)

    def get_special_tokens_dict(self):
        """Returns the ids BertPackInputs and the pre-training masker need.

        Returns:
            dict with `vocab_size`, `start_of_sequence_id` ([CLS]), `end_of_segment_id` ([SEP]),
            `padding_id` ([PAD]), `unk_id` ([UNK]) and `mask_id` ([MASK]; absent if the vocab has none).
        """
        special = {
            "vocab_size": self.vocab_size,
            "start_of_sequence_id": self._pieces.token_to_id["[CLS]"],
            "end_of_segment_id": self._pieces.token_to_id["[SEP]"],
            "padding_id": self._pieces.token_to_id["[PAD]"],
            "unk_id": self._unk_id,
        }
        if "[MASK]" in self._pieces.token_to_id:
            special["mask_id"] = self._pieces.token_to_id["[MASK]"]
        return special

    def call(self, inputs, with_offsets=False):
        """Tokenizes a batch of strings.

        Args:
            inputs: string Tensor, shape [batch] (a scalar is treated as a batch of one).
            with_offsets: also return the byte offsets of each piece in its input string: `[start, end)`
                covers the input characters the piece came from, from the first to the last (those the
                normalizer deleted in between included, those before or after it not), which are Hugging
                Face `tokenizers`' offsets.

        Returns:
            int32 RaggedTensor ids [batch, (pieces)]; with `with_offsets`, the tuple
            `(ids, starts, ends)` where starts/ends are int64 RaggedTensors of the same shape.
        """
        text = tf.convert_to_tensor(inputs, dtype=tf.string)
        if text.shape.rank == 0:
            text = tf.reshape(text, [1])
        normalized, norm_offsets, norm_splits = gen_fast_bert_normalizer.fast_bert_normalize(
            input_values=text, fast_bert_normalizer_model=self._normalizer_model,
            get_offsets=with_offsets)
        _, ids, row_splits, starts, ends = gen_fast_wordpiece_tokenizer.fast_wordpiece_tokenize_with_offsets(
            input_values=normalized, wp_model=self._wordpiece_model)
        # ids, starts, ends: (pieces,); row_splits: (batch + 1,)
        ids = tf.cast(ids, tf.int32)
        row_splits = tf.cast(row_splits, tf.int64)
        ids, starts, ends, row_splits = self._unk_long_words(ids, starts, ends, row_splits)
        result = tf.RaggedTensor.from_row_splits(ids, row_splits, validate=False)
        if not with_offsets:
            return result
        # Map offsets in the normalized text back to the input: norm_offsets holds, per row, the input
        # position of every normalized byte plus one for the end. A piece starts where its first byte
        # came from and ends where the input character under its last byte ends: as in Hugging Face's
        # offsets, not after the characters the normalizer deleted behind it.
        piece_rows = row_ids(row_splits, tf.shape(ids, out_type=tf.int64)[0])  # (pieces,)
        row_base = tf.gather(tf.cast(norm_splits, tf.int64), piece_rows)  # (pieces,)
        norm_offsets = tf.cast(norm_offsets, tf.int64)
        starts = tf.gather(norm_offsets, row_base + tf.cast(starts, tf.int64))
        ends = row_base + tf.cast(ends, tf.int64)
        ends = self._character_ends(text, tf.gather(norm_offsets, ends - 1), tf.gather(norm_offsets, ends),
                                    piece_rows)
        return (result, tf.RaggedTensor.from_row_splits(starts, row_splits, validate=False),
                tf.RaggedTensor.from_row_splits(ends, row_splits, validate=False))

    def _character_ends(self, text, last, following, rows):
        """Input byte offset where the character holding input byte `last[i]` of `text[rows[i]]` ends.

        Args:
            text: string [batch].
            last: int64 [n], the input offset of a piece's last normalized byte: the last byte of a
                character the normalization copies, or the first byte of one it changes.
            following: int64 [n], the input offset of the next normalized byte (or the input length).
            rows: int64 [n], the row of each piece.

        Returns:
            int64 [n].
        """
        # Where `following` is the next byte, the character ends there. Otherwise deleted characters
        # follow, the normalization changed a multi-byte character, or the piece ends inside the
        # expansion of one (`following == last`): for those few pieces (well under 1% of real text)
        # we find the end in the output of the bounds model (see `_normalizer_models`) on their rows.
        undecided = tf.logical_not(tf.equal(following, last + 1))  # (n,)
        which = tf.reshape(tf.where(undecided), [-1])  # (m,)
        last = tf.gather(last, which)  # (m,)
        rows = tf.gather(rows, which)  # (m,)
        open_rows = tf.scatter_nd(tf.reshape(rows, [-1, 1]), tf.ones_like(rows),
                                  tf.shape(text, out_type=tf.int64)) > 0  # (batch,)
        _, bounds, bound_splits = gen_fast_bert_normalizer.fast_bert_normalize(
            input_values=tf.gather(text, tf.reshape(tf.where(open_rows), [-1])),
            fast_bert_normalizer_model=self._bounds_model, get_offsets=True)
        # bounds: per open row, one offset per input byte, then the input length.
        bounds = tf.cast(bounds, tf.int64)
        open_index = tf.cumsum(tf.cast(open_rows, tf.int64)) - 1  # (batch,) row's index among the open
        at = tf.gather(tf.cast(bound_splits, tf.int64), tf.gather(open_index, rows)) + last  # (m,)
        # The character ends at the first bound among the next 4 bytes (UTF-8's longest character);
        # an index past the row only happens once a nearer bound was found, and is clipped.
        end_of_bounds = tf.shape(bounds, out_type=tf.int64)[0] - 1
        ends = last + 4
        for step in (3, 2, 1):
            is_bound = tf.equal(tf.gather(bounds, tf.minimum(at + step, end_of_bounds)), last + step)
            ends = tf.where(is_bound, last + step, ends)
        ends = tf.scatter_nd(tf.reshape(which, [-1, 1]), ends, tf.shape(following, out_type=tf.int64))  # (n,)
        return tf.where(undecided, ends, following)

    def _unk_long_words(self, ids, starts, ends, row_splits):
        """Replaces every word of more than `max_chars_per_word` characters by one [UNK] (dense ops)."""
        is_word_start = tf.logical_not(tf.gather(self._is_suffix, ids))  # (pieces,)
        word_index = tf.cumsum(tf.cast(is_word_start, tf.int32)) - 1  # (pieces,)
        num_words = tf.reduce_sum(tf.cast(is_word_start, tf.int32))
        word_chars = tf.math.unsorted_segment_sum(
            tf.gather(self._char_lengths, ids), word_index, num_words)  # (words,)
        word_starts = tf.reshape(tf.where(is_word_start), [-1])  # (words,) index of each word's first piece
        # (words,); [1:] after the concat, so that no words (all texts empty) gives no index
        word_lasts = tf.concat([word_starts, tf.shape(ids, out_type=tf.int64)], axis=0)[1:] - 1
        word_ends = tf.gather(ends, word_lasts)  # (words,)
        too_long = tf.gather(word_chars > self.max_chars_per_word, word_index)  # (pieces,)
        keep = tf.logical_or(is_word_start, tf.logical_not(too_long))
        ids = tf.where(too_long, tf.constant(self._unk_id, tf.int32), ids)
        ends = tf.where(too_long, tf.gather(word_ends, word_index), ends)
        kept = tf.reshape(tf.where(keep), [-1])  # (kept pieces,)
        kept_before = tf.concat([tf.zeros([1], tf.int64), tf.cumsum(tf.cast(keep, tf.int64))], axis=0)
        return (tf.gather(ids, kept), tf.gather(starts, kept), tf.gather(ends, kept),
                tf.gather(kept_before, row_splits))

    def get_config(self):
        config = super().get_config()
        config.update({"vocab_file": self.vocab_file, "vocab": self.vocab, "lower_case": self.lower_case,
                       "max_chars_per_word": self.max_chars_per_word})
        return config
