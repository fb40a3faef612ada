"""GLUE examples from the original TSV files or from tensorflow-datasets.

Both sources give the same `GlueExamples`: parallel texts, class indices (float scores for STS-B, None
for test splits) and example ids (the `index` column, used in GLUE submission files).

Examples:

>>> examples = read_glue_tsv("MRPC", "../shared/data/glue/MRPC", "dev")  # a directory or a file
>>> len(examples), int(examples.labels.sum()), examples.text_b[0][:12]
(408, 279, '"The foodser')

The TSV files are read without any quote processing (GLUE sentences contain `"`), one physical line per
row. A malformed row (wrong column count, missing text or label, bad index) is a ValueError naming the
file and the 1-based line, or with `skip_bad_rows=True` is skipped, logged and counted. A label outside
the task's label set is always an error.
"""

import dataclasses
import logging
import math
import os
from typing import Iterable, List, Mapping, Optional

import numpy as np

from official_bert.data.glue_tasks import GLUE_TASKS, GlueTask, TsvLayout, get_glue_task
from official_bert.text_files import is_remote, read_lines

__all__ = ["GLUE_TASKS", "GlueExamples", "GlueTask", "get_glue_task", "glue_file_path", "read_glue_tsv",
           "load_tfds_glue", "examples_from_tfds"]

logger = logging.getLogger(__name__)

_MAX_LOGGED_SKIPS = 5
STSB_SCORE_RANGE = (0.0, 5.0)


@dataclasses.dataclass
class GlueExamples:
    """The examples of one GLUE split, as parallel sequences.

    Args:
        task: the canonical task name ("MRPC", ...).
        split: our split name ("train", "dev", "dev_matched", "test", ...).
        text_a: the first text of each example.
        text_b: the second texts, or None for single-sentence tasks.
        labels: int64 class indices into the task's `label_names`, float32 scores for STS-B, or None for
            unlabeled (test) splits.
        ids: int64 example ids: the file's `index`/`id` column when it has one, else the 0-based data-row
            number (skipped rows counted, as tensorflow-datasets numbers `idx`).
        num_skipped: malformed rows skipped under `skip_bad_rows`.
        source: where the examples came from (a file path or a TFDS name and split).
    """

    task: str
    split: str
    text_a: List[str]
    text_b: Optional[List[str]]
    labels: Optional[np.ndarray]
    ids: np.ndarray
    num_skipped: int = 0
    source: str = ""

    def __len__(self) -> int:
        return len(self.text_a)


def glue_file_path(task, data_dir: str, split: str) -> str:
    """The TSV file of `split` in a task's data directory (e.g. `<data_dir>/dev_matched.tsv`).

    Args:
        task: a task name or `GlueTask`.
        data_dir: the directory holding the task's GLUE files.
        split: a split name of the task ("train", "dev", "test", MNLI "dev_matched", ...).

    Raises:
        FileNotFoundError: when none of the split's file names exists; the message lists them.
    """
    task = get_glue_task(task)
    names = task.split_files[task.canonical_split(split)]
    for name in names:
        path = os.path.join(data_dir, name)
        if _exists(path):
            return path
    raise FileNotFoundError(f"{task.name} {split}: none of {', '.join(names)} found in {data_dir}")


