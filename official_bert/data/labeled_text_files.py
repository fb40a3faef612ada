"""A user's labelled texts: CSV, TSV or JSON lines, read by column name, and written back with added columns.

The format comes from the file name: `.csv` (a header row, then RFC 4180 rows: a field with a comma, quote or
line break is in double quotes), `.tsv` (a header row, then one row a line, split on tabs, no quoting), `.jsonl`
/ `.json` (one JSON object a line). Columns (fields) are found by name; by default the text is `text`, `sentence`
or `sentence1`, the optional second text `text_pair` or `sentence2`, the label `label`.

A label is kept as read (`LabeledTexts.labels`): a string (a JSON integer becomes its digits), a float (a JSON
number with a fraction or exponent), or with `multi_label` a list of strings (a JSON list, or a CSV/TSV cell split on
`;`). `official_bert.data.text_labels` turns them into classes or scores.

Blank lines (outside a CSV's quoted cell) are skipped: every example keeps its own line (`LabeledTexts.lines`) and is
written back as its own record. A reader whose output must match the file line for line (`export.predict`) passes
`skip_blank=False`, which makes a blank line an error naming it.

Every problem is a ValueError of one line naming the file, the line and the column, e.g.

    data/train.jsonl:17: not valid JSON (Expecting ',' delimiter at column 23)
    data/train.csv:1: no column 'review' (columns: text, verdict); name the text column with --text_column

Examples:

>>> examples = read_labeled_texts("reviews.csv", Columns(text="review", label="verdict"))
>>> examples.text_a[0], examples.labels[0], examples.lines[0]
('the film was lovely', 'good', 2)
"""

import csv
import dataclasses
import json
import math
import os
from typing import List, Optional

from official_bert.text_files import path_exists, read_json_lines, read_lines

