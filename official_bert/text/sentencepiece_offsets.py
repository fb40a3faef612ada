"""Byte offsets of SentencePiece pieces in their input text, equal to `AlbertTokenizerFast`'s offsets.

tensorflow-text's `FastSentencepieceTokenize` returns ids only. The offsets are recomputed from what the
kernel does, with core ops (stock TF Serving has them all):

1. Normalize the input as the compiled charsmap does (`SentencepieceModel.kernel_model`): each code point
   becomes its replacement (often itself, sometimes none or several characters), "``" and "''" become '"'.
   Each normalized character remembers the input character it came from (for '"', the second of the pair,
   as `tokenizers`' Replace aligns it).
2. Spaces separate words and belong to no piece. Every other normalized character is one "element", except
   that a run of unknown characters (those no one-character piece covers) inside a word is one element: the
   kernel emits one `<unk>` for such a run.
3. Pieces use up elements in order: an `<unk>` one, any other piece as many as its characters other than "▁".
   A piece spans from its first element's first input byte to its last element's last input byte; a "▁"
   alone spans the first input character of the word it starts, as `tokenizers`' Metaspace aligns it.
"""

import numpy as np
import tensorflow as tf

from official_bert.text.eager_constants import eager_constant
from official_bert.text.ragged_ops import row_ids
from official_bert.text.sentencepiece_model import NORMAL, USER_DEFINED

_SPACE = ord(" ")
_QUOTE = ord('"')
_PAIR_RULES = {"``": '"', "''": '"'}