def read_glue_tsv(task, path: str, split: str, skip_bad_rows: bool = False) -> GlueExamples:
    """Reads one split of a GLUE task from its original TSV file.

    Args:
        task: a task name (any case, "SST2"/"STSB" accepted) or a `GlueTask`.
        path: the TSV file, or the task's data directory (the split's file name is then added).
        split: the split the file holds; "test..." splits are read without labels.
        skip_bad_rows: skip (and count and log) malformed rows instead of raising.

    Returns:
        A `GlueExamples`.

    Raises:
        FileNotFoundError: the file does not exist.
        ValueError: a malformed row (unless `skip_bad_rows`), a missing header column, or a label outside
            the task's label set; the message names the file and the 1-based line.
    """
    task = get_glue_task(task)
    split = task.canonical_split(split)
    if _isdir(path):
        path = glue_file_path(task, path, split)
    elif not _exists(path):
        raise FileNotFoundError(f"{task.name} {split}: no such file: {path}")
    labeled = task.is_labeled(split)
    layout = task.labeled_layout if labeled else task.test_layout

    text_a, text_b, labels, ids = [], [] if task.is_pair else None, [] if labeled else None, []
    reader = _RowReader(task, layout, path, split)
    num_rows = num_skipped = 0
    for lineno, fields in _tsv_lines(path):
        row = reader.parse(lineno, fields)
        if row is None:  # the header
            continue
        num_rows += 1
        if isinstance(row, _BadRow):
            if not skip_bad_rows:
                raise ValueError(row.message + " (pass skip_bad_rows=True / --skip_bad_rows to skip such rows)")
            num_skipped += 1
            if num_skipped <= _MAX_LOGGED_SKIPS:
                logger.warning("skipping malformed row: %s", row.message)
            continue
        index, a, b, label = row
        ids.append(num_rows - 1 if index is None else index)
        text_a.append(a)
        if text_b is not None:
            text_b.append(b)
        if labels is not None:
            labels.append(label)
    if num_skipped:
        logger.warning("%s: skipped %d malformed rows of %d", path, num_skipped, num_rows)
    label_dtype = np.float32 if task.is_regression else np.int64
    return GlueExamples(task=task.name, split=split, text_a=text_a, text_b=text_b,
                        labels=None if labels is None else np.asarray(labels, dtype=label_dtype),
                        ids=np.asarray(ids, dtype=np.int64), num_skipped=num_skipped, source=path)


class _BadRow:
    """A malformed row: what was wrong, already prefixed with `file:line:`."""

    def __init__(self, message: str):
        self.message = message


class _RowReader:
    """Turns the fields of one line into (index, text_a, text_b, label), a `_BadRow`, or None for a header."""

    def __init__(self, task: GlueTask, layout: TsvLayout, path: str, split: str):
        self.task, self.layout, self.path, self.split = task, layout, path, split
        self.positions = None  # column name -> position, once the first line is seen
        self.header = None  # the header's column names, when the file has one
        self.num_columns = layout.num_columns

    def _where(self, lineno: int) -> str:
        return f"{self.path}:{lineno}"

    def parse(self, lineno: int, fields: List[str]):
        if self.positions is None:
            if self._read_header(lineno, fields):
                return None
        layout = self.layout
        if self.num_columns is not None and len(fields) != self.num_columns:
            return _BadRow(f"{self._where(lineno)}: expected {self.num_columns} tab-separated columns "
                           f"({self._column_names()}) in a {self.task.name} {self.split} row, got {len(fields)}")
        if self.num_columns is None and len(fields) < layout.min_columns:
            return _BadRow(f"{self._where(lineno)}: expected at least {layout.min_columns} tab-separated "
                           f"columns in a {self.task.name} {self.split} row, got {len(fields)}")
        index = None
        if layout.index is not None:
            raw = fields[self.positions[layout.index.name]].strip()
            try:
                index = int(raw)
            except ValueError:
                return _BadRow(f"{self._where(lineno)}: the {layout.index.name!r} column must be an integer, "
                               f"got {raw!r}")
        texts = []
        for column in (layout.text_a, layout.text_b):
            if column is None:
                texts.append(None)
                continue
            text = fields[self.positions[column.name]]
            if not text.strip():
                return _BadRow(f"{self._where(lineno)}: empty text in column {column.name!r}")
            texts.append(text)
        label = None
        if layout.label is not None:
            raw_label = fields[self.positions[layout.label.name]]
            if not raw_label.strip():  # a missing label is a malformed row; a wrong one is always an error
                return _BadRow(f"{self._where(lineno)}: empty label in column {layout.label.name!r}")
            label = self._parse_label(lineno, raw_label)
        return index, texts[0], texts[1], label

    def _column_names(self) -> str:
        if self.header is not None:
            return ", ".join(self.header)
        return ", ".join(f"{c.name} at {c.position}" for c in sorted(self.layout.columns, key=lambda c: c.position))

    def _read_header(self, lineno: int, fields: List[str]) -> bool:
        """Sets the column positions from a header line (True) or from the layout's fallback (False)."""
        layout = self.layout
        if layout.has_header and layout.text_a.name in fields:
            missing = [c.name for c in layout.columns if c.name not in fields]
            if missing:
                raise ValueError(f"{self._where(lineno)}: the header has no column "
                                 f"{', '.join(repr(m) for m in missing)} that a {self.task.name} {self.split} "
                                 f"file needs; header: {fields}")
            self.positions = {c.name: fields.index(c.name) for c in layout.columns}
            self.num_columns = len(fields)
            self.header = fields
            return True
        if layout.has_header:
            logger.warning("%s: no %s header row; reading columns by position", self.path, self.task.name)
        self.positions = {c.name: c.position for c in layout.columns}
        return False

    def _parse_label(self, lineno: int, raw: str):
        value = raw.strip()
        if self.task.is_regression:
            low, high = STSB_SCORE_RANGE
            try:
                score = float(value)
            except ValueError:
                score = math.nan
            if not low <= score <= high:  # also rejects NaN
                raise ValueError(f"{self._where(lineno)}: {self.task.name} score {raw!r} is not a number "
                                 f"in [{low:g}, {high:g}]")
            return score
        if value not in self.task.label_names:
            allowed = ", ".join(repr(n) for n in self.task.label_names)
            raise ValueError(f"{self._where(lineno)}: label {raw!r} is not a {self.task.name} label; "
                             f"allowed: {allowed}")
        return self.task.label_names.index(value)


