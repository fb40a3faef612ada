"""Word-level tagging examples as packed BERT windows, and window predictions back to word tags.

The design, in three exact steps:

1. Tokenize (`word_pieces`): every distinct word goes once through the in-graph tokenizer (batched in
   tf.data), so each word becomes its list of ids, exactly the pieces Hugging Face gives it with
   `is_split_into_words=True`: WordPiece's or SentencePiece's pieces, or for RoBERTa's byte-level BPE
   (`layout="roberta"`) the pieces of the word after a space, as `RobertaTokenizerFast(add_prefix_space=True)`
   ("EU" -> "ĠEU"). A word with no pieces (only characters the tokenizer drops) gets the unknown token, so every
   word keeps a position and a prediction.
2. Window (`build_windows`, NumPy): a sentence is cut into windows of whole words, greedily, each holding at
   most `seq_length - 2` pieces, packed as `[CLS] pieces [SEP] [PAD]...` (RoBERTa: `<s> pieces </s> <pad>...`,
   the same places; the ids come from the tokenizer's special-token dict). No word is lost or split across
   windows; a single word of more pieces than a window holds keeps its first ones. The first piece of each
   word carries the word's label; other pieces, [CLS], [SEP] and padding carry `IGNORE_LABEL` (-100), which
   the loss skips.
3. Reassemble (`word_predictions`): the argmax at each word's first piece, put back per sentence in order.

Raw text (the entity tagger and its export) is tokenized whole and its pieces grouped into words by
`text_words`: a WordPiece word is a piece and its `##` suffixes; a RoBERTa word starts at a piece that begins
with a space or follows whitespace, as Hugging Face's token-classification pipeline groups byte-level pieces; an
ALBERT word starts at a piece that begins with "▁" or is a user-defined symbol (`starts_word`).

Examples:

>>> pieces = word_pieces(tokenizer, [["EU", "rejects", "German", "call"]])
>>> windows = build_windows(pieces, seq_length=128, special_ids=tokenizer.get_special_tokens_dict(),
...                         labels=[[3, 0, 2, 0]])
>>> logits = model.predict(tagging_dataset(windows, batch_size=64, is_training=False))
>>> word_predictions(windows, logits)  # [array([3, 0, 2, 0])] once trained
"""

import dataclasses
from typing import List, Optional, Sequence

import numpy as np
import tensorflow as tf

from official_bert.data.epochs import repeat_shuffled
from official_bert.data.padding import XLA_LENGTH_MULTIPLE, trim_batch_padding
from official_bert.labels import IGNORE_LABEL


@dataclasses.dataclass
class TaggingWindows:
    """Packed windows of word-tagged sentences.

    Args:
        inputs: the encoder's dict of (windows, seq_length) int32 arrays.
        labels: (windows, seq_length) int32 label ids, `IGNORE_LABEL` off first pieces; None without labels.
        word_index: (windows, seq_length) int32: at each word's first piece, the word's index in its
            sentence; -1 elsewhere.
        sentence: (windows,) int32: the sentence each window comes from.
        num_words: (sentences,) int32: words per sentence.
    """

    inputs: dict
    labels: Optional[np.ndarray]
    word_index: np.ndarray
    sentence: np.ndarray
    num_words: np.ndarray

    def __len__(self) -> int:
        return len(self.sentence)


LAYOUTS = ("bert", "roberta")
SPACE_SYMBOL = "\u0120"  # "Ġ": the byte-level BPE's symbol of a space
WORD_START_SYMBOL = "\u2581"  # "▁": SentencePiece's mark of a word's first piece


