"""An endless training stream whose every epoch is shuffled in an order fixed by (seed, epoch) alone.

`dataset.shuffle(n, seed, reshuffle_each_iteration=True).repeat()` draws each epoch's order from a seed
generator that every iterator of the dataset shares. Keras makes an iterator to look at the first batch before
the one it trains on, and that iterator's prefetching thread runs on into the next epochs, advancing the shared
generator as far as it got: on a training set of a few batches an epoch, the orders a run trained on depended on
thread timing, and a resumed `--deterministic` run trained on other batches than the unbroken one (issue 42).
Here each epoch is a shuffle of its own, seeded from the run's seed and the epoch number, so any iterator, started
anywhere, sees the same stream.
"""

import tensorflow as tf

# Epoch e of a run seeded s is shuffled with the op seed s * _EPOCH_STRIDE + e (distinct for e < _EPOCH_STRIDE).
_EPOCH_STRIDE = 1_000_003


def repeat_shuffled(dataset, size, seed):
    """`dataset` repeated forever, each epoch in its own order: a function of `seed` and the epoch number only.

    Args:
        dataset: a finite `tf.data.Dataset` of `size` elements.
        size: its number of elements (the shuffle buffer: a full shuffle).
        seed: the run's seed (int).
    """
    def epoch(number):  # int64 scalar
        return dataset.shuffle(size, seed=seed * _EPOCH_STRIDE + number, reshuffle_each_iteration=False)

    return tf.data.Dataset.counter().flat_map(epoch)
