"""Tiny pre-training record files for tests: Google's feature names and types, random tokens."""

import numpy as np

SEQ, PREDICTIONS, VOCAB = 16, 4, 100  # sequence length, masked positions a record, vocab size


def write_records(path, count, seed):
    """`count` pre-training records in `path` (random tokens; 1 to 4 predictions each, so replicas of a batch hold
    different numbers of masked tokens), drawn with `seed`; returns `path`."""
    import tensorflow as tf

    rng = np.random.default_rng(seed)

    def ints(values):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=[int(v) for v in values]))

    with tf.io.TFRecordWriter(str(path)) as writer:
        for _ in range(count):
            length = int(rng.integers(8, SEQ + 1))
            ids = np.zeros(SEQ, np.int64)
            ids[:length] = rng.integers(5, VOCAB, length)
            used = int(rng.integers(1, PREDICTIONS + 1))
            positions = np.zeros(PREDICTIONS, np.int64)
            positions[:used] = np.sort(rng.choice(np.arange(1, length - 1), used, replace=False))
            labels = np.zeros(PREDICTIONS, np.int64)
            labels[:used] = ids[positions[:used]]
            weights = (np.arange(PREDICTIONS) < used).astype(np.float32)
            features = {"input_ids": ints(ids), "input_mask": ints(np.arange(SEQ) < length),
                        "segment_ids": ints((np.arange(SEQ) >= length // 2) & (np.arange(SEQ) < length)),
                        "masked_lm_positions": ints(positions), "masked_lm_ids": ints(labels),
                        "masked_lm_weights": tf.train.Feature(float_list=tf.train.FloatList(value=weights.tolist())),
                        "next_sentence_labels": ints([rng.integers(0, 2)])}
            writer.write(tf.train.Example(features=tf.train.Features(feature=features)).SerializeToString())
    return path
