"""The GLUE tasks: label sets, metrics, file names, column layouts and TFDS names, one `GlueTask` each.

`GLUE_TASKS["MRPC"]` (or `get_glue_task("mrpc")`) says everything the readers, the metrics and the CLI
need to know about a task. Lookups ignore case and accept the aliases "SST2" and "STSB".

The column layouts follow the original GLUE TSV files (as google-research/bert `run_classifier.py` and
tensorflow-datasets read them): a column is found by its header name when the file has a header, and by
its position otherwise.
"""

import dataclasses
from typing import Dict, Optional, Tuple

# Split names we use, with the names tensorflow-datasets and Hugging Face use accepted as aliases.
_SPLIT_ALIASES = {
    "validation": "dev",
    "validation_matched": "dev_matched",
    "validation_mismatched": "dev_mismatched",
    "eval": "dev",
}


@dataclasses.dataclass(frozen=True)
class Column:
    """Where one field sits in a TSV row.

    Args:
        name: the header name of the column (used when the file has a header).
        position: 0-based position used when the file has no header; -1 is the last column.
    """

    name: str
    position: int


@dataclasses.dataclass(frozen=True)
class TsvLayout:
    """The columns of one kind of GLUE file (labeled train/dev files, or unlabeled test files).

    Args:
        has_header: whether the original file starts with a header row. CoLA train/dev have none.
        text_a: the first text.
        text_b: the second text, or None for single-sentence tasks.
        label: the label column, or None in test files.
        index: the example-id column (`index`, `id`), or None when the file has none.
        num_columns: the exact column count of a row in a file without a header, or None when it varies
            (MNLI train has 12 columns, MNLI dev 16). A file with a header must match the header's count.
    """

    has_header: bool
    text_a: Column
    text_b: Optional[Column]
    label: Optional[Column]
    index: Optional[Column]
    num_columns: Optional[int]

    @property
    def columns(self) -> Tuple[Column, ...]:
        return tuple(c for c in (self.index, self.text_a, self.text_b, self.label) if c is not None)

    @property
    def min_columns(self) -> int:
        """The fewest columns a headerless row may have for every positional column to exist."""
        last = max(c.position for c in self.columns if c.position >= 0) + 1
        return last + (1 if self.label is not None and self.label.position < 0 else 0)


@dataclasses.dataclass(frozen=True)
class GlueTask:
    """One GLUE task.

    Args:
        name: the canonical upper-case name used on the CLI ("COLA", "SST-2", ..., "AX").
        label_names: the labels as written in the TSV files and expected in GLUE submissions; a label's
            class index is its position here. Empty for the regression task STS-B.
        is_regression: True for STS-B (a float score in [0, 5]).
        is_pair: True when each example has two texts.
        metric_names: the metrics GLUE scores this task with (pass them to `metrics.glue.glue_metrics`).
        split_files: split name -> candidate file names in the task's data directory (first found wins).
        tfds_name: the tensorflow-datasets name, e.g. "glue/mrpc".
        tfds_splits: our split name -> the TFDS split name.
        tfds_text_features: the TFDS feature names of text_a and text_b (None for single texts).
        tfds_label_order: our label names in the order of the TFDS ClassLabel indices.
        labeled_layout: columns of the train/dev files, or None when the task has no labeled files (AX).
        test_layout: columns of the unlabeled test files.
    """

    name: str
    label_names: Tuple[str, ...]
    is_regression: bool
    is_pair: bool
    metric_names: Tuple[str, ...]
    split_files: Dict[str, Tuple[str, ...]]
    tfds_name: str
    tfds_splits: Dict[str, str]
    tfds_text_features: Tuple[str, Optional[str]]
    tfds_label_order: Tuple[str, ...]
    labeled_layout: Optional[TsvLayout]
    test_layout: TsvLayout

    @property
    def num_classes(self) -> int:
        """Outputs of the classifier head: the number of labels, or 1 for regression."""
        return 1 if self.is_regression else len(self.label_names)

    @property
    def splits(self) -> Tuple[str, ...]:
        return tuple(self.split_files)

    @property
    def eval_splits(self) -> Tuple[str, ...]:
        """The labeled evaluation splits: ("dev",), or MNLI's ("dev_matched", "dev_mismatched")."""
        return tuple(s for s in self.split_files if s.startswith("dev"))

    @property
    def test_splits(self) -> Tuple[str, ...]:
        """The unlabeled splits used for GLUE submissions."""
        return tuple(s for s in self.split_files if s.startswith("test"))

    def is_labeled(self, split: str) -> bool:
        """Whether the files of `split` carry labels (train and dev do, test does not)."""
        return not self.canonical_split(split).startswith("test")

    def canonical_split(self, split: str) -> str:
        """Our name for `split` ("validation" -> "dev", ...); a ValueError when the task lacks it."""
        key = _SPLIT_ALIASES.get(split.lower(), split.lower())
        if key not in self.split_files:
            raise ValueError(f"{self.name} has no split '{split}'; splits: {', '.join(self.split_files)}")
        return key


