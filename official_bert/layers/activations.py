"""Maps a config's `hidden_act` name to a Keras-compatible function."""

import math

import keras


_SQRT_2 = math.sqrt(2.0)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_TANH_CUBIC = 0.044715


def _exact_gelu_slope(x):
    """The derivative of GELU x * Phi(x): Phi(x) + x * phi(x), for float32 `x`."""
    ops = keras.ops
    cdf = 0.5 * (1.0 + ops.erf(x / _SQRT_2))  # Phi(x)
    pdf = ops.exp(-0.5 * ops.square(x)) / math.sqrt(2.0 * math.pi)  # phi(x)
    return cdf + x * pdf


def _tanh_gelu_slope(x):
    """The derivative of the tanh approximation 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3)."""
    ops = keras.ops
    t = ops.tanh(_SQRT_2_OVER_PI * (x + _TANH_CUBIC * x * ops.square(x)))
    du_dx = _SQRT_2_OVER_PI * (1.0 + 3 * _TANH_CUBIC * ops.square(x))
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - ops.square(t)) * du_dx


def _float32_gelu(forward, slope_of):
    """A GELU (`forward`) computed in float32, rounded once to the input's dtype, whose gradient keeps only the
    input and takes the slope from `slope_of`.

    Under mixed precision the feed-forward activation arrives in bfloat16 / float16. TensorFlow's CPU kernels
    for erf/tanh in those types are several times slower than in float32 (exact GELU on a (128, 1536) bfloat16
    tensor: ~2.5x), and rounding once at the end is what PyTorch's half-precision GELU does too. The gradient
    recomputes the slope from the saved input: autodiff through the float32 formula kept float32 copies of the
    (batch, seq, intermediate) activations for the backward pass (XLA on an H100 wrote and read one per layer).
    """
    @keras.ops.custom_gradient
    def gelu(x):
        value = forward(keras.ops.cast(x, "float32"))

        def grad(*args, upstream=None):
            if upstream is None:
                (upstream,) = args
            slope = slope_of(keras.ops.cast(x, "float32"))
            return keras.ops.cast(keras.ops.cast(upstream, "float32") * slope, x.dtype)

        return keras.ops.cast(value, x.dtype), grad

    return gelu


_exact_gelu = _float32_gelu(lambda x: keras.activations.gelu(x, approximate=False), _exact_gelu_slope)
_tanh_gelu = _float32_gelu(lambda x: keras.activations.gelu(x, approximate=True), _tanh_gelu_slope)


def get_activation(name: str):
    """Returns the activation function BERT configs call `name`.

    Args:
        name: "gelu" (exact erf form, as Google BERT, HF and PyTorch), "gelu_new" / "gelu_pytorch_tanh" /
            "gelu_fast" (tanh approximation), "relu", "silu" / "swish" or "tanh". The GELUs compute in float32
            under mixed precision (see `_float32_gelu`).
    """
    if name == "gelu":
        return _exact_gelu
    if name in ("gelu_new", "gelu_pytorch_tanh", "gelu_fast"):
        return _tanh_gelu
    if name in ("silu", "swish"):
        return keras.activations.silu
    if name in ("relu", "tanh"):
        return keras.activations.get(name)
    raise ValueError(f"Unknown activation {name!r} (config field 'hidden_act')")


def get_fusable_activation(name: str):
    """`get_activation(name)` for inference on TensorFlow: the GELUs as the plain `tf.nn.gelu` op, with no cast
    or custom gradient around it, the form TensorFlow's oneDNN graph rewrite fuses into the matmul before it
    (see `official_bert.layers.matmul_dense`). Under bfloat16 the fused kernel computes the GELU in float32 and
    rounds once, as `_float32_gelu` does. Not for training: it has no memory-saving gradient.

    Args:
        name: as for `get_activation`.
    """
    if name == "gelu":
        return lambda x: keras.activations.gelu(x, approximate=False)
    if name in ("gelu_new", "gelu_pytorch_tanh", "gelu_fast"):
        return lambda x: keras.activations.gelu(x, approximate=True)
    return get_activation(name)
