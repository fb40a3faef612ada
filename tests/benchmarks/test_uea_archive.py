"""Real data, no download: the UEA archive's BasicMotions and JapaneseVowels as `sktime` ships them, converted to our
`.npz` files (benchmarks.uea_archive), read by our reader, and a short real training run on BasicMotions through the
runner (in-process)."""

import numpy as np
import pytest

from benchmarks.uea_archive import read_ts, write_npz
from official_bert.data.time_series import read_time_series, training_label_names

pytestmark = pytest.mark.slow
pytest.importorskip("sktime")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("uea")
    paths = {}
    for dataset in ("BasicMotions", "JapaneseVowels"):
        for split in ("TRAIN", "TEST"):
            paths[dataset, split] = str(root / f"{dataset}_{split}.npz")
            write_npz(dataset, split, paths[dataset, split], max_time=29 if dataset == "JapaneseVowels" else None)
    return paths


@pytest.mark.parametrize("dataset,split,shape,steps,classes", [
    ("BasicMotions", "TRAIN", (40, 100, 6), (100, 100), 4), ("BasicMotions", "TEST", (40, 100, 6), (100, 100), 4),
    ("JapaneseVowels", "TRAIN", (270, 29, 12), (7, 26), 9), ("JapaneseVowels", "TEST", (370, 29, 12), (7, 29), 9)])
def test_the_archive_converts_to_our_files(files, dataset, split, shape, steps, classes):
    from sktime.datasets import load_from_tsfile

    from benchmarks.uea_archive import ts_file

    examples = read_time_series(files[dataset, split])
    assert examples.features.shape == shape
    assert (int(examples.lengths.min()), int(examples.lengths.max())) == steps
    assert len(training_label_names(examples)) == classes
    frames, labels = load_from_tsfile(ts_file(dataset, split), return_data_type="df-list")  # sktime's own reading
    for i in (0, len(frames) - 1):
        length = examples.lengths[i]
        np.testing.assert_array_equal(examples.features[i, :length], frames[i].to_numpy(np.float32))
        assert not examples.features[i, length:].any()  # zero-padded
    assert examples.labels.tolist() == [str(label) for label in labels]
    assert len(read_ts(dataset, split)[0]) == shape[0]


def test_a_short_run_learns_basic_motions(files, tmp_path):
    from official_bert.runner import RunConfig, run
    from official_bert.tasks.time_series import TimeSeriesClassificationTask

    task = TimeSeriesClassificationTask(files["BasicMotions", "TRAIN"], files["BasicMotions", "TEST"])
    config = RunConfig(model_dir=str(tmp_path / "motions"), num_train_steps=150, train_batch_size=16,
                       learning_rate=1e-3, checkpoint_steps=1000)
    config.max_seq_length = task.sequence_length(config)
    results = run(task, config)
    assert results["num_examples"] == 40 and sum(map(sum, results["confusion_matrix"])) == 40
    assert results["accuracy"] >= 0.9, results  # (1.0 at 100 and at 300 steps, seed 42)
