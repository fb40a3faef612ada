"""official_bert/data/pretraining_records.py: reading a record file's first record without tf.data."""

import pytest
import tensorflow as tf

from official_bert.data.pretraining_records import first_record


def test_the_first_record_is_tf_datas_and_an_empty_file_has_none(tmp_path):
    path = str(tmp_path / "x.tfrecord")
    with tf.io.TFRecordWriter(path) as writer:
        writer.write(b"first record")
        writer.write(b"second")
    assert first_record(path) == next(iter(tf.data.TFRecordDataset(path))).numpy() == b"first record"
    (tmp_path / "empty.tfrecord").write_bytes(b"")
    assert first_record(str(tmp_path / "empty.tfrecord")) is None


def test_a_file_that_ends_inside_its_first_record_is_an_error_naming_it(tmp_path):
    path = tmp_path / "cut.tfrecord"
    with tf.io.TFRecordWriter(str(path)) as writer:
        writer.write(b"a record of some length")
    whole = path.read_bytes()
    for cut in (whole[:5], whole[:20]):
        path.write_bytes(cut)
        with pytest.raises(ValueError, match=r"cut.tfrecord: not a TFRecord file \(it ends inside its first record\)"):
            first_record(str(path))
