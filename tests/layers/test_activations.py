"""get_activation: BERT's activations and their gradients equal PyTorch's, in float32 and, rounded once, in
bfloat16."""

import math

import numpy as np
import pytest

from official_bert.layers.activations import get_activation

torch = pytest.importorskip("torch")

X = np.linspace(-6.0, 6.0, 2001, dtype=np.float32)


@pytest.mark.parametrize("name, approximate", [("gelu", "none"), ("gelu_new", "tanh"), ("gelu_pytorch_tanh", "tanh")])
def test_gelus_equal_torch_in_float32(name, approximate):
    expected = torch.nn.functional.gelu(torch.from_numpy(X), approximate=approximate).numpy()
    np.testing.assert_allclose(np.asarray(get_activation(name)(X)), expected, atol=1e-6, rtol=1e-6)


def _gelu_float64(x, approximate):
    x = x.astype(np.float64)
    if approximate:
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


@pytest.mark.parametrize("name, approximate", [("gelu", False), ("gelu_new", True)])
def test_bfloat16_gelus_stay_bfloat16_and_are_rounded_once(name, approximate):
    """Computed in float32 and rounded once: within half a bfloat16 unit (2^-8, relative) of the exact value;
    TensorFlow's bfloat16 erf/tanh kernels miss that bound."""
    import keras

    x = keras.ops.cast(X, "bfloat16")
    out = get_activation(name)(x)
    assert out.dtype == "bfloat16"
    exact = _gelu_float64(np.asarray(keras.ops.cast(x, "float32")), approximate)  # of the rounded input
    error = np.abs(np.asarray(keras.ops.cast(out, "float32"), np.float64) - exact)
    # 1e-6: float32's own floor, where 1 + tanh(...) cancels to 0 below x = -5.5.
    assert np.all(error <= 2 ** -8 * np.abs(exact) + 1e-6)


def _gradient(fn, x):
    import tensorflow as tf

    x = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = fn(x)
    return tape.gradient(y, x)  # d sum(y) / dx


@pytest.mark.parametrize("name, approximate", [("gelu", "none"), ("gelu_new", "tanh")])
def test_gelu_gradients_equal_torch_autograd(name, approximate):
    x = torch.from_numpy(X).requires_grad_()
    torch.nn.functional.gelu(x, approximate=approximate).sum().backward()
    # float32 rounding: a few units in the last place of slopes up to ~1.1
    np.testing.assert_allclose(_gradient(get_activation(name), X).numpy(), x.grad.numpy(), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name, approximate", [("gelu", "none"), ("gelu_new", "tanh")])
def test_bfloat16_gelu_gradient_is_the_float32_slope_rounded_once(name, approximate):
    import keras

    x = keras.ops.cast(X, "bfloat16")
    grad = _gradient(get_activation(name), x)
    assert grad.dtype == "bfloat16"
    rounded_input = torch.from_numpy(np.asarray(keras.ops.cast(x, "float32"))).requires_grad_()
    torch.nn.functional.gelu(rounded_input, approximate=approximate).sum().backward()
    expected = rounded_input.grad.to(torch.bfloat16).float().numpy()
    np.testing.assert_allclose(np.asarray(keras.ops.cast(grad, "float32")), expected, atol=2 ** -8, rtol=2 ** -8)


def test_unknown_name_names_the_config_field():
    with pytest.raises(ValueError, match="hidden_act"):
        get_activation("gelu_quick")
