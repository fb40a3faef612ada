"""GLUE examples from the original TSV files (tensorflow-datasets: `glue_tfds`).

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
import os
from typing import List, Optional

import numpy as np

from official_bert.data.glue_rows import BadRow, RowReader
from official_bert.data.glue_tasks import GLUE_TASKS, GlueTask, get_glue_task
from official_bert.text_files import is_directory, path_exists, read_lines

__all__ = ["GLUE_TASKS", "GlueExamples", "GlueTask", "get_glue_task", "glue_file_path", "read_glue_tsv"]

logger = logging.getLogger(__name__)

_MAX_LOGGED_SKIPS = 5


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
        if path_exists(path):
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
    if is_directory(path):
        path = glue_file_path(task, path, split)
    elif not path_exists(path):
        raise FileNotFoundError(f"{task.name} {split}: no such file: {path}")
    labeled = task.is_labeled(split)
    layout = task.labeled_layout if labeled else task.test_layout

    text_a, text_b, labels, ids = [], [] if task.is_pair else None, [] if labeled else None, []
    reader = RowReader(task, layout, path, split)
    num_rows = num_skipped = 0
    for lineno, fields in _tsv_lines(path):
        row = reader.parse(lineno, fields)
        if row is None:  # the header
            continue
        num_rows += 1
        if isinstance(row, BadRow):
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