def _tsv_lines(path: str):
    """Yields (1-based line number, fields) for each non-blank line, split on tabs with no quoting.

    Lines end at "\\n" only (a stray "\\r" inside a sentence stays text; a "\\r\\n" ending is removed). A
    leading UTF-8 byte-order mark (MRPC) is dropped.
    """
    for lineno, line in read_lines(path):
        line = line.rstrip("\n").rstrip("\r")
        if not line.strip(" "):  # a blank line is no row; a line of tabs is a malformed one
            continue
        yield lineno, line.split("\t")


def _exists(path: str) -> bool:
    if is_remote(path):
        import tensorflow as tf

        return tf.io.gfile.exists(path)
    return os.path.exists(path)


def _isdir(path: str) -> bool:
    if is_remote(path):
        import tensorflow as tf

        return tf.io.gfile.isdir(path)
    return os.path.isdir(path)


def examples_from_tfds(task, split: str, records: Iterable[Mapping], label_names=None,
                       source: str = "") -> GlueExamples:
    """Converts TFDS GLUE records (dicts of NumPy values, as `tfds.as_numpy` yields) to `GlueExamples`.

    Args:
        task: a task name or `GlueTask`.
        split: our split name (or its TFDS alias, e.g. "validation_matched").
        records: dicts with the task's TFDS text features (bytes or str), `label` and `idx`.
        label_names: the dataset's ClassLabel names, checked against the task's expected TFDS order;
            None skips the check.
        source: recorded in the result.

    Raises:
        ValueError: a label outside the task's label set (-1 in a labeled split included), or
            `label_names` that do not match the task.
    """
    task = get_glue_task(task)
    split = task.canonical_split(split)
    labeled = task.is_labeled(split)
    order = task.tfds_label_order
    if label_names is not None and not task.is_regression and len(label_names) != len(order):
        raise ValueError(f"{source or task.tfds_name}: {len(label_names)} label names {list(label_names)}, "
                         f"expected {len(order)} for {task.name}")
    to_index = [task.label_names.index(name) for name in order]
    feature_a, feature_b = task.tfds_text_features
    text_a, text_b, labels, ids = [], [] if feature_b else None, [] if labeled else None, []
    for n, record in enumerate(records):
        text_a.append(_to_str(record[feature_a]))
        if feature_b:
            text_b.append(_to_str(record[feature_b]))
        ids.append(int(record.get("idx", n)))
        if labels is None:
            continue
        label = record["label"]
        if task.is_regression:
            score = float(label)
            if not STSB_SCORE_RANGE[0] <= score <= STSB_SCORE_RANGE[1]:
                raise ValueError(f"{source or task.tfds_name} example {n}: score {score} is not in [0, 5]")
            labels.append(score)
        else:
            label = int(label)
            if not 0 <= label < len(order):
                raise ValueError(f"{source or task.tfds_name} example {n}: label {label} is not a "
                                 f"{task.name} class index (0..{len(order) - 1})")
            labels.append(to_index[label])
    label_dtype = np.float32 if task.is_regression else np.int64
    return GlueExamples(task=task.name, split=split, text_a=text_a, text_b=text_b,
                        labels=None if labels is None else np.asarray(labels, dtype=label_dtype),
                        ids=np.asarray(ids, dtype=np.int64), source=source)


