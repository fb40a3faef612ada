"""Float32 models' matmuls at full float32 precision on Keras' JAX backend.

JAX lowers a float32 matmul at its default precision, which a GPU of the Ampere generation or later runs in
TensorFloat-32 (10 mantissa bits): a random float32 BERT-Base on an H200 then differed from transformers by 2.9e-3
(the largest |difference| of the sequence output), against 7.5e-6 at full precision (issue 48). PyTorch computes
float32 matmuls in float32 by default, so "the same BERT" means full precision here too. The models' `call`s trace
under `float32_matmuls(compute_dtype)`: with a float32 compute dtype every matmul and einsum (and their gradients)
gets `precision=HIGHEST`. Mixed precision is unchanged (its matmuls take bfloat16 or float16 operands).

The user's choice wins: a `jax.default_matmul_precision(...)` context around the model's call or fit, or
`jax.config.update("jax_default_matmul_precision", ...)`, e.g. "tensorfloat32" for TF32's speed, is kept as it is.
Other backends are untouched (TensorFlow's GPU matmuls follow `tf.config.experimental.enable_tensor_float_32_execution`,
PyTorch's `torch.backends.cuda.matmul.allow_tf32`).
"""

import contextlib

import keras


@contextlib.contextmanager
def float32_matmuls(compute_dtype):
    """Context in which the JAX matmuls traced are at full float32 precision, where `compute_dtype` is float32, the
    backend is JAX and neither the user nor an enclosing call has set JAX's default matmul precision.

    Args:
        compute_dtype: the model's compute dtype (its dtype policy's), e.g. "float32" or "bfloat16".
    """
    if keras.backend.backend() != "jax" or compute_dtype != "float32":
        yield
        return
    import jax

    if jax.config.jax_default_matmul_precision is not None:  # the user's (or an enclosing model's) setting
        yield
        return
    with jax.default_matmul_precision("highest"):
        yield


class Float32Matmuls:
    """Mixin (before `keras.Model` in the bases) whose `call` runs the model's own under `float32_matmuls` of its
    compute dtype. It names `training` and `mask` as `keras.Model.call` does: Keras reads them from the signature
    (a layer whose `call` has no `training` is never passed one)."""

    def call(self, inputs, training=None, mask=None, **kwargs):
        with float32_matmuls(self.compute_dtype):
            return super().call(inputs, training=training, mask=mask, **kwargs)
