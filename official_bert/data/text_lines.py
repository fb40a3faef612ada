"""Raw-text examples, one per line: `text` or `text_a ||| text_b` (the input of Google's `extract_features.py`).

The file is read lazily, a line at a time, so a consumer that works in batches holds one batch in memory.

Examples:

>>> list(read_text_lines("input.txt"))  # "Who was Jim Henson ? ||| Jim Henson was a puppeteer\\nHello."
[('Who was Jim Henson ?', 'Jim Henson was a puppeteer'), ('Hello.', None)]
"""

from typing import Iterator, Optional, Tuple

import tensorflow as tf

from official_bert.text_files import read_lines

SEPARATOR = "|||"


def parse_text_line(line: str, where: str) -> Tuple[str, Optional[str]]:
    """`(text, text_b or None)` of one line; `where` ("file:line") names it in errors.

    Raises:
        ValueError: an empty line, an empty side of `|||`, or more than one `|||`.
    """
    line = line.strip()
    if not line:
        raise ValueError(f"{where}: empty line (one text, or 'text_a ||| text_b', per line)")
    if SEPARATOR not in line:
        return line, None
    parts = [part.strip() for part in line.split(SEPARATOR)]
    if len(parts) != 2:
        raise ValueError(f"{where}: {len(parts) - 1} '{SEPARATOR}' separators; a line holds one text or one pair")
    if not parts[0] or not parts[1]:
        side = "first" if not parts[0] else "second"
        raise ValueError(f"{where}: the {side} text of the '{SEPARATOR}' pair is empty")
    return parts[0], parts[1]


def read_text_lines(path: str) -> Iterator[Tuple[str, Optional[str]]]:
    """Yields `(text, text_b or None)` per line of a UTF-8 file, lazily.

    Raises:
        FileNotFoundError: no such file.
        ValueError: a line that is not UTF-8 or malformed (see `parse_text_line`), or a file without any line; naming
            the file.
    """
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"no such input file: {path}")
    count = 0
    for lineno, line in read_lines(path):
        yield parse_text_line(line, f"{path}:{lineno}")
        count += 1
    if not count:
        raise ValueError(f"{path}: the input file is empty (one text, or 'text_a ||| text_b', per line)")
