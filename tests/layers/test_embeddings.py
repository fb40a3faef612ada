"""BertEmbeddings: the sum of the three lookups, its gradients, and its dtypes under mixed precision."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from official_bert.layers.embeddings import BertEmbeddings


def _layer(dtype=None):
    layer = BertEmbeddings(vocab_size=50, hidden_size=8, max_position_embeddings=16, type_vocab_size=2,
                           layer_norm_eps=1e-12, dropout_rate=0.0, initializer_range=0.5, dtype=dtype)
    layer.build()
    return layer


def _inputs():
    rng = np.random.default_rng(0)
    ids = rng.integers(1, 50, size=(3, 10)).astype("int32")  # (batch, seq); no [PAD]
    types = (np.arange(10)[None, :] >= rng.integers(2, 9, size=(3, 1))).astype("int32")  # (batch, seq)
    return ids, types


def _expected(layer, ids, types, dtype):
    """The three table lookups in `dtype`, summed, then the float32 LayerNorm."""
    word = tf.gather(tf.cast(layer.word_embeddings.value, dtype), ids)
    token_type = tf.gather(tf.cast(layer.token_type_embeddings.value, dtype), types)
    position = tf.cast(layer.position_embeddings.value, dtype)[None, :ids.shape[1]]
    return layer.layer_norm(word + token_type + position)


@pytest.mark.parametrize("policy", ["float32", "mixed_bfloat16"])
def test_output_is_the_sum_of_the_three_lookups(policy):
    layer = _layer(policy)
    ids, types = _inputs()
    compute = keras.mixed_precision.Policy(policy).compute_dtype
    np.testing.assert_array_equal(layer(ids, types).numpy(), _expected(layer, ids, types, compute).numpy())


def test_word_table_stays_float32_under_mixed_precision():
    layer = _layer("mixed_bfloat16")
    ids, types = _inputs()
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(layer(ids, types) ** 2)
    grad = tape.gradient(loss, layer.word_embeddings.value)
    assert layer.word_embeddings.dtype == "float32"
    assert tf.convert_to_tensor(grad).dtype == tf.float32


def test_token_type_gradient_is_the_per_type_sum_of_the_upstream_gradient():
    layer = _layer()
    ids, types = _inputs()
    upstream = np.random.default_rng(1).normal(size=(3, 10, 8)).astype("float32")  # (batch, seq, hidden)
    with tf.GradientTape() as tape:
        out = layer(ids, types)
        loss = tf.reduce_sum(out * upstream)
    grads = tape.gradient(loss, [layer.token_type_embeddings.value, layer.word_embeddings.value])
    with tf.GradientTape() as tape:  # the same through plain lookups
        reference = _expected(layer, ids, types, "float32")
        reference_loss = tf.reduce_sum(reference * upstream)
    reference_grads = tape.gradient(reference_loss, [layer.token_type_embeddings.value,
                                                     layer.word_embeddings.value])
    for grad, expected in zip(grads, reference_grads):
        np.testing.assert_allclose(tf.convert_to_tensor(grad).numpy(), tf.convert_to_tensor(expected).numpy(),
                                   rtol=1e-5, atol=1e-5)


def test_int8_word_table_rows_are_the_float_rows_to_within_half_a_step():
    layer = _layer()
    ids, types = _inputs()
    table = layer.word_embeddings.numpy()  # (vocab, hidden)
    before = layer(ids, types).numpy()
    layer.quantize_word_table()
    assert layer.word_embeddings is None
    assert layer.word_embeddings_int8.dtype == "int8" and layer.word_embeddings_int8.shape == table.shape
    assert {w.name for w in layer.trainable_weights}.isdisjoint({"word_embeddings_int8", "word_embeddings_scale"})
    assert "word_embeddings" not in {w.name for w in layer.weights}
    scale = np.abs(table).max(axis=1) / 127  # (vocab,)
    rows = layer.word_embeddings_int8.numpy().astype(np.float32) * layer.word_embeddings_scale.numpy()[:, None]
    assert np.all(np.abs(rows - table) <= scale[:, None] / 2 + 1e-7)
    np.testing.assert_allclose(layer(ids, types).numpy(), before, atol=0.05)
