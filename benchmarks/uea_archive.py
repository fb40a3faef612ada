"""The UEA archive's multivariate sets that the `sktime` wheel ships (BasicMotions, JapaneseVowels), as our `.npz`
sequence files (`official_bert.data.time_series`): read with sktime's own `.ts` reader, for the tests and
benchmarks only (the library does not depend on sktime).

>>> write_npz("BasicMotions", "TRAIN", "out/basic_motions_train.npz")
(40, 100, 6)
"""

import os

import numpy as np

DATASETS = ("BasicMotions", "JapaneseVowels")


def ts_file(dataset, split):
    """The `.ts` file of `dataset` ("BasicMotions", "JapaneseVowels") and `split` ("TRAIN", "TEST") in sktime."""
    import sktime

    return os.path.join(os.path.dirname(sktime.__file__), "datasets", "data", dataset, f"{dataset}_{split}.ts")


def read_ts(dataset, split):
    """`(sequences, labels)`: a list of (time_i, channels) float32 arrays and an array of label strings."""
    from sktime.datasets import load_from_tsfile

    frames, labels = load_from_tsfile(ts_file(dataset, split), return_data_type="df-list")
    return [frame.to_numpy(np.float32) for frame in frames], np.asarray(labels, dtype=str)


def write_npz(dataset, split, path, max_time=None):
    """Writes a split as `.npz` (`features` zero-padded to `max_time` or the split's longest, `lengths`, `labels`);
    returns the shape of `features`."""
    sequences, labels = read_ts(dataset, split)
    lengths = np.array([len(sequence) for sequence in sequences], np.int32)
    features = np.zeros((len(sequences), max_time or int(lengths.max()), sequences[0].shape[1]), np.float32)
    for i, sequence in enumerate(sequences):
        features[i, :len(sequence)] = sequence
    np.savez(path, features=features, lengths=lengths, labels=labels)
    return features.shape
