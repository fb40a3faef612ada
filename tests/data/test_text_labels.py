"""The label scheme of a user's training file: classes in order, regression from float labels, multi-hot rows, and
labels outside the training set named with their file and line."""

import numpy as np
import pytest

from official_bert.data.labeled_text_files import Columns, LabeledTexts
from official_bert.data.text_labels import LabelScheme


def _examples(labels, source="train.csv"):
    return LabeledTexts(source=source, file_format="csv", text_a=["t"] * len(labels), text_b=None, labels=labels,
                        lines=list(range(2, 2 + len(labels))), records=[], header=["text", "label"], columns=Columns())


@pytest.mark.parametrize("labels,names", [
    (["meh", "good", "bad", "good"], ("bad", "good", "meh")),
    (["10", "2", "-1", "2"], ("-1", "2", "10")),  # integers in numeric order
    (["10", "2", "b"], ("10", "2", "b")),
])
def test_classes_in_order(labels, names):
    scheme = LabelScheme.of_training_labels(_examples(labels))
    assert scheme.label_names == names and not scheme.is_regression and scheme.num_classes == len(names)
    np.testing.assert_array_equal(scheme.encode(_examples(labels)), [names.index(label) for label in labels])


def test_float_labels_make_a_regression():
    scheme = LabelScheme.of_training_labels(_examples(["4.5", "1", 0.25]))
    assert scheme.is_regression and scheme.num_classes == 1 and scheme.label_names == ()
    np.testing.assert_array_equal(scheme.encode(_examples(["4.5", "1", 0.25])), np.float32([4.5, 1, 0.25]))
    assert LabelScheme.of_training_labels(_examples(["1", "3"]), regression=True).is_regression
    assert LabelScheme.of_training_labels(_examples(["0.5", "1.5"]), regression=False).label_names == ("0.5", "1.5")
    with pytest.raises(ValueError, match=r"^dev.csv:3: label 'high' is not a number; a regression task needs"):
        scheme.encode(_examples(["1.5", "high"], source="dev.csv"))


def test_multi_label_rows():
    labels = [["b", "a"], [], ["c"]]
    scheme = LabelScheme.of_training_labels(_examples(labels), multi_label=True)
    assert scheme.label_names == ("a", "b", "c") and scheme.multi_label
    np.testing.assert_array_equal(scheme.encode(_examples(labels)), [[1, 1, 0], [0, 0, 0], [0, 0, 1]])
    with pytest.raises(ValueError, match=r"^dev.csv:2: label 'd' is not one of the training file's labels \(a, b, c\)$"):
        scheme.encode(_examples([["a", "d"]], source="dev.csv"))


def test_a_label_outside_the_training_set_or_a_single_class():
    scheme = LabelScheme.of_training_labels(_examples(["x", "y"]))
    with pytest.raises(ValueError, match=r"^dev.csv:4: label 'z' is not one of the training file's labels \(x, y\)$"):
        scheme.encode(_examples(["x", "y", "z"], source="dev.csv"))
    with pytest.raises(ValueError, match="^train.csv: every example has the label 'x'; a classifier needs two"):
        LabelScheme.of_training_labels(_examples(["x", "x"]))
    with pytest.raises(ValueError, match="^train.csv: no example has a label"):
        LabelScheme.of_training_labels(_examples([[], []]), multi_label=True)
