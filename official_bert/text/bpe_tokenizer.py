"""BytePairTokenizer: RoBERTa's byte-level BPE in the graph, giving the ids and offsets of `RobertaTokenizerFast`."""

import json

import keras
import numpy as np
import tensorflow as tf

from official_bert.text import byte_level
from official_bert.text.eager_constants import eager_constant
from official_bert.text.ragged_ops import row_ids
from official_bert.text.vocab import PieceTable

REQUIRED_TOKENS = ("<s>", "</s>", "<pad>")
_NO_MERGE = np.iinfo(np.int32).max


def read_vocab_json(path) -> dict:
    """`vocab.json`: {token: id}, ids unique and non-negative."""
    with open(path, encoding="utf-8") as f:
        try:
            vocab = json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(vocab, dict) or not all(isinstance(i, int) and i >= 0 for i in vocab.values()):
        raise ValueError(f"{path}: expected a JSON object of token -> non-negative integer id")
    if len(set(vocab.values())) != len(vocab):
        raise ValueError(f"{path}: two tokens share an id")
    return vocab


def read_merges_txt(path) -> list:
    """`merges.txt`: one merge `left right` a line, highest priority first; a `#version` line is skipped."""
    merges = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            line = line.rstrip("\r\n")
            if not line or (number == 1 and line.startswith("#version")):
                continue
            parts = line.split(" ")
            if len(parts) != 2 or not all(parts):
                raise ValueError(f"{path}, line {number}: expected two tokens separated by one space, got {line!r}")
            merges.append((parts[0], parts[1]))
    return merges


