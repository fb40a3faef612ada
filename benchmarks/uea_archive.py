"""The UEA archive's multivariate sets that the `sktime` wheel ships (BasicMotions, JapaneseVowels), as our `.npz`
sequence files (`official_bert.data.time_series`): read with sktime's own `.ts` reader, for the tests, the
benchmarks and the docs only (the library does not depend on sktime).

    python -m benchmarks.uea_archive --dataset=JapaneseVowels --out_dir=out/uea   # <dataset>_TRAIN.npz, _TEST.npz

>>> write_npz("BasicMotions", "TRAIN", "out/basic_motions_train.npz")
(40, 100, 6)
"""

import argparse
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


def longest(dataset):
    """The longest sequence of both splits: the time axis that lets a model trained on TRAIN read TEST."""
    return max(max(len(sequence) for sequence in read_ts(dataset, split)[0]) for split in ("TRAIN", "TEST"))


def main():
    parser = argparse.ArgumentParser(description="Writes a UEA set's TRAIN and TEST splits as our .npz files.")
    parser.add_argument("--dataset", choices=DATASETS, required=True)
    parser.add_argument("--out_dir", required=True, help="where <dataset>_TRAIN.npz and <dataset>_TEST.npz go")
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    max_time = longest(args.dataset)  # both splits padded alike
    for split in ("TRAIN", "TEST"):
        path = os.path.join(args.out_dir, f"{args.dataset}_{split}.npz")
        print(f"{path}: features {write_npz(args.dataset, split, path, max_time)}")


if __name__ == "__main__":
    main()
