"""Maps a config's `hidden_act` name to a Keras-compatible function."""

import keras


def get_activation(name: str):
    """Returns the activation function BERT configs call `name`.

    Args:
        name: "gelu" (exact erf form, as Google BERT, HF and PyTorch), "gelu_new" / "gelu_pytorch_tanh" /
            "gelu_fast" (tanh approximation), "relu", "silu" / "swish" or "tanh".
    """
    if name == "gelu":
        return lambda x: keras.activations.gelu(x, approximate=False)
    if name in ("gelu_new", "gelu_pytorch_tanh", "gelu_fast"):
        return lambda x: keras.activations.gelu(x, approximate=True)
    if name in ("silu", "swish"):
        return keras.activations.silu
    if name in ("relu", "tanh"):
        return keras.activations.get(name)
    raise ValueError(f"Unknown activation {name!r} (config field 'hidden_act')")
