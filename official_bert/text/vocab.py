"""The WordPiece vocabulary: reading `vocab.txt`, and which pieces continue a word (`##ing`)."""

from typing import List, Sequence

import numpy as np

SUFFIX_INDICATOR = "##"


def load_vocab(vocab_file) -> List[str]:
    """Reads a WordPiece vocab file: one token per line, the line number is the id.

    Args:
        vocab_file: path to the file (Google's / Hugging Face's `vocab.txt`; `gs://` paths too).

    Returns:
        The tokens, a list of str.

    Raises:
        FileNotFoundError: no such file.
        ValueError: a line that is not UTF-8 (file, line and column named).
    """
    import tensorflow as tf

    from official_bert.text_files import read_lines

    if not tf.io.gfile.exists(vocab_file):
        raise FileNotFoundError(f"BERT vocab file not found: {vocab_file}")
    return [line.rstrip("\r\n") for _, line in read_lines(vocab_file)]


class PieceTable:
    """A vocabulary's pieces by id and ids by piece, in one plain object for a tokenizer layer to hold.

    A Keras layer tracks each attribute that is a list, tuple or dict element by element (BERT's 30,522 pieces as a
    list and a dict: 61,000 calls, 0.5 s of a 0.7 s tokenizer build); it leaves other objects alone.

    Args:
        tokens: the pieces, index = id (None at an id no piece has).
        token_to_id: piece -> id; default: from `tokens`, the first id of a piece listed twice.
    """

    __slots__ = ("tokens", "token_to_id")

    def __init__(self, tokens, token_to_id=None):
        self.tokens = tuple(tokens)
        self.token_to_id = dict(token_to_id) if token_to_id is not None else {
            token: i for i, token in reversed(list(enumerate(self.tokens)))}


def is_suffix_piece(tokens: Sequence[str]) -> np.ndarray:
    """Which tokens continue a word: bool (vocab,), True on `##` pieces (the bare `##` itself starts one).

    Args:
        tokens: the vocabulary, index = id.
    """
    return np.array([t.startswith(SUFFIX_INDICATOR) and t != SUFFIX_INDICATOR for t in tokens], bool)


# ALBERT's whole-word rule for SentencePiece pieces (google-research/albert's create_pretraining_data): its
# punctuation (string.punctuation less the apostrophe, "<", "=" and ">") stands alone or continues a word.
_SENTENCEPIECE_PUNCTUATION = frozenset('!"#$%&()*+,-./:;?@[\\]^_`{|}~')
_SENTENCEPIECE_CONTINUING = frozenset("abcdefghijklmnopqrstuvwxyz") | _SENTENCEPIECE_PUNCTUATION


def is_sentencepiece_continuation(tokens: Sequence[str]) -> np.ndarray:
    """Which SentencePiece pieces continue a word, by ALBERT's pre-training-data rule: bool (vocab,).

    A piece starts a word when it begins with "▁" or "<", is one punctuation character, or holds any character
    other than Latin letters and that punctuation (digits, the apostrophe, other scripts: whole pieces of their
    own); every other piece continues the word before it.

    Args:
        tokens: the pieces, index = id.
    """
    def continues(piece):
        if not piece or piece[0] in "▁<" or piece in _SENTENCEPIECE_PUNCTUATION:
            return False
        return all(c.lower() in _SENTENCEPIECE_CONTINUING for c in piece)

    return np.array([continues(t) for t in tokens], bool)