class SentencepieceOffsets:
    """The tables that map a kernel's pieces back to input bytes.

    Args:
        kernel_model: `sentencepiece_model.KernelModel`, what the kernel runs.
        unk_id: the id of the unknown piece.
        source: the model's file, for error messages.

    Raises:
        ValueError: the charsmap has a rule on several code points other than "``" and "''" (user-defined
            symbols of several characters), which these offsets do not follow.
    """

    def __init__(self, kernel_model, unk_id, source):
        rules = dict(kernel_model.rules)
        for pair, out in _PAIR_RULES.items():
            if rules.pop(pair, out) != out:
                raise ValueError(f"{source}: unexpected rule {pair!r} -> {rules[pair]!r}")
        longer = sorted(k for k in rules if len(k) != 1)
        if longer:
            raise ValueError(f"{source}: normalization rules on several characters ({longer[:3]}) have no offsets "
                             "here (user-defined symbols of more than one character)")
        keys = sorted(ord(k) for k in rules)
        outputs = [[ord(c) for c in rules[chr(k)]] for k in keys]
        self._keys = eager_constant(np.asarray(keys or [-1], np.int32))  # (rules,) sorted code points
        self._out_splits = eager_constant(
            np.cumsum([0] + [len(o) for o in outputs] + ([0] if not keys else []), dtype=np.int32))
        flat = [code for output in outputs for code in output]  # (sum(outputs, []) is quadratic: 1.5 s on ALBERT's)
        self._out_values = eager_constant(np.asarray(flat or [0], np.int32))  # (characters,)
        single = sorted({ord(p) for p, t in zip(kernel_model.pieces, kernel_model.types)
                         if len(p) == 1 and t in (NORMAL, USER_DEFINED)})  # one-character pieces the kernel matches
        self._single_piece_chars = eager_constant(np.asarray(single or [-1], np.int32))
        counts = [len(p.replace("\u2581", "")) for p in kernel_model.pieces]
        counts[unk_id] = 1
        self._elements_per_piece = eager_constant(np.asarray(counts, np.int64))  # (kernel pieces,)

    def __call__(self, text, kernel_ids, row_splits, piece_rows):
        """Byte offsets of the kernel's pieces.

        Args:
            text: string [batch], what the kernel tokenized.
            kernel_ids: int32 [pieces], the kernel's ids (before the id map).
            row_splits: int64 [batch + 1], the kernel's row splits.
            piece_rows: int64 [pieces], the row of each piece (`ragged_ops.row_ids` of `row_splits`).

        Returns:
            `(starts, ends)`: int64 [pieces], byte offsets `[start, end)` into each piece's own row of `text`.
        """
        chars, char_starts = tf.strings.unicode_decode_with_offsets(text, "UTF-8", errors="replace")
        code_points = tf.cast(chars.flat_values, tf.int32)  # (chars,)
        num_chars = tf.shape(code_points, out_type=tf.int64)[0]
        char_rows = row_ids(chars.row_splits, num_chars)  # (chars,)
        char_starts = char_starts.flat_values  # (chars,) in its row
        row_bytes = tf.cast(tf.strings.length(text), tf.int64)  # (batch,)
        is_last = tf.not_equal(char_rows, tf.concat([char_rows[1:], [-1]], axis=0))  # last character of its row
        char_ends = tf.where(is_last, tf.gather(row_bytes, char_rows),
                             tf.concat([char_starts[1:], tf.zeros([1], tf.int64)], axis=0)[:num_chars])

        pair_first, pair_second = self._pairs(code_points, char_rows)
        # 1. Normalized characters: (normalized,) code point and the input character it came from.
        index = tf.minimum(tf.searchsorted(self._keys, code_points), len(self._keys) - 1)
        hit = tf.equal(tf.gather(self._keys, index), code_points)
        rule_start = tf.gather(self._out_splits, index)
        lengths = tf.where(hit, tf.gather(self._out_splits, index + 1) - rule_start, 1)
        lengths = tf.where(pair_first, 1, tf.where(pair_second, 0, lengths))  # (chars,)
        origin = tf.repeat(tf.range(num_chars), tf.cast(lengths, tf.int64))  # (normalized,)
        first_of_origin = tf.cumsum(lengths, exclusive=True)
        within = tf.range(tf.shape(origin)[0]) - tf.gather(first_of_origin, origin)
        from_rule = tf.gather(self._out_values, tf.gather(rule_start, origin) + within)
        normalized = tf.where(tf.gather(hit, origin), from_rule, tf.gather(code_points, origin))
        is_pair = tf.gather(pair_first, origin)
        normalized = tf.where(is_pair, _QUOTE, normalized)
        origin = tf.where(is_pair, origin + 1, origin)  # '"' is aligned with the pair's second character
        rows = tf.gather(char_rows, origin)

        # 2. Elements: the non-space characters, a run of unknown ones in a word taken as one.
        is_space = tf.equal(normalized, _SPACE)
        found = tf.minimum(tf.searchsorted(self._single_piece_chars, normalized), len(self._single_piece_chars) - 1)
        unknown = tf.logical_and(tf.not_equal(tf.gather(self._single_piece_chars, found), normalized),
                                 tf.logical_not(is_space))
        continues = tf.logical_and(unknown, tf.concat([[False], tf.logical_and(
            unknown[:-1], tf.equal(rows[1:], rows[:-1]))], axis=0))
        starts_element = tf.logical_and(tf.logical_not(is_space), tf.logical_not(continues))  # (normalized,)
        first_chars = tf.reshape(tf.where(starts_element), [-1])  # (elements,)
        element_of = tf.cumsum(tf.cast(starts_element, tf.int64)) - 1  # (normalized,)
        num_elements = tf.shape(first_chars, out_type=tf.int64)[0]
        last_origin = tf.math.unsorted_segment_max(
            tf.where(is_space, tf.constant(-1, tf.int64), origin), tf.maximum(element_of, 0), num_elements)
        first_origin = tf.gather(origin, first_chars)
        element_starts = tf.gather(char_starts, first_origin)  # (elements,)
        element_ends = tf.gather(char_ends, last_origin)
        first_char_ends = tf.gather(char_ends, first_origin)

        # 3. Pieces take elements in order, row by row.
        counts = tf.gather(self._elements_per_piece, kernel_ids)  # (pieces,)
        element_rows = tf.gather(rows, first_chars)
        batch_rows = tf.range(tf.shape(text, out_type=tf.int64)[0])
        row_first_element = tf.searchsorted(element_rows, batch_rows, out_type=tf.int64)  # (batch,)
        before = tf.cumsum(counts, exclusive=True)
        before_row = tf.gather(before, tf.gather(row_splits, piece_rows))  # elements of earlier rows' pieces
        first = tf.gather(row_first_element, piece_rows) + before - before_row
        last = first + tf.maximum(counts, 1) - 1
        limit = tf.maximum(num_elements - 1, 0)
        first, last = tf.minimum(first, limit), tf.minimum(last, limit)  # (pieces,)
        if_empty = tf.zeros([1], tf.int64)
        starts = tf.gather(tf.concat([element_starts, if_empty], 0), first)
        ends = tf.where(counts > 0, tf.gather(tf.concat([element_ends, if_empty], 0), last),
                        tf.gather(tf.concat([first_char_ends, if_empty], 0), first))
        return starts, ends

    @staticmethod
    def _pairs(code_points, rows):
        """Where "``" or "''" is matched, left to right: bool (chars,) for the first and the second of a pair."""
        first = tf.zeros_like(code_points, tf.bool)
        second = tf.zeros_like(code_points, tf.bool)
        index = tf.range(tf.shape(code_points, out_type=tf.int64)[0])  # (chars,)
        same_row_as_next = tf.concat([tf.equal(rows[1:], rows[:-1]), [False]], axis=0)
        for quote in (ord("`"), ord("'")):
            is_quote = tf.equal(code_points, quote)
            next_is_quote = tf.logical_and(same_row_as_next, tf.concat([is_quote[1:], [False]], axis=0))
            follows_quote = tf.concat([[False], tf.logical_and(is_quote[:-1], same_row_as_next[:-1])], axis=0)
            run_start = tf.logical_and(is_quote, tf.logical_not(follows_quote))
            run_starts = tf.reshape(tf.where(run_start), [-1])  # (runs,)
            run = tf.maximum(tf.cumsum(tf.cast(run_start, tf.int64)) - 1, 0)
            in_run = index - tf.gather(tf.concat([run_starts, [0]], 0), run)  # position in its run of quotes
            odd = tf.equal(in_run % 2, 1)
            first = tf.logical_or(first, tf.logical_and(tf.logical_and(is_quote, tf.logical_not(odd)), next_is_quote))
            second = tf.logical_or(second, tf.logical_and(is_quote, odd))
        return first, second
