"""Finds the WordPiece vocabulary and casing that belong to a checkpoint directory (`find_vocab`, which lives in
`official_bert.text.vocab_files` so that the text preprocessors find it too), and writes one."""

from typing import List

from official_bert.text.vocab_files import find_vocab

__all__ = ["find_vocab", "write_vocab_file"]


def write_vocab_file(tokens: List[str], path):
    """Writes `tokens` one per line."""
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(tokens) + "\n")
