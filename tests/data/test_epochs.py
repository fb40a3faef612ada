"""The endless shuffled training stream: every iterator of it, started anywhere, sees the same elements."""

import time

import numpy as np
import tensorflow as tf

from official_bert.data.epochs import repeat_shuffled


def _take(dataset, count):
    return [int(x) for x in dataset.take(count).as_numpy_iterator()]


def test_each_epoch_is_a_permutation_in_its_own_order():
    tf.random.set_seed(0)  # a global seed of 0 (--seed=0) is a seed like any other
    stream = _take(repeat_shuffled(np.arange(10), seed=42), 30)
    epochs = [stream[i:i + 10] for i in range(0, 30, 10)]
    assert all(sorted(epoch) == list(range(10)) for epoch in epochs)
    assert len({tuple(epoch) for epoch in epochs}) == 3
    assert _take(repeat_shuffled(np.arange(10), seed=43), 10) != epochs[0]


def test_a_second_iterator_sees_the_first_ones_stream_whatever_ran_before():
    """Keras looks at the first batch through an iterator of its own, whose prefetching runs on into later epochs;
    with `shuffle(reshuffle_each_iteration=True).repeat()` the iterator that trains then got other epoch orders
    (how many depended on thread timing), so a resumed run trained on other batches than the unbroken one."""
    def stream():
        return repeat_shuffled(np.arange(8), seed=7).batch(2).prefetch(tf.data.AUTOTUNE)

    fresh = [b.tolist() for b in stream().take(20).as_numpy_iterator()]
    dataset = stream()
    peek = iter(dataset)
    next(peek)
    time.sleep(0.3)  # the peeking iterator prefetches ahead, through several epochs
    del peek
    second = [b.tolist() for b in dataset.take(20).as_numpy_iterator()]
    assert second == fresh
    resumed = [b.tolist() for b in stream().skip(7).take(13).as_numpy_iterator()]  # a run resumed at step 7
    assert resumed == fresh[7:]
    assert np.asarray(fresh).size == 40


def test_rows_of_a_structure_stay_together():
    rows = list(repeat_shuffled({"a": np.arange(5), "b": np.arange(5) * 10}, seed=1).take(10).as_numpy_iterator())
    assert all(row["b"] == row["a"] * 10 for row in rows)
    assert sorted(int(row["a"]) for row in rows[:5]) == [0, 1, 2, 3, 4]
