"""Sequences of feature vectors in `.npz` files, for `BertTimeSeriesClassifier`.

A file holds `features` float (N, time, channels), zero-padded after each sequence's end; `lengths` int (N), the
real steps of each (optional: all `time`); `labels` int or strings (N) (optional where nothing is evaluated); and
`label_names` strings (optional: the classes, in id order, which int `labels` index). Every check names the file and
the field:

>>> examples = read_time_series("train.npz")
>>> names = training_label_names(examples)
>>> ids = label_ids(examples, names, "the training split train.npz")
"""

import dataclasses
import os
import zipfile
from typing import List, Optional

import numpy as np

FIELDS = ("features", "lengths", "labels", "label_names")


@dataclasses.dataclass
class TimeSeriesExamples:
    """The sequences of one file.

    Attributes:
        features: (N, time, channels) float32, zero-padded.
        lengths: (N,) int32, each in 1..time.
        labels: (N,) label names (str), or None when the file has no `labels`.
        label_names: the file's `label_names` field (classes in id order), or None.
        source: the file.
    """
    features: np.ndarray
    lengths: np.ndarray
    labels: Optional[np.ndarray]
    label_names: Optional[List[str]]
    source: str

    def __len__(self):
        return len(self.features)

    @property
    def time(self) -> int:
        return self.features.shape[1]

    @property
    def channels(self) -> int:
        return self.features.shape[2]

    def mask(self) -> np.ndarray:
        """(N, time) int32: 1 on each sequence's real steps."""
        return (np.arange(self.time)[None, :] < self.lengths[:, None]).astype(np.int32)


def _load(path):
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such file")
    if not zipfile.is_zipfile(path):
        raise ValueError(f"{path}: not a .npz file (numpy.savez writes one)")
    try:
        with np.load(path, allow_pickle=False) as data:
            unknown = sorted(set(data.files) - set(FIELDS))
            if unknown:
                raise ValueError(f"{path}: field '{unknown[0]}' is not one of {', '.join(FIELDS)}")
            fields = {}
            for name in data.files:
                try:
                    fields[name] = data[name]
                except ValueError:  # an object array, refused without pickle
                    raise ValueError(f"{path}: field '{name}' holds Python objects; store numbers, or strings as a "
                                     "fixed-width string array (np.array(names, dtype=str))") from None
            return fields
    except (zipfile.BadZipFile, OSError, EOFError) as e:
        raise ValueError(f"{path}: not a .npz file (numpy.savez writes one): {e}") from None


def _check_features(path, features):
    if features is None:
        raise ValueError(f"{path}: field 'features' missing: (N, time, channels) floats")
    if features.ndim != 3 or 0 in features.shape[1:]:
        raise ValueError(f"{path}: field 'features' must be (N, time, channels) with time, channels >= 1, got shape "
                         f"{features.shape}")
    if features.dtype.kind != "f":
        raise ValueError(f"{path}: field 'features' must be floating point (float32), got {features.dtype}")
    bad = ~np.isfinite(features)
    if bad.any():
        example, step, channel = (int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"{path}: field 'features' has {int(bad.sum())} non-finite values (the first at example "
                         f"{example}, step {step}, channel {channel})")
    return features.astype(np.float32, copy=False)


def _check_lengths(path, lengths, count, time):
    if lengths is None:
        return np.full((count,), time, np.int32)
    if lengths.shape != (count,) or lengths.dtype.kind not in "iu":
        raise ValueError(f"{path}: field 'lengths' must be ({count},) integers (one per example), got shape "
                         f"{lengths.shape} of {lengths.dtype}")
    bad = np.flatnonzero((lengths < 1) | (lengths > time))
    if bad.size:
        raise ValueError(f"{path}: field 'lengths' is {int(lengths[bad[0]])} at example {int(bad[0])}; each must be "
                         f"in 1..{time} (the time axis of 'features')")
    return lengths.astype(np.int32)


def _check_label_names(path, names):
    if names is None:
        return None
    if names.ndim != 1 or names.dtype.kind not in "US" or not names.size:
        raise ValueError(f"{path}: field 'label_names' must be a non-empty 1-D array of strings, got shape "
                         f"{names.shape} of {names.dtype}")
    names = [str(name) for name in names.astype(str)]
    if len(set(names)) != len(names):
        duplicate = next(name for name in names if names.count(name) > 1)
        raise ValueError(f"{path}: field 'label_names' has {duplicate!r} twice")
    return names


def _check_labels(path, labels, count, names):
    """The labels as names (str)."""
    if labels is None:
        return None
    if labels.shape != (count,) or labels.dtype.kind not in "iuUS":
        raise ValueError(f"{path}: field 'labels' must be ({count},) integers or strings (one per example), got "
                         f"shape {labels.shape} of {labels.dtype}")
    if labels.dtype.kind in "US":
        labels = labels.astype(str)
        if names is not None:
            unknown = np.flatnonzero(~np.isin(labels, names))
            if unknown.size:
                raise ValueError(f"{path}: field 'labels' has {str(labels[unknown[0]])!r} at example {int(unknown[0])}, "
                                 f"which is not in its field 'label_names'")
        return labels
    if names is None:
        return labels.astype(np.int64).astype(str)
    bad = np.flatnonzero((labels < 0) | (labels >= len(names)))
    if bad.size:
        raise ValueError(f"{path}: field 'labels' is {int(labels[bad[0]])} at example {int(bad[0])}; an id must be "
                         f"in 0..{len(names) - 1} (its field 'label_names' has {len(names)})")
    return np.asarray(names)[labels]


