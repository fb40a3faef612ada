"""fused_training_ops: the XLA-compiled GELU and LayerNorm equal PyTorch's in values and gradients, and a training
call on TensorFlow uses them where an inference call does not."""

import keras
import numpy as np
import pytest

from official_bert.layers import TransformerBlock, fused_training_ops

tf = pytest.importorskip("tensorflow")
torch = pytest.importorskip("torch")

pytestmark = pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="TensorFlow-only kernels")


def _values_and_gradients(fn, inputs, upstream):
    """fn(*inputs) and the gradient of sum(fn(*inputs) * upstream) at each input, as numpy float32."""
    inputs = [tf.constant(value) for value in inputs]
    with tf.GradientTape() as tape:
        tape.watch(inputs)
        out = fn(*inputs)
    grads = tape.gradient(out, inputs, output_gradients=tf.constant(upstream, out.dtype))
    return [np.asarray(tf.cast(t, tf.float32)) for t in [out] + grads]


@pytest.mark.parametrize("name, approximate", [("gelu", "none"), ("gelu_new", "tanh"), ("gelu_pytorch_tanh", "tanh")])
def test_gelu_and_its_gradient_equal_torch(name, approximate):
    rng = np.random.default_rng(0)
    x = np.concatenate([np.linspace(-6, 6, 2001), rng.standard_normal(4095) * 3]).astype(np.float32).reshape(2, 3, -1)
    upstream = rng.standard_normal(x.shape).astype(np.float32)
    value, grad = _values_and_gradients(fused_training_ops.gelu(name), [x], upstream)
    x_torch = torch.from_numpy(x).requires_grad_()
    expected = torch.nn.functional.gelu(x_torch, approximate=approximate)
    expected.backward(torch.from_numpy(upstream))
    np.testing.assert_allclose(value, expected.detach().numpy(), atol=1e-6, rtol=1e-6)
    np.testing.assert_allclose(grad, x_torch.grad.numpy(), atol=1e-5, rtol=1e-5)


def test_bfloat16_gelu_stays_bfloat16_and_rounds_the_float32_result_once():
    x = np.random.default_rng(1).standard_normal((64, 96)).astype(np.float32) * 3
    upstream = np.ones_like(x)
    gelu = fused_training_ops.gelu("gelu")
    x_bf16 = tf.cast(x, tf.bfloat16)
    out = gelu(x_bf16)
    assert out.dtype == tf.bfloat16
    rounded_input = tf.cast(x_bf16, tf.float32).numpy()
    value_f32, grad_f32 = _values_and_gradients(gelu, [rounded_input], upstream)
    np.testing.assert_array_equal(np.asarray(tf.cast(out, tf.float32)),
                                  np.asarray(tf.cast(tf.cast(value_f32, tf.bfloat16), tf.float32)))
    with tf.GradientTape() as tape:
        tape.watch(x_bf16)
        y = gelu(x_bf16)
    grad = tape.gradient(y, x_bf16)
    assert grad.dtype == tf.bfloat16
    np.testing.assert_array_equal(np.asarray(tf.cast(grad, tf.float32)),
                                  np.asarray(tf.cast(tf.cast(grad_f32, tf.bfloat16), tf.float32)))


def test_activations_other_than_gelu_have_no_kernel():
    assert fused_training_ops.gelu("relu") is None
    assert fused_training_ops.gelu("silu") is None


def _layer_norm(width, epsilon, seed, **kwargs):
    layer = keras.layers.LayerNormalization(epsilon=epsilon, dtype="float32", **kwargs)
    layer.build((None, None, width))
    rng = np.random.default_rng(seed)
    for weight in layer.weights:
        weight.assign(rng.standard_normal(weight.shape).astype(np.float32))
    return layer


