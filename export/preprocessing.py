"""Serving-only inputs: `tf.Example` parsing for `serve_examples` and the specs of `serve_tokens`.

Raw text -> packed inputs is `official_bert.text.Preprocessor`, the same in training and serving.
"""

import tensorflow as tf

from official_bert.models.encoder import ENCODER_INPUTS


def parse_text_examples(serialized, feature_names):
    """Reads the string features of serialized `tf.Example`s (core `ParseExampleV2`).

    Args:
        serialized: [batch] string Tensor of serialized `tf.train.Example` protos.
        feature_names: e.g. ("text", "text_b"); each must be one bytes value per example (a missing
            feature is an InvalidArgument error naming it).

    Returns:
        list of [batch] string Tensors, in `feature_names` order.
    """
    features = {name: tf.io.FixedLenFeature([], tf.string) for name in feature_names}
    parsed = tf.io.parse_example(serialized, features)
    return [parsed[name] for name in feature_names]


def token_input_specs(seq_length):
    """Input specs of `serve_tokens`: the encoder's int32 [batch, seq_length] inputs.

    The length is fixed (the export's `max_seq_length`, as the raw-text signatures pack): with a free
    length the graph needs a strided slice TFLite's builtins lack.
    """
    return {name: tf.TensorSpec([None, seq_length], tf.int32, name=name) for name in ENCODER_INPUTS}
