"""`Dense` and `EinsumDense` applied as one 2-D matmul plus a bias add, the form TensorFlow's CPU graph rewrite fuses.

Keras' `Dense` on a (batch, seq, in) tensor adds its bias with a broadcast `AddV2`, and `EinsumDense` runs an
`Einsum` op. TensorFlow's oneDNN remapper fuses neither: it fuses `MatMul` + `BiasAdd` (+ an exact or tanh GELU
written as `tf.nn.gelu`) into one kernel. Measured on 2 CPU cores (TF 2.21, all-MiniLM-L6-v2 shapes): the
feed-forward Dense + GELU on a (32, 50, 384) batch takes 10.7 ms as Keras computes it against 6.9 ms fused; a
(1, 25, 384) -> (1, 25, 12, 32) projection 0.56 ms as an `Einsum` against 0.37 ms as a matmul.

The layers keep their variables (shapes, names, checkpoints and quantization are unchanged); only the ops that
read them differ. A quantized or LoRA-enabled layer is called as Keras computes it.
"""

import keras
from keras import ops


def dense_2d(layer, inputs, activation=None):
    """Computes `layer(inputs)` as reshape -> 2-D matmul -> bias add -> activation -> reshape.

    Args:
        layer: a built `keras.layers.Dense`, or a built `keras.layers.EinsumDense` whose equation contracts the
            input's trailing axes with the kernel's leading axes, in order (e.g. "abc,cde->abde",
            "abcd,cde->abe").
        inputs: the layer's input, (..., contracted dims).
        activation: applied to the 2-D result instead of the layer's own activation; None keeps the layer's.
            A quantized or LoRA-enabled layer always applies its own.

    Returns:
        (..., output dims) in the layer's compute dtype, equal to `layer(inputs)` up to float rounding.
    """
    # private: this computes what `Dense.call` / `EinsumDense.call` compute, from the layers' attributes (`kernel`,
    # `bias`, `equation`, `compute_dtype`, `quantization_mode`, `lora_enabled`), instead of calling them: for speed,
    # the op form TensorFlow's oneDNN remapper fuses (module notes: 10.7 -> 6.9 ms for the feed-forward Dense + GELU
    # of MiniLM on 2 CPU cores). It relies on those layers computing `inputs @ kernel + bias` when they are neither
    # quantized nor LoRA-enabled (checked on Keras 3.15.1; tests/layers/test_matmul_dense.py compares it with
    # `layer(inputs)`); a Keras release that changes what those layers compute would need this changed too.
    if layer.quantization_mode is not None or getattr(layer, "lora_enabled", False):
        return layer(inputs)
    if activation is None:
        activation = getattr(layer, "activation", None)
    dtype = layer.compute_dtype
    kernel = ops.cast(layer.kernel, dtype)
    num_contracted = _num_contracted_axes(layer)
    contracted = 1
    for size in kernel.shape[:num_contracted]:
        contracted *= size
    out_dims = tuple(kernel.shape[num_contracted:])
    x = ops.cast(inputs, dtype)
    leading = ops.shape(x)[:len(x.shape) - num_contracted]  # e.g. (batch, seq)
    y = ops.matmul(ops.reshape(x, (-1, contracted)), ops.reshape(kernel, (contracted, -1)))  # (rows, outputs)
    if layer.bias is not None:
        y = _bias_add(y, ops.reshape(ops.cast(layer.bias, dtype), (-1,)))
    if activation is not None:
        y = activation(y)
    return ops.reshape(y, tuple(leading) + out_dims)


def _bias_add(matrix, bias):
    """`matrix + bias` over the last axis; `tf.nn.bias_add` on TensorFlow (the op its graph rewrite fuses)."""
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        return tf.nn.bias_add(matrix, bias)
    return matrix + bias


def _num_contracted_axes(layer):
    """How many trailing input axes `layer` contracts: 1 for `Dense`; read from an `EinsumDense` equation, which
    must contract the input's trailing axes with the kernel's leading ones and keep every other axis in order."""
    if isinstance(layer, keras.layers.Dense):
        return 1
    equation = layer.equation.replace(" ", "")
    inputs, output = equation.split("->")
    source, kernel = inputs.split(",")
    contracted = [axis for axis in source if axis not in output]
    n = len(contracted)
    if n == 0 or "".join(contracted) != source[-n:] or kernel[:n] != source[-n:] or \
            output != source[:-n] + kernel[n:]:
        raise ValueError(f"{layer.name}: equation {layer.equation!r} is not a matmul over the input's trailing axes")
    return n
