"""Reading a user's text file as UTF-8: a file that is not UTF-8 is one error naming the file, the line and the column.

Every reader of a user's file (GLUE TSV, CoNLL, SQuAD JSON, multiple-choice CSV and JSON lines, feature-extraction
input, pre-training corpora, TFLite representative texts, WordPiece vocabularies) reads through here, so a file saved
in another encoding (Latin-1, Windows-1252, UTF-16) gives

    data/train.jsonl:17: not UTF-8 text (byte 0xe9 at column 12); save the file as UTF-8

rather than "'utf-8' codec can't decode byte 0xe9 in position 11". Lines end at "\\n", "\\r\\n" or a lone "\\r" (old
Mac files), as Python's universal newlines and its `csv` module count them (each line keeps its ending, the caller's
to strip; line numbers in errors count the same way), and a leading UTF-8 byte-order mark is dropped. A local path
is read with `open`; a path with a scheme (`gs://...`) with `tf.io.gfile`, TensorFlow imported only then.

Examples:

>>> for lineno, line in read_lines("corpus.txt"):
...     print(lineno, line.rstrip("\\n"))
1 The cat sat.
>>> squad = json.loads(read_text("dev-v1.1.json"))  # the whole file, decoded once
>>> rows = [row for _, row in read_json_lines("train.jsonl", skip_blank=True)]  # a JSON value a line
"""

import codecs
import json
import os
import re
from typing import Iterator, Tuple

_UTF8_BOM = b"\xef\xbb\xbf"
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_CR = ord("\r")  # (`13 in line` is several times faster than `b"\r" in line`)
_AFTER_LONE_CR = re.compile(rb"(?<=\r)(?!\n)")  # where a line ending in a lone "\r" (old Mac files) ends
_LINE_END = re.compile(rb"\r\n?|\n")  # a line's end: "\n", "\r\n" or a lone "\r"


def is_remote(path) -> bool:
    """Whether `path` names a file system by a scheme (`gs://bucket/file`): read through `tf.io.gfile`."""
    return "://" in str(path)


def open_binary(path):
    """`path` opened for reading bytes (with `tf.io.gfile` when it is remote)."""
    if is_remote(path):
        import tensorflow as tf

        return tf.io.gfile.GFile(path, "rb")
    return open(path, "rb")


def path_exists(path) -> bool:
    """Whether `path` exists (asked through `tf.io.gfile` when it is remote)."""
    if is_remote(path):
        import tensorflow as tf

        return tf.io.gfile.exists(path)
    return os.path.exists(path)


def is_directory(path) -> bool:
    """Whether `path` is a directory (asked through `tf.io.gfile` when it is remote)."""
    if is_remote(path):
        import tensorflow as tf

        return tf.io.gfile.isdir(path)
    return os.path.isdir(path)


def not_utf8_error(path, lineno: int, line: bytes, offset: int) -> ValueError:
    """The error for a line that is not UTF-8 at byte `offset` of `line`.

    Args:
        path: the file, as the user named it.
        lineno: the 1-based line number.
        line: the line's bytes.
        offset: where the first byte that is not UTF-8 is, in `line`.
    """
    if lineno == 1 and line.startswith(_UTF16_BOMS):
        found = "a UTF-16 byte-order mark"
    else:
        column = len(line[:offset].decode("utf-8", errors="replace")) + 1  # in characters, as an editor counts
        found = f"byte 0x{line[offset]:02x} at column {column}"
    return ValueError(f"{path}:{lineno}: not UTF-8 text ({found}); save the file as UTF-8")


def decode_line(raw: bytes, path, lineno: int) -> str:
    """One line's bytes as text.

    Raises:
        ValueError: the line is not UTF-8 (`not_utf8_error`).
    """
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise not_utf8_error(path, lineno, raw, error.start) from None


