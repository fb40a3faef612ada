"""GELU and LayerNorm for training on TensorFlow: each direction (forward, gradient) one XLA-compiled kernel.

Without XLA, TensorFlow runs BERT's exact GELU as 5 elementwise ops forward and 9 in its gradient, and a
LayerNorm as about 8 forward and 15 backward, each one pass over the (batch, seq, width) activations. Compiled
with XLA each direction is one fused loop. Measured on 2 CPU cores (TF 2.21), fp32:
- GELU forward + gradient on (4096, 1536): 34.7 ms as `activations.get_activation("gelu")` runs it, 7.0 ms here;
- LayerNorm forward + gradient on (32, 128, 384): 7.5 ms as `keras.layers.LayerNormalization`, 4.8 ms here;
- one all-MiniLM-L6-v2 training step (batch 32, seq 128, forward + backward + AdamW): 1613-1705 -> 1467-1527 ms.

Only training calls on the TensorFlow backend of layers built with `fused_training_kernels=True` (the default of
`BertEncoder`, `TransformerBlock` and `BertEmbeddings`) use them (`applies`). Inference keeps plain ops, so an
exported graph carries no XLA function and runs in stock TF Serving; on JAX the whole step is compiled anyway.
XLA compiles each kernel once per input shape (30-190 ms each on 2 CPU cores); Keras traces the train step with
a free sequence length, so a run with exact batch lengths compiles once per length it meets.
The GELU's formulas are `activations.gelu_value` and `activations.gelu_slope`, compiled here.
"""

import functools

import keras

from official_bert.layers.activations import gelu_approximates, gelu_slope, gelu_value


def applies(fused_training_kernels, training):
    """Whether a call uses the kernels: a layer built with `fused_training_kernels`, a training call, and the
    TensorFlow backend."""
    return bool(fused_training_kernels) and bool(training) and keras.backend.backend() == "tensorflow"


def gelu(hidden_act):
    """The config's GELU as one XLA kernel each way, computed in float32 and rounded once to the input's dtype
    (as `activations.get_activation` does); None for an activation that is not a GELU.

    Args:
        hidden_act: a config's activation name ("gelu": exact erf form; "gelu_new", "gelu_pytorch_tanh",
            "gelu_fast": tanh approximation).
    """
    approximate = gelu_approximates(hidden_act)
    return None if approximate is None else _gelu_kernels(approximate)


def layer_norm(layer, inputs, use_kernels):
    """`layer(inputs)` for a `keras.layers.LayerNormalization`; where `use_kernels` (see `applies`), one XLA kernel
    each way, in float32, for a layer over the last axis with gamma and beta. A layer of another kind
    (rms_scaling, no center or scale, other axes), or another call, is run as Keras computes it.

    Args:
        layer: a built `keras.layers.LayerNormalization` of dtype float32.
        inputs: (..., width); cast to float32.
        use_kernels: `applies(...)` for the call.

    Returns:
        (..., width) float32.
    """
    axis = layer.axis if isinstance(layer.axis, int) else (layer.axis[0] if len(layer.axis) == 1 else None)
    last_axis = axis == -1 or axis == len(inputs.shape) - 1
    if not (use_kernels and last_axis and layer.center and layer.scale and
            not getattr(layer, "rms_scaling", False)):
        return layer(inputs)
    import tensorflow as tf

    forward, backward = _layer_norm_kernels()
    epsilon = tf.constant(layer.epsilon, tf.float32)

    @tf.custom_gradient
    def normalize(x, gamma, beta):
        def grad(upstream):
            return backward(x, gamma, upstream, epsilon)  # (dx, dgamma, dbeta)

        return forward(x, gamma, beta, epsilon), grad

    return normalize(tf.cast(inputs, tf.float32), tf.convert_to_tensor(layer.gamma),
                     tf.convert_to_tensor(layer.beta))


@functools.cache
def _gelu_kernels(approximate):
    """A `tf.custom_gradient` GELU whose forward and gradient are `jit_compile` functions."""
    import tensorflow as tf

    @tf.function(jit_compile=True, reduce_retracing=True, autograph=False)
    def forward(x):  # any shape, any float dtype
        return tf.cast(gelu_value(tf.cast(x, tf.float32), approximate), x.dtype)

    @tf.function(jit_compile=True, reduce_retracing=True, autograph=False)
    def backward(x, upstream):  # the GELU's slope at x times upstream, in x's dtype
        slope = gelu_slope(tf.cast(x, tf.float32), approximate)
        return tf.cast(tf.cast(upstream, tf.float32) * slope, x.dtype)

    @tf.custom_gradient
    def gelu_fn(x):
        return forward(x), lambda upstream: backward(x, upstream)

    return gelu_fn


@functools.cache
def _layer_norm_kernels():
    """(forward, backward) `jit_compile` functions of a LayerNorm over the last axis, float32."""
    import tensorflow as tf

    def normalized(x, epsilon):  # (x - mean) / sqrt(var + eps) and 1 / sqrt(var + eps), per row
        centered = x - tf.reduce_mean(x, axis=-1, keepdims=True)
        inverse_std = tf.math.rsqrt(tf.reduce_mean(tf.square(centered), axis=-1, keepdims=True) + epsilon)
        return centered * inverse_std, inverse_std

    @tf.function(jit_compile=True, reduce_retracing=True, autograph=False)
    def forward(x, gamma, beta, epsilon):  # x (..., width); gamma, beta (width,)
        return normalized(x, epsilon)[0] * gamma + beta

    @tf.function(jit_compile=True, reduce_retracing=True, autograph=False)
    def backward(x, gamma, upstream, epsilon):  # recomputes the statistics from x: nothing saved but x
        x_hat, inverse_std = normalized(x, epsilon)
        upstream_hat = upstream * gamma  # the gradient at x_hat
        dx = inverse_std * (upstream_hat - tf.reduce_mean(upstream_hat, axis=-1, keepdims=True)
                            - x_hat * tf.reduce_mean(upstream_hat * x_hat, axis=-1, keepdims=True))
        rows = list(range(len(x.shape) - 1))  # every axis but the last
        return dx, tf.reduce_sum(upstream * x_hat, axis=rows), tf.reduce_sum(upstream, axis=rows)

    return forward, backward