def read_time_series(path) -> TimeSeriesExamples:
    """Reads and checks one `.npz` file (see the module notes).

    Raises:
        FileNotFoundError: no such file.
        ValueError: a malformed file or field, named with what was expected.
    """
    fields = _load(path)
    features = _check_features(path, fields.get("features"))
    count, time = features.shape[:2]
    lengths = _check_lengths(path, fields.get("lengths"), count, time)
    names = _check_label_names(path, fields.get("label_names"))
    labels = _check_labels(path, fields.get("labels"), count, names)
    return TimeSeriesExamples(features, lengths, labels, names, path)


def fit_to_model(examples: TimeSeriesExamples, channels, max_time):
    """Checks that a model of `channels` channels and up to `max_time` steps takes `examples`, and cuts their time
    axis to `max_time` where only padding lies beyond it (in place).

    Raises:
        ValueError: another channel count, or a sequence longer than `max_time`; named with the file and field.
    """
    if examples.channels != channels:
        raise ValueError(f"{examples.source}: field 'features' has {examples.channels} channels; the model takes "
                         f"{channels}")
    if examples.time > max_time and int(examples.lengths.max()) > max_time:
        raise ValueError(f"{examples.source}: field 'lengths' reaches {int(examples.lengths.max())} steps; the "
                         f"model takes up to {max_time} (--max_time)")
    if examples.time > max_time:  # only padding beyond the model's steps
        examples.features = examples.features[:, :max_time]


def training_label_names(examples: TimeSeriesExamples) -> List[str]:
    """The classes of a training split: its `label_names`, else its distinct labels in order (numerically when
    every label is an integer)."""
    if examples.labels is None:
        raise ValueError(f"{examples.source}: field 'labels' missing: a training split must be labeled")
    if examples.label_names is not None:
        return list(examples.label_names)
    distinct = sorted(set(examples.labels.tolist()))
    if all(name.lstrip("-").isdigit() for name in distinct):
        distinct.sort(key=int)
    return distinct


def label_ids(examples: TimeSeriesExamples, label_names, training_source) -> np.ndarray:
    """(N,) int32 class ids of the labels in `label_names` (the training split's).

    Args:
        examples: a labeled split.
        label_names: the training split's classes.
        training_source: where the classes come from, named when a label is not among them ("the training split
            train.npz", "the training run of out/gait").

    Raises:
        ValueError: no labels, or a label the training split does not have (naming the file, field and example).
    """
    if examples.labels is None:
        raise ValueError(f"{examples.source}: field 'labels' missing: a split to evaluate must be labeled")
    index = {name: i for i, name in enumerate(label_names)}
    unknown = [i for i, label in enumerate(examples.labels.tolist()) if label not in index]
    if unknown:
        raise ValueError(f"{examples.source}: field 'labels' has {str(examples.labels[unknown[0]])!r} at example "
                         f"{unknown[0]}, not a class of {training_source} ({', '.join(label_names)})")
    return np.asarray([index[label] for label in examples.labels.tolist()], np.int32)


def channel_statistics(examples: TimeSeriesExamples):
    """Per-channel mean and standard deviation over every real step (padding left out): two lists of `channels`
    floats; a constant channel's deviation is 1 (it is only centred)."""
    real = examples.features[examples.mask().astype(bool)]  # (steps, channels)
    mean = real.mean(axis=0, dtype=np.float64)
    scale = real.std(axis=0, dtype=np.float64)
    scale[scale == 0] = 1.0
    return mean.tolist(), scale.tolist()


def time_series_dataset(examples: TimeSeriesExamples, labels, batch_size, is_training, seed=0):
    """A `tf.data.Dataset` of `(inputs, labels)` batches (inputs alone when `labels` is None): `input_features`
    (batch, time, channels) float32 and `input_mask` (batch, time) int32.

    Args:
        examples: the split.
        labels: (N,) int class ids, or None.
        batch_size: batch size.
        is_training: repeat forever, each epoch shuffled in an order of (`seed`, epoch) alone
            (`data.epochs.repeat_shuffled`), and drop the last partial batch.
        seed: the shuffle seed.
    """
    import tensorflow as tf

    from official_bert.data.epochs import repeat_shuffled

    columns = {"input_features": examples.features, "input_mask": examples.mask()}
    if labels is not None:
        columns["label"] = np.asarray(labels, np.int32)
    dataset = repeat_shuffled(columns, seed) if is_training else tf.data.Dataset.from_tensor_slices(columns)
    dataset = dataset.batch(batch_size, drop_remainder=is_training)
    if labels is not None:
        dataset = dataset.map(tf.autograph.experimental.do_not_convert(  # plain TF: no conversion cost
            lambda batch: ({name: batch[name] for name in ("input_features", "input_mask")}, batch["label"])))
    return dataset.prefetch(tf.data.AUTOTUNE)
