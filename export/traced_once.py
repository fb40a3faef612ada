"""`TracedOnce`: a model call traced once an export, for requests of any batch size and length.

An export's signatures call the same model on inputs of different static shapes: `serve_tokens` at
(batch, seq_length), the raw-text ones at the request's longest text, the TFLite function at either. Called
directly, the model is traced again for each (and each trace is stored in the SavedModel). Through `TracedOnce`,
the signatures call one function whose inputs have unknown batch and length: the model is traced once and stored
once; every signature's graph holds one call op instead (a tiny classifier's export traces 2 model graphs instead
of 4: the plain one and the real-token one).
"""

import tensorflow as tf


class TracedOnce:
    """`call` on a dict of Tensors, traced once for every shape with the same names, ranks and dtypes.

    Args:
        call: inputs (dict of name -> Tensor, e.g. the encoder inputs, (batch, length) int32 each) -> outputs.
    """

    def __init__(self, call):
        self._call = call
        self._functions = {}  # (name, rank, dtype) of each input -> tf.function

    def __call__(self, inputs):
        key = tuple(sorted((name, tensor.shape.rank, tensor.dtype.name) for name, tensor in inputs.items()))
        if key not in self._functions:
            specs = {name: tf.TensorSpec([None] * tensor.shape.rank, tensor.dtype, name=name)
                     for name, tensor in inputs.items()}
            # Run as written, not through AutoGraph: it only calls a Keras model.
            self._functions[key] = tf.function(self._call, input_signature=[specs], autograph=False)
        return self._functions[key](inputs)
