"""run.json: what defines a training run, and the first difference between two."""

import hashlib

import pytest

from official_bert import model_dir as model_dirs
from official_bert import run_record


def test_a_file_is_fingerprinted_by_size_and_sha256(tmp_path):
    path = tmp_path / "train.tsv"
    path.write_bytes(b"a\tb\n" * 1000)
    assert run_record.file_fingerprint(str(path)) == {
        "file": str(path), "bytes": 4000, "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}


def test_large_data_is_fingerprinted_by_its_first_and_last_mib(tmp_path):
    path = tmp_path / "corpus.tfrecord"
    head, middle, tail = b"h" * (1 << 20), b"m" * 10, b"t" * (1 << 20)
    path.write_bytes(head + middle + tail)
    fingerprint = run_record.file_fingerprint(str(path), sampled=True)
    assert fingerprint["sampled"] and fingerprint["bytes"] == len(head + middle + tail)
    assert fingerprint["sha256"] == hashlib.sha256(head + (middle + tail)[-(1 << 20):]).hexdigest()


def test_the_first_difference_is_named_and_a_data_file_is_compared_by_content():
    before = {"task": {"kind": "classification"}, "flags": {"seed": 1, "learning_rate": 2e-5},
              "data": [{"file": "/a/train.tsv", "bytes": 10, "sha256": "x"}]}
    moved = {**before, "data": [{"file": "/b/train.tsv", "bytes": 10, "sha256": "x"}]}
    assert run_record._first_difference(before, moved) is None
    assert run_record._first_difference(before, {**before, "flags": {"seed": 2, "learning_rate": 3e-5}}) == (
        "flags.seed", 1, 2)
    changed = {**before, "data": [{"file": "/b/train.tsv", "bytes": 11, "sha256": "y"}]}
    assert run_record._first_difference(before, changed) == ("data[0]", before["data"][0], changed["data"][0])


def _record(kind, task, flags, data):
    return {"data": [data], "flags": flags, "task": {"kind": kind, "task": task}}  # (run.json's keys are sorted)


def test_a_model_dir_of_another_task_kind_is_named_so_and_a_data_file_with_its_own_fingerprint(tmp_path):
    """A classification run into a NER model_dir: the message says it holds a tagging run (the kind is compared
    first), not that data[0] differs; where only the data differ, each file is named with its own fingerprint."""
    (tmp_path / model_dirs.WEIGHTS_FILE).write_bytes(b"trained")  # progress: a resume would be refused
    conll = {"file": "/data/conll/train.txt", "bytes": 19696, "sha256": "c0"}
    mrpc = {"file": "/data/MRPC/train.tsv", "bytes": 15356, "sha256": "35"}
    run_record.write_run_record(str(tmp_path), _record("tagging", "ner", {"seed": 1}, conll))
    with pytest.raises(ValueError) as error:
        run_record.check_same_training(str(tmp_path), _record("classification", "MRPC", {"seed": 2}, mrpc))
    assert str(error.value) == (f"{tmp_path} holds a tagging run (task 'ner'), and this is a classification run "
                                f"(task 'MRPC'); pass --overwrite to start over there, or use another --model_dir")
    with pytest.raises(ValueError, match=r"holds a classification run \(task 'MRPC'\), and this is a classification "
                                         r"run \(task 'SST-2'\)"):
        run_record.write_run_record(str(tmp_path), _record("classification", "MRPC", {"seed": 1}, mrpc))
        run_record.check_same_training(str(tmp_path), _record("classification", "SST-2", {"seed": 1}, conll))
    with pytest.raises(ValueError, match=r"holds another training run: flags.seed was 1, this run has 2;"):
        run_record.check_same_training(str(tmp_path), _record("classification", "MRPC", {"seed": 2}, conll))
    with pytest.raises(ValueError) as error:
        run_record.check_same_training(str(tmp_path), _record("classification", "MRPC", {"seed": 1}, conll))
    assert str(error.value).startswith(
        f"{tmp_path} holds another training run: data[0] (/data/conll/train.txt) has {{'bytes': 19696, 'sha256': "
        f"'c0'}}, the earlier run's (/data/MRPC/train.tsv) had {{'bytes': 15356, 'sha256': '35'}}; pass --overwrite")
    tfds = {"source": "tfds:glue/mrpc[train]"}
    with pytest.raises(ValueError, match=r"data\[0\] was '/data/MRPC/train.tsv', this run has 'tfds:glue/mrpc"):
        run_record.check_same_training(str(tmp_path), _record("classification", "MRPC", {"seed": 1}, tfds))
    run_record.check_same_training(str(tmp_path), _record("classification", "MRPC", {"seed": 1},
                                                          {**mrpc, "file": "/elsewhere/train.tsv"}))
