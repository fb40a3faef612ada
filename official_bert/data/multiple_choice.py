"""Multiple-choice examples (SWAG and the like): SWAG's CSV, the same rows as JSON lines, a generic JSON-lines form,
and tensorflow-datasets' HellaSwag.

Every source gives the same `MultipleChoiceExamples`: per question a first segment (its context) and its choices
(each a second segment, packed `[CLS] context [SEP] choice [SEP]`), the right choice's index (None for test
splits) and an id.

- SWAG CSV (`train.csv`, `val.csv`, `test.csv` of rowanz/swagaf): a header with `sent1`, `sent2`,
  `ending0`..`ending3` and, except in `test.csv`, `label`. As transformers' `run_swag.py`: the context is `sent1`,
  choice i is `sent2 + " " + ending_i`. The id is the unnamed first column (SWAG's row index) when there is one.
- SWAG JSON lines: one object per line with the same fields (`sent1`, `sent2`, `ending0`.., `label`).
- Generic JSON lines: `{"context": str, "question": str, "choices": [str, ...], "label": int (optional), "id":
  (optional)}`, with a context or a question or both. With a context, it is the first segment and choice i is
  `question + " " + choices[i]` (the choice alone without a question). Without a context (absent, null or empty:
  CommonsenseQA's shape), the question is the first segment and each choice the second: `[CLS] question [SEP]
  choice [SEP]`. (transformers' `run_swag.py` would pack an empty context as `[CLS] [SEP] question choice [SEP]`.)
  Questions may have different numbers of choices.

A file is UTF-8 (`official_bert.text_files`); blank lines are skipped (with `skip_blank=False` they are errors). A
malformed row is a ValueError naming the file, the 1-based line and the field. Empty choices are errors too: an
empty string is how a batch marks a missing choice (`data.multiple_choice_dataset`). A file's rows are all labeled
or none is (a test file).

Examples:

>>> examples = read_multiple_choice("../shared/data/swag/sample.jsonl")
>>> len(examples), examples.max_choices, examples.labels[:3].tolist()
(10, 4, [0, 3, 1])
>>> examples.choices[0][0]
'A drum line passes by walking down the street playing their instruments.'
"""

import csv
import dataclasses
import logging
import os
from typing import List, Optional

import numpy as np

from official_bert.data.tfds_records import to_str
from official_bert.text_files import read_json_lines, read_lines

logger = logging.getLogger(__name__)

SWAG_ENDINGS = 4
_SWAG_FIELDS = ("sent1", "sent2") + tuple(f"ending{i}" for i in range(SWAG_ENDINGS))
# tensorflow-datasets builders of multiple-choice sets, and their splits by our names. TFDS 4.9 has no `swag`.
TFDS_SPLITS = {"hellaswag": {"train": "train", "dev": "validation", "test": "test"}}


@dataclasses.dataclass
class MultipleChoiceExamples:
    """The questions of one split, as parallel lists.

    Args:
        contexts: each question's first segment (its context; without one, the question).
        choices: each question's choices (second segments), one list per question, of any length >= 1.
        labels: int64 index of the right choice per question, or None for an unlabeled (test) split.
        ids: an id per question (str).
        source: where the examples came from (a file path or a TFDS name and split).
        lines: each question's line in its file (a CSV row's first line); None when not read from a file.
    """

    contexts: List[str]
    choices: List[List[str]]
    labels: Optional[np.ndarray]
    ids: List[str]
    source: str = ""
    lines: Optional[List[int]] = None

    def __len__(self) -> int:
        return len(self.contexts)

    @property
    def max_choices(self) -> int:
        """The largest number of choices of a question (0 for no question)."""
        return max((len(c) for c in self.choices), default=0)

    def chance_accuracy(self) -> float:
        """The expected accuracy of a uniform random guess: the mean of 1 / choices."""
        return float(np.mean([1.0 / len(c) for c in self.choices])) if self.choices else float("nan")


class _Rows:
    """Collects (context, choices, label, id) rows and their lines, checking that all or none are labeled."""

    def __init__(self, path):
        self.path, self.contexts, self.choices, self.labels, self.ids, self.lines = path, [], [], [], [], []

    def add(self, where, context, choices, label, example_id, line=None):
        if self.contexts and (label is None) != (self.labels[0] is None):
            raise ValueError(f"{where}: field 'label' is {'missing' if label is None else 'present'}, but the "
                             f"file's first row {'has one' if label is None else 'has none'}; a file's rows are "
                             f"all labeled or none is (a test file)")
        self.contexts.append(context)
        self.choices.append(choices)
        self.labels.append(label)
        self.ids.append(str(len(self.ids) if example_id is None else example_id))
        self.lines.append(line)

    def examples(self):
        labels = None if not self.labels or self.labels[0] is None else np.asarray(self.labels, dtype=np.int64)
        lines = self.lines if all(line is not None for line in self.lines) else None
        return MultipleChoiceExamples(self.contexts, self.choices, labels, self.ids, source=self.path, lines=lines)


