"""The labels of a user's classification data: classes named by any strings, several labels an example, or scores.

The training file decides (`LabelScheme.of_training_labels`): labels that are all numbers, one at least with a
fraction or an exponent (`4.5`, `1e-3`), make a regression task (or any numbers, when asked for one); otherwise each
distinct label is a class, ordered as numbers when every label is an integer (`2` before `10`) and as strings
otherwise (the order transformers' `run_glue.py` gives them). `LabelScheme.encode` turns the labels of any file
into class indices, scores or multi-hot rows; a label the training file does not have is an error naming the file
and line.

Examples:

>>> scheme = LabelScheme.of_training_labels(train)  # train: `labeled_text_files.LabeledTexts`
>>> scheme.label_names, scheme.encode(train)[:3]
(('bad', 'good', 'meh'), array([1, 0, 2]))
"""

import dataclasses
import math
import re
from typing import Tuple

import numpy as np

_INTEGER = re.compile(r"[+-]?\d+")


def _number(label):
    """The label as a finite float, or None when it is not a number."""
    if isinstance(label, float):
        return label
    try:
        value = float(label)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _is_fraction(label):
    """Whether the label is written as a number that is not an integer (`4.5`, `1.0`, `1e3`)."""
    return isinstance(label, float) or (_number(label) is not None and not _INTEGER.fullmatch(label))


@dataclasses.dataclass(frozen=True)
class LabelScheme:
    """What a classifier of the user's data predicts.

    Args:
        label_names: the classes, in class-index order (empty for regression).
        is_regression: one score an example.
        multi_label: any number of the classes an example (sigmoid outputs).
    """

    label_names: Tuple[str, ...]
    is_regression: bool = False
    multi_label: bool = False

    @property
    def num_classes(self):
        """The model's outputs: the number of labels, or 1 for regression."""
        return 1 if self.is_regression else len(self.label_names)

    @classmethod
    def of_training_labels(cls, examples, multi_label=False, regression=None):
        """The scheme of a training file's labels.

        Args:
            examples: the training file's `LabeledTexts`.
            multi_label: each label is a list of labels.
            regression: True: scores (every label must be a number); False: classes; None: scores when every label
                is a number and one at least has a fraction.

        Raises:
            ValueError: a label that is not a number for regression, or a single class; naming the file (and line).
        """
        labels = examples.labels
        if multi_label:
            names = {name for row in labels for name in row}
            if not names:
                raise ValueError(f"{examples.source}: no example has a label; a multi-label classifier needs labels")
            return cls(_ordered(names), multi_label=True)
        if regression is None:
            regression = all(_number(label) is not None for label in labels) and any(map(_is_fraction, labels))
        if regression:
            return cls((), is_regression=True)
        names = {str(label) for label in labels}
        if len(names) < 2:
            raise ValueError(f"{examples.source}: every example has the label {next(iter(names), '')!r}; a "
                             "classifier needs two labels at least")
        return cls(_ordered(names))

    def encode(self, examples):
        """The labels of `examples` (`LabeledTexts`) as the model's targets.

        Returns:
            int64 class indices (n,); float32 scores (n,) for regression; float32 multi-hot (n, num_classes) for
            multi-label.

        Raises:
            ValueError: a label outside `label_names`, or not a number for regression, naming the file and line.
        """
        if self.is_regression:
            scores = [_number(label) for label in examples.labels]
            for i, score in enumerate(scores):
                if score is None:
                    raise ValueError(f"{examples.where(i)}: label {examples.labels[i]!r} is not a number; a "
                                     "regression task needs a score for every example")
            return np.asarray(scores, dtype=np.float32)
        index = {name: i for i, name in enumerate(self.label_names)}

        def class_of(i, label):
            if str(label) not in index:
                raise ValueError(f"{examples.where(i)}: label {str(label)!r} is not one of the training file's labels "
                                 f"({', '.join(self.label_names)})")
            return index[str(label)]

        if not self.multi_label:
            return np.asarray([class_of(i, label) for i, label in enumerate(examples.labels)], dtype=np.int64)
        hot = np.zeros((len(examples.labels), len(self.label_names)), dtype=np.float32)  # (n, num_classes)
        for i, row in enumerate(examples.labels):
            hot[i, [class_of(i, label) for label in row]] = 1.0
        return hot


def _ordered(names):
    """Label names as numbers when all are integers, else as strings."""
    if all(_INTEGER.fullmatch(name) for name in names):
        return tuple(sorted(names, key=int))
    return tuple(sorted(names))
