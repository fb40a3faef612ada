"""`dense_2d` computes what the Keras layer computes, in the ops TensorFlow's oneDNN rewrite fuses (2-D MatMul +
BiasAdd, the GELU as the plain op at inference), and leaves quantized layers to Keras."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from official_bert.layers import TransformerBlock
from official_bert.layers.activations import get_activation
from official_bert.layers.matmul_dense import dense_2d


def _built(layer, input_shape, seed=0):
    keras.utils.set_random_seed(seed)
    layer.build(input_shape)
    for variable in layer.weights:  # nonzero biases, so a missing bias would show
        variable.assign(np.random.default_rng(seed).normal(0, 0.3, variable.shape).astype("float32"))
    return layer


def _hidden(shape, seed=1):
    return np.random.default_rng(seed).normal(size=shape).astype("float32")


@pytest.mark.parametrize("make, input_shape", [
    (lambda: keras.layers.Dense(24, activation=get_activation("gelu")), (2, 5, 16)),
    (lambda: keras.layers.EinsumDense("abc,cde->abde", output_shape=(None, 4, 6), bias_axes="de"), (2, 5, 16)),
    (lambda: keras.layers.EinsumDense("abcd,cde->abe", output_shape=(None, 16), bias_axes="e"), (2, 5, 4, 6)),
])
def test_equals_the_layer_call(make, input_shape):
    layer = _built(make(), input_shape)
    x = _hidden(input_shape)
    expected = keras.ops.convert_to_numpy(layer(x))
    got = keras.ops.convert_to_numpy(dense_2d(layer, x))
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_an_activation_argument_replaces_the_layers_own():
    layer = _built(keras.layers.Dense(8, activation="relu"), (3, 16))
    x = _hidden((3, 16))
    linear = keras.ops.convert_to_numpy(dense_2d(layer, x, activation=lambda y: y))
    np.testing.assert_allclose(np.maximum(linear, 0), keras.ops.convert_to_numpy(layer(x)), atol=1e-6)
    assert (linear < 0).any()


def test_computes_in_the_layers_dtype_under_mixed_precision():
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        layer = _built(keras.layers.EinsumDense("abc,cde->abde", output_shape=(None, 4, 6), bias_axes="de"),
                       (2, 5, 16))
    finally:
        keras.mixed_precision.set_global_policy("float32")
    x = _hidden((2, 5, 16))
    got = dense_2d(layer, x)
    assert keras.backend.standardize_dtype(got.dtype) == "bfloat16"
    np.testing.assert_allclose(keras.ops.convert_to_numpy(keras.ops.cast(got, "float32")),
                               keras.ops.convert_to_numpy(keras.ops.cast(layer(x), "float32")), atol=0.05)


def test_a_quantized_layer_is_called_as_keras_computes_it():
    layer = _built(keras.layers.Dense(8), (3, 16))
    layer.quantize("int8")
    x = _hidden((3, 16))
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(dense_2d(layer, x)),
                                  keras.ops.convert_to_numpy(layer(x)))


def test_an_equation_that_is_not_a_trailing_matmul_is_refused():
    layer = keras.layers.EinsumDense("abc,bd->acd", output_shape=(16, 8))
    layer.build((2, 5, 16))
    with pytest.raises(ValueError, match="not a matmul over the input's trailing axes"):
        dense_2d(layer, _hidden((2, 5, 16)))


def test_a_block_at_inference_runs_matmuls_with_bias_adds_and_no_einsum():
    """The traced inference graph holds the ops the oneDNN rewrite fuses: each MatMul feeds a BiasAdd, the
    feed-forward GELU is the plain `Gelu` pattern on one of them, and no Einsum or custom gradient is left."""
    block = TransformerBlock(32, 4, 64, "gelu", 0.1, 0.1, 1e-12, 0.02)
    block.build((None, None, 32))
    hidden, mask = tf.constant(_hidden((2, 7, 32))), tf.ones((2, 7), tf.int32)
    graph = tf.function(lambda h, m: block(h, m, training=False)).get_concrete_function(hidden, mask).graph
    ops_by_type = {}
    for op in graph.get_operations():
        ops_by_type.setdefault(op.type, []).append(op)
    assert "Einsum" not in ops_by_type and "IdentityN" not in ops_by_type
    matmuls = ops_by_type["MatMul"]
    assert len(matmuls) == 6  # query, key, value, attention output, intermediate, output
    for matmul in matmuls:
        assert [consumer.type for consumer in matmul.outputs[0].consumers()] == ["BiasAdd"]
    assert "Erfc" in ops_by_type  # tf.nn.gelu's exact form


def test_a_block_trains_and_infers_the_same_function():
    block = TransformerBlock(32, 4, 64, "gelu", 0.0, 0.0, 1e-12, 0.02)
    block.build((None, None, 32))
    hidden, mask = _hidden((2, 7, 32)), np.ones((2, 7), "int32")
    np.testing.assert_allclose(keras.ops.convert_to_numpy(block(hidden, mask, training=True)),
                               keras.ops.convert_to_numpy(block(hidden, mask, training=False)), atol=1e-5)
