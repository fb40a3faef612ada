"""Finds the WordPiece vocabulary and casing that belong to a checkpoint directory (`find_vocab`), and writes one
(`write_vocab_file`); both live in `official_bert.text.vocab_files`, so that the text preprocessors use them too."""

from official_bert.text.vocab_files import find_vocab, write_vocab_file

__all__ = ["find_vocab", "write_vocab_file"]
