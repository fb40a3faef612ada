"""Pre-training TFRecords in Google's format: writing shards, and parsing them into the encoder's input dict.

Each record is a `tf.train.Example` with the features of Google's `create_pretraining_data.py`, so files
written by either tool are read by both:

    input_ids, input_mask, segment_ids     int64 [max_seq_length]          (zero-padded)
    masked_lm_positions, masked_lm_ids     int64 [max_predictions_per_seq] (zero-padded)
    masked_lm_weights                      float [max_predictions_per_seq] (1.0 real, 0.0 padding)
    next_sentence_labels                   int64 [1]                       (1 = B is a random sentence)
"""

import contextlib
import logging
import os
import struct

import numpy as np
import tensorflow as tf

logger = logging.getLogger(__name__)

# Google's name -> the encoder / pretrainer input name.
FEATURE_NAMES = {"input_ids": "input_word_ids", "input_mask": "input_mask", "segment_ids": "input_type_ids",
                 "masked_lm_positions": "masked_lm_positions", "masked_lm_ids": "masked_lm_ids",
                 "masked_lm_weights": "masked_lm_weights", "next_sentence_labels": "next_sentence_labels"}


def feature_spec(max_seq_length, max_predictions_per_seq):
    """The `tf.io.parse_example` spec of Google's pre-training records."""
    seq = [max_seq_length]
    pred = [max_predictions_per_seq]
    return {"input_ids": tf.io.FixedLenFeature(seq, tf.int64),
            "input_mask": tf.io.FixedLenFeature(seq, tf.int64),
            "segment_ids": tf.io.FixedLenFeature(seq, tf.int64),
            "masked_lm_positions": tf.io.FixedLenFeature(pred, tf.int64),
            "masked_lm_ids": tf.io.FixedLenFeature(pred, tf.int64),
            "masked_lm_weights": tf.io.FixedLenFeature(pred, tf.float32),
            "next_sentence_labels": tf.io.FixedLenFeature([1], tf.int64)}


def instances_to_arrays(instances, max_seq_length, max_predictions_per_seq):
    """Pads `TrainingInstance`s into the batch dict `pretraining_dataset` yields (NumPy, int32 / float32).

    Raises:
        ValueError: an instance longer than max_seq_length or with more predictions than the cap.
    """
    n = len(instances)
    arrays = {"input_word_ids": np.zeros([n, max_seq_length], np.int32),
              "input_mask": np.zeros([n, max_seq_length], np.int32),
              "input_type_ids": np.zeros([n, max_seq_length], np.int32),
              "masked_lm_positions": np.zeros([n, max_predictions_per_seq], np.int32),
              "masked_lm_ids": np.zeros([n, max_predictions_per_seq], np.int32),
              "masked_lm_weights": np.zeros([n, max_predictions_per_seq], np.float32),
              "next_sentence_labels": np.zeros([n], np.int32)}
    for row, instance in enumerate(instances):
        length, predictions = len(instance.tokens), len(instance.masked_lm_positions)
        if length > max_seq_length or predictions > max_predictions_per_seq:
            raise ValueError(f"instance {row}: {length} tokens and {predictions} predictions; the records hold at "
                             f"most {max_seq_length} and {max_predictions_per_seq}")
        arrays["input_word_ids"][row, :length] = instance.tokens
        arrays["input_mask"][row, :length] = 1
        arrays["input_type_ids"][row, :length] = instance.segment_ids
        arrays["masked_lm_positions"][row, :predictions] = instance.masked_lm_positions
        arrays["masked_lm_ids"][row, :predictions] = instance.masked_lm_labels
        arrays["masked_lm_weights"][row, :predictions] = 1.0
        arrays["next_sentence_labels"][row] = int(instance.is_random_next)
    return arrays


def serialize_arrays(arrays):
    """Serializes each row of a batch dict (as `instances_to_arrays` gives) to a `tf.train.Example`.

    Returns:
        list of bytes, one per row.
    """
    columns = {google: np.asarray(arrays[ours]).tolist() for google, ours in FEATURE_NAMES.items()}
    records = []
    for row in range(len(columns["input_ids"])):
        example = tf.train.Example()
        feature = example.features.feature
        for name, values in columns.items():
            if name == "masked_lm_weights":
                feature[name].float_list.value.extend(values[row])
            elif name == "next_sentence_labels":
                feature[name].int64_list.value.append(values[row])
            else:
                feature[name].int64_list.value.extend(values[row])
        records.append(example.SerializeToString(deterministic=True))
    return records


def parse_batch(serialized, max_seq_length, max_predictions_per_seq):
    """Parses a batch of serialized records into the pretrainer's input dict.

    Args:
        serialized: string Tensor (batch,).

    Returns:
        dict: `input_word_ids`, `input_mask`, `input_type_ids` int32 (batch, seq); `masked_lm_positions`,
        `masked_lm_ids` int32 and `masked_lm_weights` float32 (batch, predictions); `next_sentence_labels`
        int32 (batch,).
    """
    parsed = tf.io.parse_example(serialized, feature_spec(max_seq_length, max_predictions_per_seq))
    out = {}
    for google, ours in FEATURE_NAMES.items():
        value = parsed[google]
        out[ours] = value if value.dtype == tf.float32 else tf.cast(value, tf.int32)
    out["next_sentence_labels"] = tf.reshape(out["next_sentence_labels"], [-1])  # (batch,)
    return out


