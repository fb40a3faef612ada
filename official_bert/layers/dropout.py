"""Dropout whose TensorFlow masks are drawn with Philox by name, so that an XLA-compiled training step stays fast.

Keras' TensorFlow dropout (and `keras.random.uniform`) call `tf.random.stateless_uniform` with TensorFlow's
default algorithm, "auto_select". Without XLA, TensorFlow resolves it to Philox on the CPU. Compiled with XLA on the
CPU, the same call with a seed known only at run time is 60x slower: 26-32 ms for a (16, 8, 30, 30) attention-dropout
mask, against 0.46 ms with `alg="philox"` (2 CPU cores, TF 2.21). A MiniLM training step (batch 32, seq 128) under
`jit_compile=True` took 15.5 s instead of 1.9 s.

Here TensorFlow draws the same seed Keras draws (the layer's `SeedGenerator`, cast as Keras casts it) and names
Philox, so the masks are Keras' own bit for bit without XLA (tested), and XLA compiles a fast generator. Other
backends run Keras' dropout unchanged.
"""

import keras


def _philox_uniform(shape, seed_generator, dtype):
    """`keras.random.uniform(shape, seed=seed_generator)` on TensorFlow, drawn with Philox by name: the next seed of
    `seed_generator`, in [0, 1)."""
    import tensorflow as tf

    seed = seed_generator.next()  # (2,) int64
    if seed.dtype != tf.int32:  # as Keras' `_cast_seed`: TensorFlow's stateless ops take int32 seeds under XLA
        seed = tf.cast(tf.math.floormod(seed, tf.int32.max - 1), tf.int32)
    # `tf.random.stateless_uniform(shape, seed=seed, dtype=dtype, alg="philox")` as two ops: its Python seed
    # scrambling (`_philox_scramble_seed`) adds about 40 graph ops a draw (658 of a tiny classifier's 4,290
    # training-step ops), where the kernel that scrambles the seed for "auto_select" does the same Philox
    # scrambling on the CPU and under XLA in one op. The draw then names Philox rather than the device's choice.
    key, counter, _ = tf.raw_ops.StatelessRandomGetKeyCounterAlg(seed=seed)
    return tf.raw_ops.StatelessRandomUniformV2(shape=shape, key=key, counter=counter,
                                               alg=tf.random.Algorithm.PHILOX.value, dtype=dtype)


def uniform(shape, seed_generator, dtype="float32"):
    """Uniform draws in [0, 1) from `seed_generator`: Philox by name on TensorFlow (see the module notes),
    `keras.random.uniform` on other backends.

    Args:
        shape: the draws' shape (a tensor or a tuple).
        seed_generator: a `keras.random.SeedGenerator`, advanced by one draw.
        dtype: a float dtype.
    """
    if keras.backend.backend() != "tensorflow":
        return keras.random.uniform(shape, dtype=dtype, seed=seed_generator)
    return _philox_uniform(shape, seed_generator, dtype)


@keras.saving.register_keras_serializable(package="official_bert")
class Dropout(keras.layers.Dropout):
    """`keras.layers.Dropout` whose TensorFlow masks are drawn with Philox by name (see the module notes): the same
    masks as Keras' without XLA, and a fast generator with it. Arguments as `keras.layers.Dropout`'s."""

    def call(self, inputs, training=False):
        if not (training and 0.0 < self.rate < 1.0) or self.noise_shape is not None or \
                keras.backend.backend() != "tensorflow":
            return super().call(inputs, training=training)
        import tensorflow as tf

        # As `tf.nn.experimental.stateless_dropout`: scale, then zero where the draw is below the rate.
        scaled = inputs * tf.constant(1 / (1 - self.rate), inputs.dtype)
        keep = _philox_uniform(tf.shape(inputs), self.seed_generator, inputs.dtype) >= self.rate
        return tf.where(keep, scaled, tf.zeros([], inputs.dtype))