def word_prefix(layout: str) -> str:
    """What a word is tokenized after: a space for RoBERTa's byte-level BPE (its words carry their leading space,
    "Ġ"), nothing for WordPiece."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout is {layout!r}; expected one of {', '.join(LAYOUTS)}")
    return " " if layout == "roberta" else ""


def starts_word(tokenizer, layout: str = "bert") -> np.ndarray:
    """Which pieces of running text may start a word: bool (vocab,), index = id.

    WordPiece: every piece but a `##` suffix. RoBERTa: a piece that begins with a space ("Ġ"); the text is
    tokenized after a space (`word_prefix`), so its first word has one too. ALBERT's SentencePiece: a piece that
    begins with "▁", or a user-defined symbol (ALBERT's `( ) " - .`, each a word of its own, as in CoNLL's words).
    As Hugging Face's token-classification pipeline groups pieces into words (a byte-level piece not after
    whitespace continues the word before it). `text_words` adds the rules on whitespace.

    Args:
        tokenizer: a `BertTokenizer`, `BytePairTokenizer` or `SentencepieceTokenizer`.
        layout: "bert" or "roberta".
    """
    from official_bert.text.sentencepiece_tokenizer import SentencepieceTokenizer

    tokens = tokenizer.get_vocab()
    if word_prefix(layout):
        return np.array([bool(t) and t.startswith(SPACE_SYMBOL) for t in tokens], bool)
    if isinstance(tokenizer, SentencepieceTokenizer):
        symbols = set(tokenizer.user_defined_symbols())
        return np.array([t.startswith(WORD_START_SYMBOL) or t in symbols for t in tokens], bool)
    from official_bert.text.vocab import is_suffix_piece

    return ~is_suffix_piece([t or "" for t in tokens])


def bare_space(tokens: Sequence[str], layout: str = "bert") -> np.ndarray:
    """Which pieces are a lone space ("Ġ", RoBERTa): bool (vocab,). Before a piece that is not whitespace and does
    not begin with a space, a lone space is the first piece of that piece's word (" Zw" -> "Ġ" "Zw" where the
    vocab has no "ĠZw"), which carries the word's label in training."""
    if word_prefix(layout):
        return np.array([t == SPACE_SYMBOL for t in tokens], bool)
    return np.zeros(len(tokens), bool)


def whitespace_pieces(tokens: Sequence[str], layout: str = "bert") -> np.ndarray:
    """Which pieces are whitespace only (RoBERTa's "Ġ", "ĠĠ", "Ċ", ...: bytes that decode to `str.isspace()`
    text): bool (vocab,). WordPiece has none."""
    if not word_prefix(layout):
        return np.zeros(len(tokens), bool)
    from official_bert.text.byte_level import bytes_to_unicode

    to_byte = {symbol: byte for byte, symbol in bytes_to_unicode().items()}

    def is_space(token):
        if not token or any(c not in to_byte for c in token):
            return False
        try:
            return bytes(to_byte[c] for c in token).decode("utf-8").isspace()
        except UnicodeDecodeError:
            return False

    return np.array([is_space(t) for t in tokens], bool)


def text_words(ids: Sequence[int], starts: Sequence[int], ends: Sequence[int], may_start: np.ndarray,
               lone_space: np.ndarray, space: np.ndarray) -> List[tuple]:
    """The words of one tokenized text: `[(first piece, end piece, start, end)]`, end piece exclusive.

    A piece of whitespace only (`whitespace_pieces`) starts no word and widens no span: it stays in the word
    before it, and the next piece starts a word; except a lone space before a piece that is neither whitespace
    nor begins with a space, which starts that piece's word. Otherwise a word starts where `may_start`
    (`starts_word`) says, and at the text's first piece.

    Args:
        ids, starts, ends: the text's piece ids and their offsets.
        may_start: `starts_word` of the vocab; lone_space: `bare_space`; space: `whitespace_pieces`.
    """
    n = len(ids)
    is_space = [bool(space[i]) for i in ids]
    for k in range(n - 1):
        if lone_space[ids[k]] and not is_space[k + 1] and not may_start[ids[k + 1]]:
            is_space[k] = False
    words, after_space = [], False
    for k in range(n):
        if is_space[k]:
            after_space = True
            continue
        if words and not after_space and not may_start[ids[k]]:
            words[-1][3] = ends[k]
        else:
            words.append([k, k + 1, starts[k], ends[k]])
        after_space = False
    for k, word in enumerate(words):  # a word's pieces run to the next word's first (its trailing whitespace too)
        word[1] = words[k + 1][0] if k + 1 < len(words) else n
    return [tuple(word) for word in words]


def word_pieces(tokenizer, sentences: Sequence[Sequence[str]], batch_size: int = 1024,
                layout: str = "bert") -> List[List[List[int]]]:
    """The piece ids of every word: `[sentence][word] -> [piece ids]` (never empty).

    Args:
        tokenizer: an `official_bert.text.BertTokenizer` or `SentencepieceTokenizer`, or a `BytePairTokenizer`
            with `layout="roberta"`.
        sentences: the words of each sentence.
        batch_size: words per tokenizer call.
        layout: "bert", or "roberta": each word is tokenized after a space (see `word_prefix`).
    """
    from official_bert.text.dataset import tokenize_corpus

    prefix = word_prefix(layout)
    vocabulary = sorted({word for words in sentences for word in words})
    unk = tokenizer.get_special_tokens_dict().get("unk_id")  # a word after a space always has byte-level pieces
    pieces = dict(zip(vocabulary, tokenize_corpus(tokenizer, [prefix + w for w in vocabulary], batch_size))) \
        if vocabulary else {}
    return [[pieces[word] or [unk] for word in words] for words in sentences]