def first_record(path):
    """The first record of an uncompressed TFRecord file, bytes, or None when the file is empty.

    Read with plain file reads, not `tf.data`: a run checks its files before its `tf.distribute` strategy starts, and
    an eager TensorFlow op then makes a `MultiWorkerMirroredStrategy` fail ("Collective ops must be configured at
    program startup").

    Raises:
        ValueError: the file ends inside its first record (not a TFRecord file).
    """
    from official_bert.text_files import open_binary

    with open_binary(path) as f:
        header = f.read(12)  # uint64 length, uint32 CRC of the length
        if not header:
            return None
        length = struct.unpack("<Q", header[:8])[0] if len(header) == 12 else -1
        data = f.read(length) if length >= 0 else b""
        if length < 0 or len(data) < length:
            raise ValueError(f"{path}: not a TFRecord file (it ends inside its first record)")
        return data


def check_record_file(path, max_seq_length, max_predictions_per_seq):
    """Reads the first record of a file and raises ValueError naming the file and feature if it does not fit.

    Returns:
        True if the file has a record, False if it is empty.
    """
    serialized = first_record(path)
    if serialized is None:
        return False
    example = tf.train.Example.FromString(serialized)
    expected = {"input_ids": max_seq_length, "input_mask": max_seq_length, "segment_ids": max_seq_length,
                "masked_lm_positions": max_predictions_per_seq, "masked_lm_ids": max_predictions_per_seq,
                "masked_lm_weights": max_predictions_per_seq, "next_sentence_labels": 1}
    for name, size in expected.items():
        if name not in example.features.feature:
            raise ValueError(f"{path}: first record has no feature '{name}'; expected Google's pre-training "
                             f"features {sorted(expected)}")
        feature = example.features.feature[name]
        kind = "float_list" if name == "masked_lm_weights" else "int64_list"
        values = getattr(feature, kind).value
        if feature.WhichOneof("kind") != kind or len(values) != size:
            raise ValueError(f"{path}: feature '{name}' of the first record is {feature.WhichOneof('kind')} "
                             f"with {len(values)} values; expected {kind} with {size} (max_seq_length="
                             f"{max_seq_length}, max_predictions_per_seq={max_predictions_per_seq})")
    return True


def output_paths(output_file, num_shards=1):
    """The files a run writes.

    Args:
        output_file: comma-separated files (Google's form; `num_shards` must be 1 or their number), or one
            name: with a `*`, each shard's `NNNNN-of-MMMMM` replaces it (so the same string is the glob that
            reads them back); without, shards are `<output_file>-NNNNN-of-MMMMM` (just `output_file` for 1).
        num_shards: number of files.

    Returns:
        list of str.
    """
    names = [p.strip() for p in output_file.split(",") if p.strip()]
    if not names:
        raise ValueError("no output file given")
    if len(names) > 1:
        if num_shards not in (1, len(names)):
            raise ValueError(f"{len(names)} output files listed but num_output_shards={num_shards}")
        return names
    if num_shards < 1:
        raise ValueError(f"num_output_shards={num_shards}: expected at least 1")
    name = names[0]
    if "*" in name:
        if name.count("*") > 1:
            raise ValueError(f"output file {name!r}: at most one '*'")
        return [name.replace("*", f"{i:05d}-of-{num_shards:05d}") for i in range(num_shards)]
    if num_shards == 1:
        return [name]
    return [f"{name}-{i:05d}-of-{num_shards:05d}" for i in range(num_shards)]


_FILE_ERRORS = (tf.errors.OpError, OSError)


class ShardedRecordWriter:
    """Writes records round-robin over several files; refuses to overwrite, and publishes files only when closed.

    Records go to `<path>.incomplete` and are renamed to `<path>` by `close()`, so a glob over the outputs never
    picks up a half-written file; leaving a `with` block on an exception removes them.

    Args:
        paths: the output files (see `output_paths`).

    Raises:
        FileExistsError: naming an output that already exists.
        ValueError: an output that cannot be written (its folder cannot be made, the file system refuses it), named.
    """

    def __init__(self, paths):
        existing = [p for p in paths if tf.io.gfile.exists(p)]
        if existing:
            raise FileExistsError(f"output file {existing[0]} already exists ({len(existing)} of {len(paths)} "
                                  "outputs do); remove them or choose another --output_file")
        if len(set(paths)) != len(paths):
            raise ValueError(f"output files repeat: {paths}")
        self.paths = list(paths)
        self.counts = [0] * len(paths)
        self._writers = []
        self._next = 0
        for path in paths:
            with self._writing(path):
                directory = os.path.dirname(path)
                if directory:
                    tf.io.gfile.makedirs(directory)
                self._writers.append(tf.io.TFRecordWriter(path + ".incomplete"))

    @contextlib.contextmanager
    def _writing(self, path):
        """Around creating or writing `path`: a file system error becomes a ValueError naming it, and no partial
        output is left."""
        try:
            yield
        except _FILE_ERRORS as error:
            self._discard()
            raise ValueError(f"output file {path} cannot be written ({getattr(error, 'message', None) or error}); "
                             f"choose another --output_file") from None

    def write(self, records):
        """Writes serialized records, each to the next file in turn."""
        for record in records:
            with self._writing(self.paths[self._next]):
                self._writers[self._next].write(record)
            self.counts[self._next] += 1
            self._next = (self._next + 1) % len(self._writers)

    def close(self):
        """Closes the files and renames them to their final names."""
        for writer, path, count in zip(self._writers, self.paths, self.counts):
            with self._writing(path):
                writer.close()
                tf.io.gfile.rename(path + ".incomplete", path, overwrite=False)
            logger.info("Wrote %d instances to %s", count, path)
        self._writers = []

    def _discard(self):
        """Closes the files and removes them (a failed run leaves no partial output behind)."""
        for writer, path in zip(self._writers, self.paths):
            try:
                writer.close()
                if tf.io.gfile.exists(path + ".incomplete"):
                    tf.io.gfile.remove(path + ".incomplete")
            except _FILE_ERRORS:
                pass  # the error being raised says what went wrong
        self._writers = []

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        else:
            self._discard()