FORMATS = {".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".json": "jsonl", ".ndjson": "jsonl"}
DEFAULT_TEXT_COLUMNS = ("text", "sentence", "sentence1")
DEFAULT_PAIR_COLUMNS = ("text_pair", "sentence2")
DEFAULT_LABEL_COLUMN = "label"
LABEL_SEPARATOR = ";"  # between the labels of one multi-label CSV/TSV cell
_FLAGS = {"text": "--text_column", "text_pair": "--text_pair_column", "label": "--label_column"}


@dataclasses.dataclass(frozen=True)
class Columns:
    """The column (JSON field) names; None: the defaults (`DEFAULT_TEXT_COLUMNS`, ...).

    Args:
        text: the text.
        text_pair: the second text of a pair task; None: `text_pair` or `sentence2` when the file has one.
        label: the label.
    """

    text: Optional[str] = None
    text_pair: Optional[str] = None
    label: Optional[str] = None

    def as_flags(self) -> str:
        """The columns given, as `tasks.run_classifier`'s flags: "--text_column=review --label_column=stars"."""
        return " ".join(f"{_FLAGS[field.name]}={getattr(self, field.name)}" for field in dataclasses.fields(self)
                        if getattr(self, field.name) is not None)


@dataclasses.dataclass
class LabeledTexts:
    """The examples of one file, in file order.

    Args:
        source: the file.
        file_format: "csv", "tsv" or "jsonl".
        text_a: each example's text.
        text_b: each example's second text, or None when the file has no second text column.
        labels: each example's label as read (str, float, or a list of str with `multi_label`), or None when not
            read (an unlabelled file).
        lines: each example's 1-based (first) line.
        records: each example as read, for writing it back: its list of fields (CSV/TSV), or its dict (JSON).
        header: the CSV/TSV header row (None for JSON lines).
        columns: the column names used: text, text pair (or None) and label (or None when not read).
    """

    source: str
    file_format: str
    text_a: List[str]
    text_b: Optional[List[str]]
    labels: Optional[list]
    lines: List[int]
    records: list
    header: Optional[List[str]]
    columns: Columns

    def __len__(self):
        return len(self.text_a)

    def where(self, index):
        """`file:line` of example `index`, for messages."""
        return f"{self.source}:{self.lines[index]}"


def file_format(path):
    """"csv", "tsv" or "jsonl", from the file name; a ValueError for another name."""
    extension = os.path.splitext(str(path))[1].lower()
    if extension not in FORMATS:
        raise ValueError(f"{path}: unknown format '{extension}'; name the file .csv, .tsv or .jsonl (JSON lines)")
    return FORMATS[extension]


def read_labeled_texts(path, columns=Columns(), labeled=True, multi_label=False, pair=None, skip_blank=True):
    """Reads a CSV, TSV or JSON-lines file of texts (and labels).

    Args:
        path: the file (its extension gives the format, `file_format`).
        columns: the `Columns` to read.
        labeled: read the label column (a file without it is an error); False: the label column is not read.
        multi_label: a label is a list (JSON) or a `;`-separated cell (CSV/TSV) of labels.
        pair: whether the examples are text pairs; None: when the file has the pair column.
        skip_blank: skip blank lines; False: a blank line is an error naming the file and the line.

    Returns:
        `LabeledTexts`.

    Raises:
        FileNotFoundError: no such file.
        ValueError: an unknown format, a missing column or field, a malformed row or line, or a value of the wrong
            type; one line naming the file, the line and the column.
    """
    fmt = file_format(path)
    if not path_exists(path):
        raise FileNotFoundError(f"no such file: {path}")
    rows = _json_rows(path, skip_blank) if fmt == "jsonl" else _table_rows(path, fmt, skip_blank)
    header = next(rows, None)
    if header is None:
        raise ValueError(f"{path}: the file is empty; expected {'a header row' if fmt != 'jsonl' else 'JSON objects'}")
    header_line, names = header
    resolved = _resolve(path, header_line, names, columns, labeled, pair)
    examples = LabeledTexts(source=str(path), file_format=fmt, text_a=[],
                            text_b=[] if resolved.text_pair else None, labels=[] if labeled else None, lines=[],
                            records=[], header=None if fmt == "jsonl" else list(names), columns=resolved)
    for lineno, record in rows:
        get = _getter(path, lineno, record, names)
        examples.text_a.append(_text(path, lineno, resolved.text, get(resolved.text)))
        if examples.text_b is not None:
            examples.text_b.append(_text(path, lineno, resolved.text_pair, get(resolved.text_pair)))
        if labeled:
            examples.labels.append(_label(path, lineno, resolved.label, get(resolved.label), fmt, multi_label))
        examples.lines.append(lineno)
        examples.records.append(record)
    return examples


class MissingColumnError(ValueError):
    """A column (JSON field) the reading needs is not in the file's header (first object)."""


def _resolve(path, lineno, names, columns, labeled, pair):
    """The `Columns` a file with column (first object's field) names `names` is read by."""
    def find(role, given, defaults, required):
        if given is not None:
            if given not in names:
                raise MissingColumnError(f"{path}:{lineno}: no {_word(path)} '{given}' ({_word(path)}s: "
                                         f"{', '.join(names)})")
            return given
        found = next((name for name in defaults if name in names), None)
        if found is None and required:
            raise MissingColumnError(f"{path}:{lineno}: no {_word(path)} {' or '.join(repr(d) for d in defaults)} "
                                     f"({_word(path)}s: {', '.join(names)}); name the {role} {_word(path)} with "
                                     f"{_FLAGS[role]}")
        return found

    text = find("text", columns.text, DEFAULT_TEXT_COLUMNS, True)
    text_pair = find("text_pair", columns.text_pair, DEFAULT_PAIR_COLUMNS, bool(pair)) if pair is not False else None
    label = find("label", columns.label, (DEFAULT_LABEL_COLUMN,), True) if labeled else None
    return Columns(text, text_pair, label)


def _word(path):
    return "field" if file_format(path) == "jsonl" else "column"


def _table_rows(path, fmt, skip_blank):
    """Yields the header `(line, names)`, then `(first line, fields)` per row, of a CSV or TSV file."""
    lines = (line for _, line in read_lines(path))
    dialect = {"delimiter": ","} if fmt == "csv" else {"delimiter": "\t", "quoting": csv.QUOTE_NONE}
    reader = csv.reader(lines, strict=True, **dialect)
    header = None
    while True:
        start = reader.line_num + 1
        try:
            fields = next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            raise ValueError(f"{path}:{start}: not valid {fmt.upper()} ({error})") from None
        if not fields:  # a blank line (one in a quoted cell is part of its field)
            if skip_blank:
                continue
            expected = "the header row" if header is None else f"a row of {len(header)} fields"
            raise ValueError(f"{path}:{start}: empty line; expected {expected}")
        if header is None:
            header = [name.strip() for name in fields]
            twice = next((name for i, name in enumerate(header) if name in header[:i]), None)
            if twice is not None:
                raise ValueError(f"{path}:{start}: the header names the column '{twice}' twice")
            yield start, header
        elif len(fields) != len(header):
            hint = "a field with a comma must be in double quotes" if fmt == "csv" else "no text may hold a tab"
            raise ValueError(f"{path}:{start}: {len(fields)} fields, but the header has {len(header)} ({hint})")
        else:
            yield start, fields


def _json_rows(path, skip_blank):
    """Yields `(its line, field names)` of the first object, then `(line, object)` per line, of JSON lines."""
    first = True
    for lineno, record in read_json_lines(path, skip_blank, "one JSON object a line"):
        if not isinstance(record, dict):
            raise ValueError(f"{path}:{lineno}: expected a JSON object ({{\"text\": ..., \"label\": ...}}), got "
                             f"{_kind(record)}")
        if first:
            first = False
            yield lineno, list(record)
        yield lineno, record


def _getter(path, lineno, record, names):
    """`get(column)`: the value of a row (a list of fields of the header `names`) or of a JSON object."""
    if isinstance(record, dict):
        def get(name):
            if name not in record:
                raise ValueError(f"{path}:{lineno}: no field '{name}' (fields: {', '.join(record)})")
            return record[name]
        return get
    return lambda name: record[names.index(name)]


def _kind(value):
    """What a JSON value is, in words."""
    names = {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list",
             dict: "an object", type(None): "null"}
    return names[type(value)]


def _text(path, lineno, column, value):
    if not isinstance(value, str):
        raise ValueError(f"{path}:{lineno}: field '{column}' is {_kind(value)} ({json.dumps(value)[:40]}); "
                         "expected a string")
    return value


def _label(path, lineno, column, value, fmt, multi_label):
    """One label as read: str, float, or (multi_label) a list of str."""
    where = f"{path}:{lineno}: {'field' if fmt == 'jsonl' else 'column'} '{column}'"
    if multi_label:
        if isinstance(value, str) and fmt != "jsonl":
            parts = [part.strip() for part in value.split(LABEL_SEPARATOR)]
            return list(dict.fromkeys(part for part in parts if part))  # none: the example has no label
        if not isinstance(value, list):
            raise ValueError(f"{where} is {_kind(value)}; expected a list of labels (multi-label)")
        return list(dict.fromkeys(_one_label(where, item) for item in value))
    if isinstance(value, list):
        raise ValueError(f"{where} is a list; one label an example expected (several: pass --multi_label)")
    return _one_label(where, value)


def _one_label(where, value):
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError(f"{where} is {_kind(value)}; expected a label (a string or a number)")
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{where} is {value}; expected a finite number")
        return value
    label = str(value).strip()
    if not label:
        raise ValueError(f"{where} is empty; every example needs a label")
    return label


def write_with_columns(examples, path, added):
    """Writes `examples` back to `path` in their own format, each record with the `added` columns after its own.

    Args:
        examples: `LabeledTexts`.
        path: the file to write.
        added: column name -> one value per example: str, float (CSV/TSV: 6 decimals), a list of str (CSV/TSV:
            `;`-joined) or a dict (JSON only).

    Raises:
        ValueError: an added column the file already has (`check_new_columns`; nothing is written).
    """
    check_new_columns(examples, added)
    if examples.file_format == "jsonl":
        with open(path, "w", encoding="utf-8") as f:
            for i, record in enumerate(examples.records):
                f.write(json.dumps({**record, **{k: v[i] for k, v in added.items()}}, ensure_ascii=False) + "\n")
        return
    dialect = {"delimiter": ","} if examples.file_format == "csv" else {"delimiter": "\t", "quoting": csv.QUOTE_NONE}
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f, lineterminator="\n", **dialect)
        writer.writerow(examples.header + list(added))
        for i, record in enumerate(examples.records):
            writer.writerow(record + [_cell(values[i]) for values in added.values()])


def check_new_columns(examples, names):
    """Refuses columns (JSON fields) to add that `examples`' file already has: nothing is written over.

    Raises:
        ValueError: naming the file and the first such column.
    """
    existing = examples.header if examples.header is not None else {k for r in examples.records for k in r}
    clash = [name for name in names if name in existing]
    if clash:
        raise ValueError(f"{examples.source}: already has a {_word(examples.source)} '{clash[0]}', which the "
                         "predictions would replace; rename it")


def _cell(value):
    if isinstance(value, float):
        return f"{value:.6f}"
    if isinstance(value, list):
        return LABEL_SEPARATOR.join(value)
    return value
