"""An endless training stream whose every epoch is shuffled in an order fixed by (seed, epoch) alone.

`dataset.shuffle(n, seed, reshuffle_each_iteration=True).repeat()` draws each epoch's order from a seed
generator that every iterator of the dataset shares. Keras makes an iterator to look at the first batch before
the one it trains on, and that iterator's prefetching thread runs on into the next epochs, advancing the shared
generator as far as it got: on a training set of a few batches an epoch, the orders a run trained on depended on
thread timing, and a resumed `--deterministic` run trained on other batches than the unbroken one (issue 42).
Here each epoch's order is a stateless permutation of (seed, epoch), so any iterator, started anywhere, sees the
same stream, whatever TensorFlow's global seed.
"""

import numpy as np
import tensorflow as tf


def repeat_shuffled(elements, seed):
    """The rows of `elements`, repeated forever, each epoch in its own order: a function of `seed` and the epoch
    number only.

    Args:
        elements: an array (a list is one), or a dict or tuple of arrays with the same first dimension (the
            rows), as `tf.data.Dataset.from_tensor_slices` takes.
        seed: the run's seed (int).

    Returns:
        A `tf.data.Dataset` of rows, as `from_tensor_slices(elements)` gives them.
    """
    if isinstance(elements, list):
        elements = np.asarray(elements)
    tensors = tf.nest.map_structure(tf.convert_to_tensor, elements)
    size = tf.shape(tf.nest.flatten(tensors)[0], out_type=tf.int64)[0]

    @tf.autograph.experimental.do_not_convert  # plain TF: no conversion cost at each start
    def epoch_order(number):  # (rows,) int64: epoch `number`'s permutation
        key = tf.stack([tf.constant(seed, tf.int64), number])
        return tf.data.Dataset.from_tensor_slices(tf.random.experimental.stateless_shuffle(tf.range(size), key))

    @tf.autograph.experimental.do_not_convert
    def row(index):
        return tf.nest.map_structure(lambda values: tf.gather(values, index), tensors)

    return tf.data.Dataset.counter().flat_map(epoch_order).map(row)