@pytest.mark.parametrize("epsilon", [1e-12, 1e-5])
def test_layer_norm_and_its_gradients_equal_torch(epsilon):
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((3, 17, 64)) * 4 + 2).astype(np.float32)
    upstream = rng.standard_normal(x.shape).astype(np.float32)
    layer = _layer_norm(64, epsilon, seed=3)
    gamma, beta = (np.asarray(w) for w in (layer.gamma, layer.beta))
    value, dx, dgamma, dbeta = _values_and_gradients(
        lambda x, g, b: _normalize_with(layer, x, g, b), [x, gamma, beta], upstream)
    torch_inputs = [torch.from_numpy(a).requires_grad_() for a in (x, gamma, beta)]
    expected = torch.nn.functional.layer_norm(torch_inputs[0], (64,), torch_inputs[1], torch_inputs[2], epsilon)
    expected.backward(torch.from_numpy(upstream))
    np.testing.assert_allclose(value, expected.detach().numpy(), atol=2e-5, rtol=1e-5)
    for ours, theirs in zip((dx, dgamma, dbeta), torch_inputs):
        np.testing.assert_allclose(ours, theirs.grad.numpy(), atol=1e-4, rtol=1e-5)


def _normalize_with(layer, x, gamma, beta):
    """fused_training_ops.layer_norm of `layer` with its gamma and beta replaced by the tensors given (to take
    their gradients)."""
    class Weights:
        axis, center, scale, rms_scaling, epsilon = layer.axis, True, True, False, layer.epsilon

    Weights.gamma, Weights.beta = gamma, beta
    return fused_training_ops.layer_norm(Weights, x, use_kernels=True)


def test_layer_norm_gradients_reach_the_layers_variables():
    layer = _layer_norm(32, 1e-12, seed=4)
    x = tf.constant(np.random.default_rng(5).standard_normal((2, 5, 32)).astype(np.float32))
    grads = []
    for fn in (lambda: fused_training_ops.layer_norm(layer, x, use_kernels=True), lambda: layer(x)):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(fn() ** 3)
        grads.append(tape.gradient(loss, [layer.gamma, layer.beta]))
    for ours, keras_grad in zip(*grads):
        np.testing.assert_allclose(np.asarray(ours), np.asarray(keras_grad), atol=1e-4, rtol=1e-5)


def test_a_layer_norm_of_another_kind_is_called_as_keras_computes_it():
    layer = _layer_norm(32, 1e-6, seed=6, center=False)  # no beta
    x = np.random.default_rng(7).standard_normal((2, 5, 32)).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(fused_training_ops.layer_norm(layer, x, use_kernels=True)),
                                  np.asarray(layer(x)))


def _block(fused_training_kernels=True):
    keras.utils.set_random_seed(0)
    block = TransformerBlock(hidden_size=64, num_heads=4, intermediate_size=128, hidden_act="gelu",
                             hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, layer_norm_eps=1e-12,
                             initializer_range=0.5, fused_training_kernels=fused_training_kernels)
    block.build((None, None, 64))
    return block


def _xla_functions(fn):
    """How many `jit_compile` function calls the graph of `fn` makes."""
    graph_def = tf.function(fn).get_concrete_function().graph.as_graph_def()
    nodes = list(graph_def.node) + [node for function in graph_def.library.function for node in function.node_def]
    return sum(1 for node in nodes if node.attr["_XlaMustCompile"].b)


def test_a_training_call_uses_the_kernels_and_has_the_plain_path_gradients():
    block, plain_block = _block(), _block(fused_training_kernels=False)
    plain_block.set_weights(block.get_weights())
    rng = np.random.default_rng(8)
    x = tf.constant(rng.standard_normal((2, 7, 64)).astype(np.float32))
    mask = tf.constant([[1] * 7, [1] * 4 + [0] * 3])
    assert _xla_functions(lambda: block(x, mask, training=True)) > 0
    assert _xla_functions(lambda: block(x, mask, training=False)) == 0

    def gradients(block):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(block(x, mask, training=True) * tf.sin(tf.range(64, dtype=tf.float32)))
        return tape.gradient(loss, block.trainable_variables)

    fused = gradients(block)
    assert _xla_functions(lambda: plain_block(x, mask, training=True)) == 0
    assert not TransformerBlock.from_config(plain_block.get_config()).fused_training_kernels
    plain = gradients(plain_block)
    assert len(fused) == len(plain) == len(block.trainable_variables)
    for variable, ours, reference in zip(block.trainable_variables, fused, plain):
        np.testing.assert_allclose(np.asarray(ours), np.asarray(reference), atol=1e-4, rtol=1e-4,
                                   err_msg=variable.path)