def read_lines(path) -> Iterator[Tuple[int, str]]:
    """Yields `(1-based line number, line)` of a UTF-8 text file, lazily; each line keeps its end ("\\n", "\\r\\n"
    or a lone "\\r", as Python's universal newlines; the last line may have none).

    Raises:
        FileNotFoundError: no such file.
        ValueError: a line that is not UTF-8, naming the file, the line and the column.
    """
    lineno = 0
    with open_binary(path) as f:
        for raw in f:  # (ends at "\n" only)
            if _CR in raw and not (raw.count(_CR) == 1 and raw.endswith(b"\r\n")):  # a lone "\r" (old Mac files)
                lines = [line for line in _AFTER_LONE_CR.split(raw) if line]  # (only the last piece may be empty)
            else:  # the common cases, no "\r" or a "\r\n" end, not split (splitting every line read a 1M-line
                # corpus 40-100% slower than before lone "\r"s counted; this check, about 15%)
                lineno += 1
                if lineno == 1 and raw.startswith(_UTF8_BOM):
                    raw = raw[len(_UTF8_BOM):]
                yield lineno, decode_line(raw, path, lineno)
                continue
            for line in lines:
                lineno += 1
                if lineno == 1 and line.startswith(_UTF8_BOM):
                    line = line[len(_UTF8_BOM):]
                yield lineno, decode_line(line, path, lineno)


def read_text(path) -> str:
    """The whole text of a UTF-8 file (a JSON document), without a leading byte-order mark.

    Raises:
        FileNotFoundError: no such file.
        ValueError: the file is not UTF-8, naming the file, the line and the column.
    """
    with open_binary(path) as f:
        data = f.read()
    bom = len(_UTF8_BOM) if data.startswith(_UTF8_BOM) else 0
    try:
        return data[bom:].decode("utf-8")
    except UnicodeDecodeError as error:
        at = bom + error.start  # in `data`
        ends = [end.end() for end in _LINE_END.finditer(data, 0, at)]  # the ends before it, as `read_lines` counts
        start = max(ends[-1] if ends else 0, bom)  # the line's first byte
        end = _LINE_END.search(data, at)
        line = data[start:end.start() if end else len(data)]
        raise not_utf8_error(path, len(ends) + 1, line, at - start) from None


def read_json_lines(path, skip_blank=False, expected="one JSON value a line"):
    """Yields `(line number, value)` per line of a JSON-lines file, lazily.

    Args:
        path: the file.
        skip_blank: skip blank lines; False: a blank line is an error.
        expected: what a line holds, in words, for the errors.

    Raises:
        ValueError: a line that is blank (unless `skip_blank`), not UTF-8 or not JSON, naming the file, the line and
            (JSON) the column within the line.
    """
    for lineno, line in read_lines(path):
        if not line.strip():
            if skip_blank:
                continue
            raise ValueError(f"{path}:{lineno}: empty line; expected {expected}")
        try:
            value = json.loads(line.rstrip("\r\n"))  # without the line's end: an error's column is within the line
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}:{lineno}: not valid JSON ({error.msg} at column {error.colno}); expected "
                             f"{expected}") from None
        yield lineno, value


def holds_text(path, chunk_bytes=1 << 24) -> bool:
    """Reads the whole file, in large chunks (a corpus of gigabytes in seconds): whether it holds any text that is
    not whitespace.

    Raises:
        FileNotFoundError: no such file.
        ValueError: the file is not UTF-8, naming the file, the line and the column (`read_lines`' error).
    """
    decoder, found = codecs.getincrementaldecoder("utf-8")(), False
    try:
        with open_binary(path) as f:
            while chunk := f.read(chunk_bytes):
                text = decoder.decode(chunk)
                found = found or bool(text.replace("\ufeff", "").strip())  # (a byte-order mark is no text)
            decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        for _ in read_lines(path):  # finds the line and column
            pass
        raise  # (not reached: read_lines fails at the same byte)
    return found