def build_windows(pieces: Sequence[Sequence[Sequence[int]]], seq_length: int, special_ids: dict,
                  labels: Optional[Sequence[Sequence[int]]] = None) -> TaggingWindows:
    """Packs sentences of word pieces into windows of whole words (see the module notes).

    Args:
        pieces: `[sentence][word] -> [piece ids]`, from `word_pieces`.
        seq_length: packed length, [CLS] and [SEP] (<s> and </s>) included (at least 3).
        special_ids: the tokenizer's `get_special_tokens_dict()` ([CLS]/<s>, [SEP]/</s>, padding).
        labels: `[sentence][word] -> label id`, or None.
    Returns: `TaggingWindows`; a sentence without words has no window.
    """
    budget = seq_length - 2
    if budget < 1:
        raise ValueError(f"seq_length={seq_length} leaves no room for a word piece")
    cls_id, sep_id, pad_id = (special_ids[k] for k in ("start_of_sequence_id", "end_of_segment_id", "padding_id"))
    spans = []  # (sentence, first word, end word) of every window
    for s, words in enumerate(pieces):
        start, used = 0, 0
        for w, word in enumerate(words):
            size = min(len(word), budget)
            if used + size > budget:
                spans.append((s, start, w))
                start, used = w, 0
            used += size
        if words:
            spans.append((s, start, len(words)))

    shape = (len(spans), seq_length)
    word_ids = np.full(shape, pad_id, np.int32)
    mask = np.zeros(shape, np.int32)
    word_index = np.full(shape, -1, np.int32)
    label_ids = None if labels is None else np.full(shape, IGNORE_LABEL, np.int32)
    for row, (s, first, end) in enumerate(spans):
        position = 1
        word_ids[row, 0] = cls_id
        for w in range(first, end):
            word = pieces[s][w][:budget]
            word_ids[row, position:position + len(word)] = word
            word_index[row, position] = w
            if label_ids is not None:
                label_ids[row, position] = labels[s][w]
            position += len(word)
        word_ids[row, position] = sep_id
        mask[row, :position + 1] = 1
    inputs = {"input_word_ids": word_ids, "input_mask": mask, "input_type_ids": np.zeros(shape, np.int32)}
    return TaggingWindows(inputs=inputs, labels=label_ids, word_index=word_index,
                          sentence=np.array([s for s, _, _ in spans], np.int32).reshape(-1),
                          num_words=np.array([len(words) for words in pieces], np.int32).reshape(-1))


def tagging_dataset(windows: TaggingWindows, batch_size: int, is_training: bool, seed: int = 0,
                    length_multiple: int = XLA_LENGTH_MULTIPLE) -> tf.data.Dataset:
    """Batches of `(inputs, labels)` (or `inputs` alone without labels or when not training).

    Args:
        windows: from `build_windows`.
        batch_size: batch size.
        is_training: shuffle with `seed` (a fresh order every epoch, the same orders on every run), repeat
            forever, drop the last partial batch, and cut each batch to its longest window rounded up to
            `length_multiple` pieces (`padding.trim_batch_padding`; the loss does not change, the step gets
            cheaper).
        seed: shuffle seed.
        length_multiple: see `is_training` (`padding.training_length_multiple`).
    """
    features = dict(windows.inputs)
    if is_training:
        if windows.labels is None:
            raise ValueError("training needs labeled windows")
        dataset = repeat_shuffled((features, windows.labels), seed)
        return trim_batch_padding(dataset.batch(batch_size, drop_remainder=True), length_multiple,
                                  sequence_labels=True).prefetch(tf.data.AUTOTUNE)
    dataset = tf.data.Dataset.from_tensor_slices(features)
    return dataset.batch(batch_size).prefetch(tf.data.AUTOTUNE)


def word_predictions(windows: TaggingWindows, logits: np.ndarray) -> List[np.ndarray]:
    """The predicted label id of every word, per sentence, from the windows' logits.

    Args:
        windows: from `build_windows`.
        logits: (windows, seq_length, num_labels), in the windows' order.
    Returns: one int array of `num_words[s]` label ids per sentence.
    """
    if len(logits) != len(windows):
        raise ValueError(f"{len(logits)} rows of logits for {len(windows)} windows")
    best = np.argmax(logits, axis=-1)  # (windows, seq_length)
    predictions = [np.full(n, -1, np.int64) for n in windows.num_words]
    rows, positions = np.nonzero(windows.word_index >= 0)
    for row, position in zip(rows, positions):
        predictions[windows.sentence[row]][windows.word_index[row, position]] = best[row, position]
    return predictions
