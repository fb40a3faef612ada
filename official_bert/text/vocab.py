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
    """
    import tensorflow as tf

    if not tf.io.gfile.exists(vocab_file):
        raise FileNotFoundError(f"BERT vocab file not found: {vocab_file}")
    with tf.io.gfile.GFile(vocab_file, "r") as f:
        return [line.rstrip("\r\n") for line in f]


def is_suffix_piece(tokens: Sequence[str]) -> np.ndarray:
    """Which tokens continue a word: bool (vocab,), True on `##` pieces (the bare `##` itself starts one).

    Args:
        tokens: the vocabulary, index = id.
    """
    return np.array([t.startswith(SUFFIX_INDICATOR) and t != SUFFIX_INDICATOR for t in tokens], bool)