def _text(where, row, field, allow_empty=False):
    value = row.get(field)
    if value is None:
        raise ValueError(f"{where}: field '{field}' missing")
    if not isinstance(value, str):
        raise ValueError(f"{where}: field '{field}' must be a string, got {type(value).__name__} {value!r}")
    if not allow_empty and not value.strip():
        raise ValueError(f"{where}: field '{field}' is empty")
    return value


def _label(where, raw, num_choices):
    """The label as an int in [0, num_choices), or None for a missing / empty one."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return None
    try:
        label = int(raw) if not isinstance(raw, (bool, float)) else None
    except ValueError:
        label = None
    if label is None or not 0 <= label < num_choices:
        raise ValueError(f"{where}: field 'label' must be a choice index 0..{num_choices - 1}, got {raw!r}")
    return label


def _swag_row(where, row):
    """(context, choices, label) of a SWAG row (CSV or JSON): sent1, and sent2 + " " + ending_i, as run_swag.py."""
    context = _text(where, row, "sent1")
    start = _text(where, row, "sent2", allow_empty=True)  # the second sentence's first words; may be empty
    choices = []
    for i in range(SWAG_ENDINGS):
        ending = _text(where, row, f"ending{i}")
        choices.append(f"{start} {ending}" if start.strip() else ending)
    return context, choices, _label(where, row.get("label"), SWAG_ENDINGS)


def _generic_row(where, row):
    """(first segment, choices, label) of a generic row: `context`, and `question + " " + choice` per choice; without
    a context, `question`, and each choice alone."""
    context = _text(where, row, "context", allow_empty=True) if row.get("context") is not None else ""
    question = _text(where, row, "question", allow_empty=True) if row.get("question") is not None else ""
    if not context.strip() and not question.strip():
        raise ValueError(f"{where}: fields 'context' and 'question' are both missing or empty; a row needs one of "
                         f"them (the first segment)")
    if not context.strip():
        context, question = question, ""  # CommonsenseQA's shape: the question is the first segment
    raw_choices = row["choices"]
    if not isinstance(raw_choices, list) or not raw_choices:
        raise ValueError(f"{where}: field 'choices' must be a non-empty list of strings, got {raw_choices!r}")
    choices = []
    for i, choice in enumerate(raw_choices):
        if not isinstance(choice, str) or not choice.strip():
            raise ValueError(f"{where}: field 'choices' [{i}] must be a non-empty string, got {choice!r}")
        choices.append(f"{question} {choice}" if question.strip() else choice)
    return context, choices, _label(where, row.get("label"), len(choices))


def read_swag_csv(path, skip_blank=True) -> MultipleChoiceExamples:
    """Reads a SWAG CSV file (`train.csv`, `val.csv`, or `test.csv` without labels).

    Args:
        path: the file.
        skip_blank: skip blank lines (not those in a quoted field); False: a blank line is an error.

    Raises:
        FileNotFoundError: no such file.
        ValueError: a line that is not UTF-8, a header without a SWAG field, a blank line (unless `skip_blank`) or a
            malformed row (file, line and field named).
    """
    rows = _Rows(path)
    reader = csv.reader(line for _, line in read_lines(path))
    header = next(reader, [])
    missing = [field for field in _SWAG_FIELDS if field not in header]
    if missing:
        raise ValueError(f"{path}:1: the header has no field {', '.join(repr(m) for m in missing)} of a SWAG CSV "
                         f"file; header: {header}")
    index_column = "" if header and header[0] == "" else None  # SWAG's unnamed row index
    line = reader.line_num
    for fields in reader:
        line_of_row = line + 1  # the row's first line (a quoted field may span several)
        where = f"{path}:{line_of_row}"
        line = reader.line_num
        if not fields:
            if skip_blank:
                continue
            raise ValueError(f"{where}: empty line; expected a row of {len(header)} comma-separated fields")
        if len(fields) != len(header):
            raise ValueError(f"{where}: expected {len(header)} comma-separated fields ({', '.join(header)}), "
                             f"got {len(fields)}")
        row = dict(zip(header, fields))
        context, choices, label = _swag_row(where, row)
        example_id = row[index_column].strip() if index_column is not None and row[index_column].strip() else None
        rows.add(where, context, choices, label, example_id, line_of_row)
    return rows.examples()


def read_jsonl(path, skip_blank=True) -> MultipleChoiceExamples:
    """Reads a JSON-lines file of SWAG rows or generic rows (see the module notes).

    Args:
        path: the file.
        skip_blank: skip blank lines; False: a blank line is an error.

    Raises:
        FileNotFoundError: no such file.
        ValueError: a line that is not UTF-8 or not a JSON object, a blank line (unless `skip_blank`), or a malformed
            row (file, line and field named).
    """
    rows = _Rows(path)
    for lineno, row in read_json_lines(path, skip_blank, "one JSON object a line"):
        where = f"{path}:{lineno}"
        if not isinstance(row, dict):
            raise ValueError(f"{where}: expected a JSON object, got {type(row).__name__}")
        if "choices" in row:
            context, choices, label = _generic_row(where, row)
        elif "sent1" in row or any(f"ending{i}" in row for i in range(SWAG_ENDINGS)):
            context, choices, label = _swag_row(where, row)
        else:
            raise ValueError(f"{where}: field 'choices' missing (a generic row: context and/or question, choices, "
                             f"label) and no SWAG fields (sent1, sent2, ending0..ending3, label)")
        rows.add(where, context, choices, label, row.get("id"), lineno)
    return rows.examples()


def read_multiple_choice(path, skip_blank=True) -> MultipleChoiceExamples:
    """Reads a `.csv` file as SWAG's CSV, any other as JSON lines (`.jsonl`, `.json`).

    Args:
        path: the file.
        skip_blank: skip blank lines; False: a blank line is an error naming it (`export.predict`, whose answers
            must match the file's questions line for line).
    """
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no such file: {path}")
    if path.lower().endswith(".csv"):
        return read_swag_csv(path, skip_blank)
    return read_jsonl(path, skip_blank)


def examples_from_tfds(name, split, records, source="") -> MultipleChoiceExamples:
    """Converts TFDS HellaSwag records (`context`, `endings`, `label`; bytes or str) to `MultipleChoiceExamples`;
    a split whose labels are all -1 (test) is unlabeled."""
    rows = _Rows(source or f"{name}[{split}]")
    for n, record in enumerate(records):
        where = f"{rows.path} example {n}"
        choices = [to_str(e) for e in record["endings"]]
        label = int(record["label"])
        rows.add(where, to_str(record["context"]), choices,
                 None if label < 0 else _label(where, label, len(choices)), None)
    return rows.examples()


def load_tfds_multiple_choice(name, split, data_dir=None, download=False) -> MultipleChoiceExamples:
    """One split ("train", "dev", "test") of a TFDS multiple-choice set (`TFDS_SPLITS`: HellaSwag).

    Raises:
        ValueError: a name or split TFDS_SPLITS does not have.
        FileNotFoundError: the dataset is not prepared in `data_dir` (and could not be downloaded).
    """
    import tensorflow_datasets as tfds

    if name not in TFDS_SPLITS:
        raise ValueError(f"--tfds_name={name!r}: tensorflow-datasets has no builder for it here; one of "
                         f"{sorted(TFDS_SPLITS)} (TFDS has no 'swag': pass SWAG's CSV files instead)")
    if split not in TFDS_SPLITS[name]:
        raise ValueError(f"{name}: no split {split!r}; one of {sorted(TFDS_SPLITS[name])}")
    tfds_split = TFDS_SPLITS[name][split]
    where = data_dir or "the default TFDS directory (~/tensorflow_datasets)"
    builder = tfds.builder(name, data_dir=data_dir)
    if download and not builder.is_prepared():
        import importlib

        from official_bert.data.downloads import unreachable_host

        url = getattr(importlib.import_module(type(builder).__module__), "_HELLASWAG_URL", "")
        host = unreachable_host(url)
        if host:
            raise FileNotFoundError(f"TFDS dataset {name} is not prepared in {where} and {host} cannot be reached "
                                    f"to download it: pass --train_file/--eval_file, or --tfds_data_dir=<a "
                                    f"directory where it is prepared>")
        builder.download_and_prepare()
    try:
        dataset = tfds.load(name, split=tfds_split, data_dir=data_dir, download=False, shuffle_files=False)
    except (AssertionError, FileNotFoundError, tfds.core.registered.DatasetNotFoundError) as e:
        raise FileNotFoundError(f"TFDS dataset {name} is not prepared in {where}. Prepare it first (`tfds build "
                                f"{name} --data_dir=DIR`) and pass DIR as --tfds_data_dir, or pass "
                                f"--train_file/--eval_file. ({type(e).__name__}: {e})") from None
    return examples_from_tfds(name, split, tfds.as_numpy(dataset), source=f"{name}[{tfds_split}]")
