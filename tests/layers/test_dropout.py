"""official_bert.layers.dropout: the same masks as Keras' dropout without XLA, and the right statistics, fast, under
XLA."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from official_bert.layers.dropout import Dropout, uniform


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_the_masks_are_keras_own_bit_for_bit_without_xla(dtype):
    inputs = tf.cast(tf.random.stateless_normal((4, 8, 30, 30), seed=[1, 2]), dtype)
    ours, keras_own = Dropout(0.1, seed=3, dtype=dtype), keras.layers.Dropout(0.1, seed=3, dtype=dtype)
    for call in (lambda layer: layer(inputs, training=True), tf.function(lambda layer: layer(inputs, training=True))):
        for _ in range(2):  # (consecutive draws of one seed generator)
            np.testing.assert_array_equal(np.asarray(call(ours), np.float32), np.asarray(call(keras_own), np.float32))


def test_uniform_draws_as_keras_random_uniform():
    ours, theirs = keras.random.SeedGenerator(5), keras.random.SeedGenerator(5)
    for _ in range(2):
        np.testing.assert_array_equal(uniform((16, 29), ours), keras.random.uniform((16, 29), seed=theirs))


def test_under_xla_it_keeps_the_right_share_and_draws_a_new_mask_each_step():
    layer = Dropout(0.1, seed=7)
    inputs = tf.ones((16, 8, 30, 30))
    step = tf.function(lambda: layer(inputs, training=True), jit_compile=True)
    first, second = step().numpy(), step().numpy()
    assert set(np.unique(first)) == {0.0, np.float32(1 / 0.9)}
    kept, size = (first != 0).mean(), first.size
    assert abs(kept - 0.9) < 4 * np.sqrt(0.9 * 0.1 / size)
    assert (first != second).any()


def test_identity_when_not_training_and_a_saved_model_file_round_trip(tmp_path):
    inputs = np.ones((2, 5), np.float32)
    layer = Dropout(0.5, seed=1)
    np.testing.assert_array_equal(layer(inputs), inputs)
    model = keras.Sequential([keras.Input((5,)), layer])
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    assert type(loaded.layers[0]) is Dropout and loaded.layers[0].rate == 0.5
