"""Tokenizer tables as eager tensors, so that a SavedModel stores each once."""

import tensorflow as tf


def eager_constant(value):
    """`value` as an eager tensor, even when called while a function is traced. A tokenizer's tables held this way
    are captured by every function that tokenizes, and a SavedModel stores each captured tensor once (a
    `tf.constant` made inside the call is copied into every signature: 6 copies of 3 MB in a pair classifier's
    export)."""
    with tf.init_scope():
        return tf.constant(value)
