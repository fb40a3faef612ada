"""run.json: what defines a training run, and the first difference between two."""

import hashlib

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
    assert run_record._first_difference(before, changed) == (
        "data[0] (/b/train.tsv)", {"bytes": 10, "sha256": "x"}, {"bytes": 11, "sha256": "y"})
