"""Maps a config's `hidden_act` name to a Keras-compatible function."""

import functools

import keras


def _in_float32(activation):
    """`activation` computed in float32 and rounded once to the input's dtype.

    Under mixed precision the feed-forward activation arrives in bfloat16 / float16. TensorFlow's CPU kernels
    for erf/tanh in those types are several times slower than in float32 (exact GELU on a (128, 1536) bfloat16
    tensor: ~2.5x), and rounding once at the end is what PyTorch's half-precision GELU does too.
    """
    @functools.wraps(activation)
    def wrapped(x):
        if x.dtype in ("bfloat16", "float16"):
            return keras.ops.cast(activation(keras.ops.cast(x, "float32")), x.dtype)
        return activation(x)

    return wrapped


@_in_float32
def _exact_gelu(x):
    return keras.activations.gelu(x, approximate=False)


@_in_float32
def _tanh_gelu(x):
    return keras.activations.gelu(x, approximate=True)


def get_activation(name: str):
    """Returns the activation function BERT configs call `name`.

    Args:
        name: "gelu" (exact erf form, as Google BERT, HF and PyTorch), "gelu_new" / "gelu_pytorch_tanh" /
            "gelu_fast" (tanh approximation), "relu", "silu" / "swish" or "tanh". The GELUs compute in float32
            under mixed precision (see `_in_float32`).
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