def _labeled(text_a, text_b, label, index, num_columns, has_header=True):
    return TsvLayout(has_header, Column(*text_a), Column(*text_b) if text_b else None, Column(*label),
                     Column(*index) if index else None, num_columns)


def _test(text_a, text_b, num_columns, index=("index", 0)):
    return TsvLayout(True, Column(*text_a), Column(*text_b) if text_b else None, None, Column(*index), num_columns)


_STANDARD_SPLITS = {"train": ("train.tsv",), "dev": ("dev.tsv",), "test": ("test.tsv",)}
_STANDARD_TFDS_SPLITS = {"train": "train", "dev": "validation", "test": "test"}
_MNLI_SPLITS = {"train": ("train.tsv",), "dev_matched": ("dev_matched.tsv",),
                "dev_mismatched": ("dev_mismatched.tsv",), "test_matched": ("test_matched.tsv",),
                "test_mismatched": ("test_mismatched.tsv",)}
_MNLI_TFDS_SPLITS = {"train": "train", "dev_matched": "validation_matched",
                     "dev_mismatched": "validation_mismatched", "test_matched": "test_matched",
                     "test_mismatched": "test_mismatched"}
_NLI_LABELS = ("contradiction", "entailment", "neutral")  # google-research/bert MnliProcessor order
_TFDS_NLI_ORDER = ("entailment", "neutral", "contradiction")
_BINARY = ("0", "1")
_ENTAILMENT = ("entailment", "not_entailment")
_ACCURACY = ("accuracy",)
_F1_ACCURACY = ("f1", "accuracy")


def _task(name, labels, metrics, tfds, text_features, labeled, test, is_regression=False,
          tfds_order=None, split_files=None, tfds_splits=None):
    return GlueTask(name=name, label_names=labels, is_regression=is_regression,
                    is_pair=text_features[1] is not None, metric_names=metrics,
                    split_files=dict(split_files or _STANDARD_SPLITS), tfds_name=tfds,
                    tfds_splits=dict(tfds_splits or _STANDARD_TFDS_SPLITS), tfds_text_features=text_features,
                    tfds_label_order=tfds_order or labels, labeled_layout=labeled, test_layout=test)