class BytePairTokenizer(keras.layers.Layer):
    """Maps strings to byte-level BPE ids (RoBERTa, GPT-2 vocabularies) inside the graph.

    As Hugging Face `tokenizers` (`RobertaTokenizerFast`, `add_prefix_space=False`, `trim_offsets=True`): GPT-2's
    pre-tokenization regex splits the text (evaluated from a code-point class table, see `byte_level`), every
    UTF-8 byte of a piece maps to its symbol in the vocab, and merges apply lowest rank first. `tokenizers` merges
    one pair at a time (the lowest rank, the leftmost on a tie); this merges every occurrence of a word's
    lowest-ranked pair at once, left to right (GPT-2's own Python), which gives the same pieces whenever each merge
    comes after the merges that make its two symbols, as in every trained merges file, in far fewer steps (a run
    of 400 repeated characters: a few steps instead of hundreds). Offsets leave out a piece's leading and trailing
    spaces (`trim_offsets`).

    The graph holds only core TensorFlow ops, no tensorflow-text kernel and no hash table (merges and code-point
    classes are sorted constant tables searched with `LowerBound` / `UpperBound`): string ops
    (`UnicodeDecodeWithOffsets`, `StringSplit`, `DecodeRaw`, `StringLength`), a `StatelessWhile` loop (a step
    merges each word's lowest-ranked pair), segment reductions, `Cumsum`, `FloorMod`, `DenseBincount` and
    gathers. TF Serving runs it. TFLite's converter leaves the string ops, the sorted lookups and the int64
    segment reductions as custom ops that no LiteRT kernel implements (only the Flex delegate has them), so
    `export.tflite` refuses a RoBERTa model's text signatures.

    Literal special-token strings in the text ("<s>", "<mask>") are tokenized as text; Hugging Face's tokenizer
    would emit the special id.

    Args:
        vocab_file: path of a `vocab.json` ({token: id}); give this and `merges_file`, or `vocab` and `merges`.
        merges_file: path of a `merges.txt`.
        vocab: {token: id}.
        merges: list of `(left, right)` token pairs, highest priority first.
        **kwargs: passed to `keras.layers.Layer`.

    Examples:

    >>> tokenizer = BytePairTokenizer("vocab.json", "merges.txt")
    >>> ids, starts, ends = tokenizer(tf.constant(["Hello world!"]), with_offsets=True)
    """

    def __init__(self, vocab_file=None, merges_file=None, vocab=None, merges=None, **kwargs):
        super().__init__(**kwargs)
        if (vocab_file is None) == (vocab is None) or (merges_file is None) == (merges is None):
            raise ValueError("Give vocab_file and merges_file, or vocab and merges.")
        self.vocab_file, self.merges_file = vocab_file, merges_file
        self.vocab = None if vocab_file is not None else dict(vocab)
        self.merges = None if merges_file is not None else [tuple(m) for m in merges]
        token_to_id = read_vocab_json(vocab_file) if vocab_file is not None else dict(vocab)
        pairs = read_merges_txt(merges_file) if merges_file is not None else [tuple(m) for m in merges]
        source = vocab_file or "the given vocab"
        missing = [t for t in REQUIRED_TOKENS if t not in token_to_id]
        if missing:
            raise ValueError(f"{source} lacks the special token(s) {', '.join(missing)}; RoBERTa needs "
                             f"{', '.join(REQUIRED_TOKENS)}")
        tokens = [None] * (max(token_to_id.values()) + 1)
        for token, index in token_to_id.items():
            tokens[index] = token
        self._pieces = PieceTable(tokens, token_to_id)
        self._byte_ids = eager_constant(self._byte_symbol_ids(source))
        self._merge_keys, self._merge_ranks, self._merge_ids = map(
            eager_constant, self._merge_table(pairs, merges_file or "merges"))
        self._class_starts, self._classes = map(eager_constant, byte_level.class_ranges())

    def _byte_symbol_ids(self, source):
        """(256,) int32: the id of each byte's symbol; a byte whose symbol is not in the vocab maps to <unk>."""
        unk = self._pieces.token_to_id.get("<unk>")
        ids = []
        for byte, char in byte_level.bytes_to_unicode().items():
            if char not in self._pieces.token_to_id and unk is None:
                raise ValueError(f"{source} lacks the symbol {char!r} of byte 0x{byte:02x}, and has no <unk>")
            ids.append(self._pieces.token_to_id.get(char, unk))
        return np.asarray(ids, np.int32)

    def _merge_table(self, pairs, source):
        """Sorted int64 keys `left * vocab_size + right`, with each merge's rank and merged id (int32)."""
        size, ids = len(self._pieces.tokens), self._pieces.token_to_id
        table = {}
        for rank, (left, right) in enumerate(pairs):
            for token in (left, right, left + right):
                if token not in ids:
                    raise ValueError(f"{source}: merge {rank + 1} ({left} {right}) uses {token!r}, which is not "
                                     "in the vocab")
            # A repeated pair: the last wins, as in tokenizers.
            table[ids[left] * size + ids[right]] = (rank, ids[left + right])
        keys = np.asarray(sorted(table), np.int64)
        values = np.asarray([table[k] for k in keys], np.int32).reshape(-1, 2)
        if not len(keys):  # a lookup needs one entry: a key no pair has
            return np.asarray([-1], np.int64), np.asarray([_NO_MERGE], np.int32), np.zeros([1], np.int32)
        return keys, values[:, 0], values[:, 1]

    @property
    def vocab_size(self):
        return len(self._pieces.tokens)

    def get_vocab(self):
        """Returns the tokens, a list of str whose index is the id (None where the vocab has no such id)."""
        return list(self._pieces.tokens)

    def get_special_tokens_dict(self):
        """Returns the ids the packer and the pre-training masker need.

        Returns:
            dict with `vocab_size`, `start_of_sequence_id` (<s>), `end_of_segment_id` (</s>), `padding_id` (<pad>),
            and `unk_id` (<unk>), `mask_id` (<mask>) where the vocab has them.
        """
        ids = self._pieces.token_to_id
        special = {"vocab_size": self.vocab_size, "start_of_sequence_id": ids["<s>"],
                   "end_of_segment_id": ids["</s>"], "padding_id": ids["<pad>"]}
        for key, token in (("unk_id", "<unk>"), ("mask_id", "<mask>")):
            if token in ids:
                special[key] = ids[token]
        return special

    def call(self, inputs, with_offsets=False):
        """Tokenizes a batch of strings.

        Args:
            inputs: string Tensor, shape [batch] (a scalar is treated as a batch of one).
            with_offsets: also return each piece's byte offsets `[start, end)` in its input string: the whole
                characters its bytes come from (the pieces of one character's bytes share its span), without
                leading and trailing spaces (a piece of spaces only gets an empty span at its end), as
                `RobertaTokenizerFast`'s offsets (which count characters: `ragged_ops.characters_before`
                converts).

        Returns:
            int32 RaggedTensor ids [batch, (pieces)]; with `with_offsets`, the tuple `(ids, starts, ends)` where
            starts/ends are int64 RaggedTensors of the same shape.
        """
        text = tf.convert_to_tensor(inputs, dtype=tf.string)
        if text.shape.rank == 0:
            text = tf.reshape(text, [1])
        chars, char_offsets = tf.strings.unicode_decode_with_offsets(text, "UTF-8", errors="replace")
        text_bytes = tf.cast(tf.strings.length(text), tf.int64)  # (batch,)
        byte_splits = tf.concat([tf.zeros([1], tf.int64), tf.cumsum(text_bytes)], axis=0)  # (batch + 1,)
        word_starts = self._word_starts(chars.flat_values, chars.row_splits)  # (chars,) bool
        char_rows = row_ids(chars.row_splits, tf.shape(chars.flat_values, out_type=tf.int64)[0])  # (chars,)
        flat_char_starts = tf.gather(byte_splits, char_rows) + char_offsets.flat_values  # (chars,) in all bytes
        word_byte_starts = tf.boolean_mask(flat_char_starts, word_starts)  # (words,) sorted
        word_rows = tf.boolean_mask(char_rows, word_starts)  # (words,)

        all_bytes = self._flat_bytes(text, byte_splits[-1])  # (bytes,) int32 in [0, 256)
        num_bytes = tf.shape(all_bytes, out_type=tf.int64)[0]
        starts_word = tf.scatter_nd(word_byte_starts[:, None], tf.ones_like(word_byte_starts), [num_bytes])
        byte_words = tf.cumsum(starts_word) - 1  # (bytes,) the word of each byte
        num_words = tf.shape(word_byte_starts, out_type=tf.int64)[0]
        symbols = tf.gather(self._byte_ids, all_bytes)  # (bytes,) one symbol per byte
        symbols, lengths, words = self._merge(symbols, tf.ones_like(byte_words), byte_words, num_words)

        piece_rows = tf.gather(word_rows, words)  # (pieces,)
        counts = tf.math.unsorted_segment_sum(tf.ones_like(piece_rows), piece_rows, tf.shape(text)[0])  # (batch,)
        row_splits = tf.concat([tf.zeros([1], tf.int64), tf.cumsum(counts)], axis=0)
        ids = tf.RaggedTensor.from_row_splits(symbols, row_splits, validate=False)
        if not with_offsets:
            return ids
        ends = tf.cumsum(lengths)  # (pieces,) in all bytes
        starts = ends - lengths
        starts, ends = self._trim_spaces(all_bytes, starts, ends)
        starts, ends = _whole_characters(starts, ends, flat_char_starts, byte_splits[-1])
        row_start = tf.gather(byte_splits, piece_rows)
        return (ids, tf.RaggedTensor.from_row_splits(starts - row_start, row_splits, validate=False),
                tf.RaggedTensor.from_row_splits(ends - row_start, row_splits, validate=False))

    def _word_starts(self, code_points, row_splits):
        """Where each piece of GPT-2's pre-tokenization starts: bool (chars,) over the flat code points.

        The regex `'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+`, scanned
        left to right, cuts the text into runs of one class (letters, numbers, others), except that a space
        right before a non-space joins the run after it, a run of whitespace before a non-space loses its last
        character to the next piece (joined, if a space; else a piece of its own), and an apostrophe that starts
        a piece takes one of the contractions' letters with it.
        """
        n = tf.shape(code_points, out_type=tf.int64)[0]
        index = tf.range(n)
        rows = row_ids(row_splits, n)
        row_first = tf.gather(row_splits, rows)  # (chars,)
        row_end = tf.gather(row_splits, rows + 1)
        classes = tf.gather(self._classes, tf.searchsorted(
            self._class_starts, code_points, side="right") - 1)  # (chars,)

        def shifted(values, by, missing):  # values[i - by] within the row, else `missing`
            inside = tf.logical_and(index - by >= row_first, index - by < row_end)
            return tf.where(inside, tf.gather(values, tf.clip_by_value(index - by, 0, tf.maximum(n - 1, 0))),
                            missing)

        prev_class, next_class = shifted(classes, 1, -1), shifted(classes, -1, -1)
        is_white = tf.equal(classes, byte_level.WHITESPACE)
        next_is_text = tf.logical_and(next_class >= 0, tf.not_equal(next_class, byte_level.WHITESPACE))
        prefix_space = tf.logical_and(tf.equal(code_points, ord(" ")), next_is_text)  # joins the next piece
        after_prefix = shifted(prefix_space, 1, False)
        white_start = tf.logical_or(tf.not_equal(prev_class, byte_level.WHITESPACE), next_is_text)
        text_start = tf.logical_and(tf.logical_not(after_prefix), tf.not_equal(prev_class, classes))
        starts = tf.where(is_white, white_start, text_start)

        next1, next2 = shifted(code_points, -1, -1), shifted(code_points, -2, -1)
        can_contract = tf.logical_and(tf.equal(code_points, ord("'")), tf.logical_and(
            tf.not_equal(prev_class, byte_level.OTHER), tf.logical_not(after_prefix)))

        def is_(chars, letter):
            return tf.equal(chars, ord(letter))

        two = tf.reduce_any(tf.stack([is_(next1, c) for c in "stmd"]), axis=0)
        three = tf.reduce_any(tf.stack([tf.logical_and(is_(next1, a), is_(next2, b)) for a, b in ("re", "ve", "ll")]),
                              axis=0)
        length = tf.where(can_contract, tf.where(two, 2, tf.where(three, 3, 0)), 0)  # (chars,) contraction length
        inside = tf.logical_or(shifted(length, 1, 0) >= 2, tf.equal(shifted(length, 2, 0), 3))
        after = tf.logical_or(tf.equal(shifted(length, 2, 0), 2), tf.equal(shifted(length, 3, 0), 3))
        return tf.logical_and(tf.logical_not(inside), tf.logical_or(starts, after))

    def _flat_bytes(self, text, total):
        """The bytes of all texts, concatenated: int32 (total,)."""
        pieces = tf.strings.bytes_split(text).flat_values  # (total,) one-byte strings
        return tf.reshape(tf.cast(tf.io.decode_raw(pieces, tf.uint8), tf.int32), [total])

    def _merge(self, symbols, lengths, words, num_words):
        """Applies the merges to every word at once: each step merges, in every word, every occurrence of its
        lowest-ranked pair (non-overlapping, left to right: "x x x" -> "xx x"), until no word has a pair in the
        table.

        Args:
            symbols: int32 (n,) symbol ids, word after word.
            lengths: int64 (n,) bytes each symbol covers.
            words: int64 (n,) the word of each symbol (sorted).
            num_words: int64 scalar.
        Returns: `(symbols, lengths, words)` of the merged pieces.
        """
        keys, ranks, merged = (self._merge_keys, self._merge_ranks,
                               self._merge_ids)
        size = tf.constant(self.vocab_size, tf.int64)
        last_key = tf.shape(keys, out_type=tf.int64)[0] - 1

        def step(symbols, lengths, words, _):
            pairs = tf.maximum(tf.shape(symbols, out_type=tf.int64)[0] - 1, 0)
            left_words = words[:pairs]
            key = tf.cast(symbols[:pairs], tf.int64) * size + tf.cast(symbols[1:], tf.int64)  # (pairs,)
            at = tf.minimum(tf.searchsorted(keys, key, side="left", out_type=tf.int64), last_key)
            found = tf.logical_and(tf.equal(tf.gather(keys, at), key), tf.equal(left_words, words[1:]))
            rank = tf.where(found, tf.gather(ranks, at), _NO_MERGE)  # (pairs,)
            best = tf.gather(tf.math.unsorted_segment_min(rank, left_words, num_words), left_words)
            candidate = tf.logical_and(found, tf.equal(rank, best))  # (pairs,) every occurrence of the best pair
            # Adjacent candidates (a repeated symbol: x x x) overlap: of each run of them, every other one from the
            # run's first. A run lies in one word (both pairs found).
            position = tf.range(pairs)
            run_start = tf.logical_and(candidate, tf.logical_not(tf.concat([[False], candidate[:-1]], axis=0)))
            run_first = tf.concat([[0], tf.boolean_mask(position, run_start)], axis=0)  # (1 + runs,)
            run = tf.cumsum(tf.cast(run_start, tf.int64))  # (pairs,) the run a candidate is in, from 1
            chosen = tf.logical_and(candidate, tf.equal((position - tf.gather(run_first, run)) % 2, 0))  # (pairs,)
            merges_here = tf.concat([chosen, [False]], axis=0)  # (n,) merges with the next symbol
            merged_away = tf.concat([[False], chosen], axis=0)  # (n,) merged into the previous symbol
            symbols = tf.where(merges_here, tf.concat([tf.gather(merged, at), [0]], axis=0), symbols)
            lengths = tf.where(merges_here, lengths + tf.concat([lengths[1:], [0]], axis=0), lengths)
            keep = tf.logical_not(merged_away)
            return (tf.boolean_mask(symbols, keep), tf.boolean_mask(lengths, keep), tf.boolean_mask(words, keep),
                    tf.reduce_any(chosen))

        has_pairs = tf.shape(symbols)[0] > 1  # a batch with no word (or one byte) has nothing to merge
        symbols, lengths, words, _ = tf.while_loop(
            lambda *state: state[-1], step, (symbols, lengths, words, has_pairs),
            shape_invariants=(tf.TensorShape([None]),) * 3 + (tf.TensorShape([]),))
        return symbols, lengths, words

    def _trim_spaces(self, all_bytes, starts, ends):
        """Moves each piece's start past its leading spaces and its end before its trailing ones (`tokenizers`'
        `trim_offsets`): int64 (pieces,) offsets into all bytes."""
        not_space = tf.reshape(tf.where(tf.not_equal(all_bytes, ord(" "))), [-1])  # (m,) sorted positions
        total = tf.shape(all_bytes, out_type=tf.int64)[0]
        following = tf.concat([not_space, [total]], axis=0)
        first_text = tf.gather(following, tf.searchsorted(not_space, starts, side="left"))  # first non-space >= start
        preceding = tf.concat([[-1], not_space], axis=0)
        last_text = tf.gather(preceding, tf.searchsorted(not_space, ends - 1, side="right"))  # last non-space < end
        trimmed_starts = tf.minimum(first_text, ends)
        trimmed_ends = tf.maximum(tf.minimum(last_text + 1, ends), trimmed_starts)
        return trimmed_starts, trimmed_ends

    def get_config(self):
        config = super().get_config()
        config.update({"vocab_file": self.vocab_file, "merges_file": self.merges_file, "vocab": self.vocab,
                       "merges": self.merges})
        return config


def _whole_characters(starts, ends, char_starts, total):
    """Widens byte spans to whole characters: a start inside a character moves to its first byte, an end inside
    one to past its last byte; empty spans stay. All int64 offsets into all bytes; `char_starts` (chars,) sorted.
    """
    containing = tf.searchsorted(char_starts, starts, side="right", out_type=tf.int64) - 1
    widened_starts = tf.gather(char_starts, tf.maximum(containing, 0))
    following = tf.concat([char_starts, [total]], axis=0)
    widened_ends = tf.gather(following, tf.searchsorted(char_starts, ends - 1, side="right", out_type=tf.int64))
    empty = tf.equal(starts, ends)
    return tf.where(empty, starts, widened_starts), tf.where(empty, ends, widened_ends)
