"""The teacher's logits of every training example, computed once before distillation (`--cache_teacher`).

Without a cache the frozen teacher runs a forward pass on every batch of every epoch. With one, it runs once over
the first epoch of the task's own training stream; each later batch carries its examples' logits, found by a
fingerprint of the example's real pieces (word and segment ids under `input_mask`), so any order, batch size or
batch padding of the same examples finds them. The teacher runs in inference mode (no dropout), so its logits
are the same numbers in every epoch: caching changes the cost, not the training.
"""

import logging
import math

import keras
import numpy as np
import tensorflow as tf

logger = logging.getLogger(__name__)

# The key of the cached logits in a training batch's inputs dict (the `Distiller` reads and strips it).
TEACHER_LOGITS = "teacher_logits"


def example_keys(inputs, seq_length):
    """A 64-bit fingerprint of each example of a batch, the same at any batch padding.

    Args:
        inputs: the encoder's dict of (batch, length) int tensors, `length <= seq_length`; `input_mask` is 1 on
            each row's real pieces.
        seq_length: the packed sequence length the rows are padded back to before hashing.

    Returns:
        (batch,) int64.
    """
    mask = tf.cast(inputs["input_mask"], tf.int32)  # (batch, length)
    parts = [tf.cast(inputs["input_word_ids"], tf.int32) * mask, tf.cast(inputs["input_type_ids"], tf.int32) * mask,
             mask]
    padding = [[0, 0], [0, seq_length - tf.shape(mask)[1]]]
    rows = tf.concat([tf.pad(part, padding) for part in parts], axis=1)  # (batch, 3 * seq_length)
    return tf.reshape(tf.bitcast(tf.fingerprint(rows), tf.int64), [-1])  # fingerprint: (batch, 8) uint8


class TeacherCache:
    """Teacher logits by example fingerprint, attached to training batches.

    Args:
        keys: (examples,) int64 `example_keys`, unique.
        logits: the teacher's outputs for those examples, as it returns them (one array, or a dict such as the
            span labeler's); each (examples, ...) float32, per-piece outputs padded to the full sequence length.
        per_piece: the outputs have a sequence axis (axis 1), cut to each batch's length when attached.
        seq_length: the full sequence length.
    """

    def __init__(self, keys, logits, per_piece, seq_length):
        self.num_examples = len(keys)
        self.per_piece, self.seq_length = per_piece, seq_length
        self._table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(tf.constant(keys, tf.int64),
                                                tf.range(len(keys), dtype=tf.int64)), default_value=-1)
        # Variables, not constants: the dataset's map function captures a handle instead of copying the arrays.
        self._logits = keras.tree.map_structure(lambda v: tf.Variable(v, trainable=False), logits)

    def attach(self, dataset):
        """Adds `inputs[TEACHER_LOGITS]` (the cached logits of the batch's examples, cut to its length) to every
        `(inputs, labels)` batch of `dataset`.

        Raises (when the batch is read):
            tf.errors.InvalidArgumentError: an example the cache does not hold.
        """

        def add_logits(inputs, labels):
            rows = self._table.lookup(example_keys(inputs, self.seq_length))  # (batch,)
            found = tf.debugging.assert_non_negative(
                rows, message="--cache_teacher: a training example is not in the teacher cache (the task's training "
                              "stream did not cover every example in its first epoch)")
            with tf.control_dependencies([found]):  # checked before the gathers, which would fail on -1 first
                rows = tf.identity(rows)
            length = tf.shape(inputs["input_mask"])[1]

            def gather(values):
                batch = tf.gather(values, rows)  # (batch, ...)
                return batch[:, :length] if self.per_piece else batch

            return {**inputs, TEACHER_LOGITS: keras.tree.map_structure(gather, self._logits)}, labels

        return dataset.map(tf.autograph.experimental.do_not_convert(add_logits),  # plain TF: no conversion cost
                           num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)


def build_teacher_cache(teacher, dataset, num_examples, batch_size, seq_length, per_piece):
    """Runs `teacher` (inference mode) once over the first epoch of a training stream.

    Args:
        teacher: the trained task model.
        dataset: the task's training stream of `(inputs, labels)` batches of `batch_size`, shuffled before it
            repeats (its first `num_examples` examples are one epoch).
        num_examples: examples in one epoch.
        batch_size: the stream's batch size.
        seq_length: the full sequence length (per-piece outputs are padded to it).
        per_piece: the teacher's outputs have a sequence axis (tagging, SQuAD).

    Returns:
        a `TeacherCache` of the epoch's distinct examples (identical examples share one entry).
    """
    num_batches = math.ceil(num_examples / batch_size)
    predict = tf.function(lambda inputs: teacher(inputs, training=False), reduce_retracing=True, autograph=False)
    keys, outputs = [], []
    report_every = max(1, num_batches // 10)
    for step, (inputs, _) in enumerate(dataset.take(num_batches)):
        logits = keras.tree.map_structure(np.asarray, predict(inputs))
        if per_piece:  # (batch, length, ...) -> (batch, seq_length, ...); the padded positions are masked out
            logits = keras.tree.map_structure(
                lambda v: np.pad(v, [(0, 0), (0, seq_length - v.shape[1])] + [(0, 0)] * (v.ndim - 2)), logits)
        keys.append(example_keys(inputs, seq_length).numpy())
        outputs.append(logits)
        if (step + 1) % report_every == 0 or step + 1 == num_batches:
            logger.info("Teacher logits cached: batch %d/%d", step + 1, num_batches)
    keys = np.concatenate(keys)
    unique_keys, first = np.unique(keys, return_index=True)
    logits = keras.tree.map_structure(lambda *parts: np.concatenate(parts)[first].astype(np.float32), *outputs)
    logger.info("Cached the teacher's logits of %d distinct examples (%d in the epoch)", len(unique_keys),
                num_examples)
    return TeacherCache(unique_keys, logits, per_piece, seq_length)