_TASK_LIST = [
    # CoLA train/dev: no header; source, label, original mark, sentence.
    _task("COLA", _BINARY, ("matthews_corr",), "glue/cola", ("sentence", None),
          _labeled(("sentence", 3), None, ("label", 1), None, 4, has_header=False),
          _test(("sentence", 1), None, 2)),
    _task("SST-2", _BINARY, _ACCURACY, "glue/sst2", ("sentence", None),
          _labeled(("sentence", 0), None, ("label", 1), None, 2),
          _test(("sentence", 1), None, 2)),
    # MRPC: UTF-8 BOM; Quality, #1 ID, #2 ID, #1 String, #2 String (test: index instead of Quality).
    _task("MRPC", _BINARY, _F1_ACCURACY, "glue/mrpc", ("sentence1", "sentence2"),
          _labeled(("#1 String", 3), ("#2 String", 4), ("Quality", 0), None, 5),
          _test(("#1 String", 3), ("#2 String", 4), 5)),
    # STS-B: index genre filename year old_index source1 source2 sentence1 sentence2 score.
    _task("STS-B", (), ("pearson", "spearman"), "glue/stsb", ("sentence1", "sentence2"),
          _labeled(("sentence1", 7), ("sentence2", 8), ("score", 9), ("index", 0), 10),
          _test(("sentence1", 7), ("sentence2", 8), 9), is_regression=True),
    # QQP: id qid1 qid2 question1 question2 is_duplicate (test: id question1 question2).
    _task("QQP", _BINARY, _F1_ACCURACY, "glue/qqp", ("question1", "question2"),
          _labeled(("question1", 3), ("question2", 4), ("is_duplicate", 5), ("id", 0), 6),
          _test(("question1", 1), ("question2", 2), 3, index=("id", 0))),
    # MNLI: index promptID pairID genre 4 parse columns sentence1 sentence2 label1 [label2..5] gold_label.
    _task("MNLI", _NLI_LABELS, _ACCURACY, "glue/mnli", ("premise", "hypothesis"),
          _labeled(("sentence1", 8), ("sentence2", 9), ("gold_label", -1), ("index", 0), None),
          _test(("sentence1", 8), ("sentence2", 9), 10), tfds_order=_TFDS_NLI_ORDER,
          split_files=_MNLI_SPLITS, tfds_splits=_MNLI_TFDS_SPLITS),
    _task("QNLI", _ENTAILMENT, _ACCURACY, "glue/qnli", ("question", "sentence"),
          _labeled(("question", 1), ("sentence", 2), ("label", 3), ("index", 0), 4),
          _test(("question", 1), ("sentence", 2), 3)),
    _task("RTE", _ENTAILMENT, _ACCURACY, "glue/rte", ("sentence1", "sentence2"),
          _labeled(("sentence1", 1), ("sentence2", 2), ("label", 3), ("index", 0), 4),
          _test(("sentence1", 1), ("sentence2", 2), 3)),
    # WNLI: 1 = entailment (TFDS names them not_entailment, entailment).
    _task("WNLI", _BINARY, _ACCURACY, "glue/wnli", ("sentence1", "sentence2"),
          _labeled(("sentence1", 1), ("sentence2", 2), ("label", 3), ("index", 0), 4),
          _test(("sentence1", 1), ("sentence2", 2), 3)),
    # AX: the diagnostic set, test only, labelled with MNLI's classes; GLUE scores it by the R3
    # coefficient (multi-class Matthews correlation) on its server.
    _task("AX", _NLI_LABELS, ("matthews_corr",), "glue/ax", ("premise", "hypothesis"), None,
          _test(("sentence1", 1), ("sentence2", 2), 3), tfds_order=_TFDS_NLI_ORDER,
          split_files={"test": ("AX.tsv", "diagnostic.tsv", "diagnostic-full.tsv")},
          tfds_splits={"test": "test"}),
]

_ALIASES = {"SST2": "SST-2", "STSB": "STS-B", "STS": "STS-B", "DIAGNOSTIC": "AX"}


class _TaskTable(dict):
    """A dict of GlueTask by canonical name whose lookups ignore case and accept aliases."""

    @staticmethod
    def _key(name):
        key = str(name).strip().upper()
        return _ALIASES.get(key, key)

    def __getitem__(self, name):
        key = self._key(name)
        if not dict.__contains__(self, key):
            raise KeyError(f"unknown GLUE task '{name}'; tasks: {', '.join(self)}")
        return dict.__getitem__(self, key)

    def __contains__(self, name):
        return dict.__contains__(self, self._key(name))

    def get(self, name, default=None):
        return self[name] if name in self else default


GLUE_TASKS: Dict[str, GlueTask] = _TaskTable((t.name, t) for t in _TASK_LIST)


def get_glue_task(task) -> GlueTask:
    """Returns the GlueTask for a name (any case, "SST2"/"STSB" aliases) or passes a GlueTask through.

    Args:
        task: a task name or a `GlueTask`.

    Raises:
        ValueError: for an unknown name; the message lists the known tasks.
    """
    if isinstance(task, GlueTask):
        return task
    if task not in GLUE_TASKS:
        raise ValueError(f"unknown GLUE task '{task}'; tasks: {', '.join(GLUE_TASKS)}")
    return GLUE_TASKS[task]
