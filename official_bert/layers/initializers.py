"""BERT's weight initializer, made once per weight."""

import keras


def truncated_normal(stddev):
    """A new `keras.initializers.TruncatedNormal(stddev=stddev)`, for one weight.

    Keras draws an unseeded initializer's seed once, when the initializer is made, and every call then gives the same
    values for the same shape: one instance shared by several weights made a layer's query, key and value kernels
    equal, and the position and token-type tables the first rows of the word table. BERT draws each weight on its
    own (`keras.utils.set_random_seed` still makes the draws repeatable).

    Args:
        stddev: the normal's standard deviation before truncation at two of them (the config's
            `initializer_range`).
    """
    return keras.initializers.TruncatedNormal(stddev=stddev)
