"""The `.npz` reader of sequences of feature vectors: fields, checks (one line naming file and field), labels,
channel statistics."""

import numpy as np
import pytest

from official_bert.data.time_series import (channel_statistics, fit_to_model, label_ids, read_time_series,
                                            training_label_names)


def _write(tmp_path, name="train.npz", **fields):
    fields.setdefault("features", np.zeros((3, 4, 2), np.float32))
    path = str(tmp_path / name)
    np.savez(path, **fields)
    return path


def test_reads_fields_and_defaults(tmp_path):
    features = np.arange(24, dtype=np.float64).reshape(3, 4, 2)
    examples = read_time_series(_write(tmp_path, features=features, labels=np.array([2, 0, 2])))
    assert examples.features.dtype == np.float32 and examples.features.shape == (3, 4, 2)
    np.testing.assert_array_equal(examples.lengths, [4, 4, 4])  # no lengths: all full
    assert examples.labels.tolist() == ["2", "0", "2"]
    assert training_label_names(examples) == ["0", "2"]
    examples = read_time_series(_write(tmp_path, lengths=np.array([4, 1, 2]), labels=np.array(["b", "a", "b"])))
    np.testing.assert_array_equal(examples.mask(), [[1, 1, 1, 1], [1, 0, 0, 0], [1, 1, 0, 0]])
    assert training_label_names(examples) == ["a", "b"]


def test_label_names_field_orders_the_classes(tmp_path):
    names = np.array(["walk", "run", "sit"])
    examples = read_time_series(_write(tmp_path, labels=np.array([1, 2, 1]), label_names=names))
    assert examples.labels.tolist() == ["run", "sit", "run"]
    assert training_label_names(examples) == ["walk", "run", "sit"]
    np.testing.assert_array_equal(label_ids(examples, training_label_names(examples), "x"), [1, 2, 1])
    assert training_label_names(read_time_series(_write(tmp_path, labels=np.array([10, 9, 10])))) == ["9", "10"]


@pytest.mark.parametrize("fields,message", [
    ({"features": np.zeros((3, 4), np.float32)}, r"train.npz: field 'features' must be \(N, time, channels\)"),
    ({"features": np.zeros((3, 4, 2), np.int32)}, "train.npz: field 'features' must be floating point"),
    ({"features": np.array([[[0.0], [np.nan]]])}, "train.npz: field 'features' has 1 non-finite values .*example 0, "
                                                  "step 1, channel 0"),
    ({"lengths": np.array([4, 5, 1])}, r"train.npz: field 'lengths' is 5 at example 1; each must be in 1..4"),
    ({"lengths": np.array([4, 0, 1])}, "field 'lengths' is 0 at example 1"),
    ({"lengths": np.array([4.0, 1.0, 1.0])}, r"field 'lengths' must be \(3,\) integers"),
    ({"lengths": np.array([4, 4])}, r"field 'lengths' must be \(3,\) integers .* got shape \(2,\)"),
    ({"labels": np.array([0.5, 1.0, 0.0])}, r"field 'labels' must be \(3,\) integers or strings"),
    ({"labels": np.array([0, 3, 1]), "label_names": np.array(["a", "b", "c"])},
     r"field 'labels' is 3 at example 1; an id must be in 0..2"),
    ({"labels": np.array(["a", "z", "b"]), "label_names": np.array(["a", "b"])},
     "field 'labels' has 'z' at example 1, which is not in its field 'label_names'"),
    ({"label_names": np.array(["a", "a"])}, "field 'label_names' has 'a' twice"),
    ({"length": np.array([1, 1, 1])}, "field 'length' is not one of features, lengths, labels, label_names"),
    ({"labels": np.array([object(), 1, 2], dtype=object)}, "field 'labels' holds Python objects"),
])
def test_bad_fields_name_file_and_field(tmp_path, fields, message):
    path = _write(tmp_path, **fields)
    with pytest.raises(ValueError, match=message) as raised:
        read_time_series(path)
    assert "\n" not in str(raised.value) and path in str(raised.value)


def test_missing_and_foreign_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="nothing.npz: no such file"):
        read_time_series(str(tmp_path / "nothing.npz"))
    (tmp_path / "text.npz").write_text("not numpy")
    with pytest.raises(ValueError, match="text.npz: not a .npz file"):
        read_time_series(str(tmp_path / "text.npz"))
    np.savez(str(tmp_path / "empty.npz"), lengths=np.array([1]))
    with pytest.raises(ValueError, match="empty.npz: field 'features' missing"):
        read_time_series(str(tmp_path / "empty.npz"))


def test_labels_outside_the_training_set(tmp_path):
    train = read_time_series(_write(tmp_path, labels=np.array(["a", "b", "a"])))
    dev = read_time_series(_write(tmp_path, "dev.npz", labels=np.array(["a", "c", "b"])))
    with pytest.raises(ValueError, match=r"dev.npz: field 'labels' has 'c' at example 1, not a class of the "
                                         r"training split .*train.npz \(a, b\)"):
        label_ids(dev, training_label_names(train), "the training split " + train.source)
    with pytest.raises(ValueError, match=r"not a class of the training run of out/gait \(a, b\)$"):
        label_ids(dev, training_label_names(train), "the training run of out/gait")
    with pytest.raises(ValueError, match="dev.npz: field 'labels' missing"):
        label_ids(read_time_series(_write(tmp_path, "dev.npz")), ["a"], train.source)


def test_channel_statistics_leave_out_padding(tmp_path):
    features = np.zeros((2, 3, 2), np.float32)
    features[0, :, 0] = [1.0, 2.0, 3.0]
    features[1, 0, 0] = 4.0
    features[:, :, 1] = 5.0  # a constant channel (the padding too: masked)
    mean, scale = channel_statistics(read_time_series(_write(tmp_path, features=features,
                                                             lengths=np.array([3, 1]))))
    np.testing.assert_allclose(mean, [2.5, 5.0])
    np.testing.assert_allclose(scale, [np.std([1.0, 2.0, 3.0, 4.0]), 1.0])


def test_fit_to_model_cuts_only_padding_and_names_what_does_not_fit(tmp_path):
    features = np.ones((2, 6, 3), np.float32)
    examples = read_time_series(_write(tmp_path, features=features, lengths=np.array([4, 2])))
    fit_to_model(examples, channels=3, max_time=4)
    assert examples.features.shape == (2, 4, 3)
    with pytest.raises(ValueError, match=r"train.npz: field 'features' has 3 channels; the model takes 5"):
        fit_to_model(examples, channels=5, max_time=4)
    with pytest.raises(ValueError, match=r"train.npz: field 'lengths' reaches 4 steps; the model takes up to 3"):
        fit_to_model(examples, channels=3, max_time=3)