def _to_str(value) -> str:
    if isinstance(value, (bytes, np.bytes_)):
        return value.decode("utf-8")
    return str(value)


def load_tfds_glue(task, split: str, data_dir: Optional[str] = None, download: bool = False) -> GlueExamples:
    """Loads one split of a GLUE task from tensorflow-datasets.

    Args:
        task: a task name or `GlueTask`.
        split: our split name ("train", "dev", MNLI "dev_matched", ...) or the TFDS one ("validation").
        data_dir: the TFDS data directory; None for TFDS's default (`~/tensorflow_datasets`).
        download: download and prepare the dataset there when it is not prepared yet (needs the network);
            False: it must be prepared already (e.g. `tfds build glue/mrpc --data_dir=...`).

    Raises:
        FileNotFoundError: the dataset is not prepared there (and could not be downloaded); the message says
            what to do.
    """
    import tensorflow_datasets as tfds

    task = get_glue_task(task)
    split = task.canonical_split(split)
    tfds_split = task.tfds_splits[split]
    source = f"{task.tfds_name}[{tfds_split}]"
    where = data_dir or "the default TFDS directory (~/tensorflow_datasets)"
    builder = tfds.builder(task.tfds_name, data_dir=data_dir)
    if download and not builder.is_prepared():
        from official_bert.data.downloads import unreachable_host

        host = unreachable_host(getattr(builder.builder_config, "data_url", None))
        if host:
            raise FileNotFoundError(
                f"TFDS dataset {task.tfds_name} is not prepared in {where} and {host} cannot be reached to download "
                f"it: pass --data_dir=<directory with the GLUE {task.name} TSV files>, or --tfds_data_dir=<a "
                f"directory where it is prepared>")
        logging.info("Downloading and preparing %s in %s", task.tfds_name, where)
        builder.download_and_prepare()
    try:
        dataset, info = tfds.load(task.tfds_name, split=tfds_split, data_dir=data_dir, download=False,
                                  shuffle_files=False, with_info=True)
    except (AssertionError, FileNotFoundError, tfds.core.registered.DatasetNotFoundError) as e:
        # TFDS raises AssertionError("could not find data in ...") for an unprepared dataset.
        raise FileNotFoundError(
            f"TFDS dataset {task.tfds_name} is not prepared in {where}. Pass --data_dir=<directory with the GLUE "
            f"{task.name} TSV files>, or prepare the dataset first (`tfds build {task.tfds_name} --data_dir=DIR`) "
            f"and pass DIR as --tfds_data_dir. ({type(e).__name__}: {e})") from None
    label_names = None if task.is_regression else info.features["label"].names
    return examples_from_tfds(task, split, tfds.as_numpy(dataset), label_names=label_names, source=source)
