"""Maps a config's `hidden_act` name to a Keras-compatible function."""

import math

import keras


_SQRT_2 = math.sqrt(2.0)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_TANH_CUBIC = 0.044715
TANH_GELUS = ("gelu_new", "gelu_pytorch_tanh", "gelu_fast")  # configs' names of the tanh approximation


def gelu_value(x, approximate):
    """GELU x * Phi(x) (`approximate`: the tanh approximation), as the backend's own op (TensorFlow: `tf.nn.gelu`,
    which computes the exact form as 0.5 x erfc(-x / sqrt(2))); any shape and float dtype."""
    return keras.activations.gelu(x, approximate=approximate)


def gelu_slope(x, approximate):
    """The derivative of `gelu_value` at float32 `x`: Phi(x) + x * phi(x); for the tanh approximation
    0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), its own derivative."""
    ops = keras.ops
    if approximate:
        t = ops.tanh(_SQRT_2_OVER_PI * (x + _TANH_CUBIC * x * ops.square(x)))
        du_dx = _SQRT_2_OVER_PI * (1.0 + 3 * _TANH_CUBIC * ops.square(x))
        return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - ops.square(t)) * du_dx
    cdf = 0.5 * ops.erfc(-x / _SQRT_2)  # Phi(x), without 1 + erf's cancellation below 0
    pdf = ops.exp(-0.5 * ops.square(x)) / math.sqrt(2.0 * math.pi)  # phi(x)
    return cdf + x * pdf


def gelu_approximates(name):
    """Whether the config's activation `name` is the tanh-approximated GELU (True), the exact one (False), or not
    a GELU (None)."""
    return True if name in TANH_GELUS else False if name == "gelu" else None


def _float32_gelu(approximate):
    """A GELU computed in float32, rounded once to the input's dtype, whose gradient keeps only the input and
    takes the slope from `gelu_slope`.

    Under mixed precision the feed-forward activation arrives in bfloat16 / float16. TensorFlow's CPU kernels
    for erf/tanh in those types are several times slower than in float32 (exact GELU on a (128, 1536) bfloat16
    tensor: ~2.5x), and rounding once at the end is what PyTorch's half-precision GELU does too. The gradient
    recomputes the slope from the saved input: autodiff through the float32 formula kept float32 copies of the
    (batch, seq, intermediate) activations for the backward pass (XLA on an H100 wrote and read one per layer).
    """
    @keras.ops.custom_gradient
    def gelu(x):
        value = gelu_value(keras.ops.cast(x, "float32"), approximate)

        def grad(*args, upstream=None):
            if upstream is None:
                (upstream,) = args
            slope = gelu_slope(keras.ops.cast(x, "float32"), approximate)
            return keras.ops.cast(keras.ops.cast(upstream, "float32") * slope, x.dtype)

        return keras.ops.cast(value, x.dtype), grad

    return gelu


_exact_gelu = _float32_gelu(approximate=False)
_tanh_gelu = _float32_gelu(approximate=True)


def get_activation(name: str):
    """Returns the activation function BERT configs call `name`.

    Args:
        name: "gelu" (exact erf form, as Google BERT, HF and PyTorch), "gelu_new" / "gelu_pytorch_tanh" /
            "gelu_fast" (tanh approximation), "relu", "silu" / "swish" or "tanh". The GELUs compute in float32
            under mixed precision (see `_float32_gelu`).
    """
    approximate = gelu_approximates(name)
    if approximate is not None:
        return _tanh_gelu if approximate else _exact_gelu
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
    approximate = gelu_approximates(name)
    if approximate is not None:
        return lambda x: gelu_value(x, approximate)
    return get_activation(name)
