"""MaskedLMHead: gathers the masked positions, decodes with the shared word embeddings, float32 logits."""

import keras
import numpy as np

from official_bert.layers import BertEmbeddings
from official_bert.layers.masked_lm_head import MaskedLMHead


def _head(vocab=50, hidden=16):
    embeddings = BertEmbeddings(vocab, hidden, max_position_embeddings=20, type_vocab_size=2, layer_norm_eps=1e-12,
                                dropout_rate=0.0, initializer_range=0.02)
    embeddings.build()
    head = MaskedLMHead(embeddings, "gelu", 1e-12, 0.02)
    head.build()
    return head


def test_logits_at_the_masked_positions_equal_those_of_every_position():
    head = _head()
    sequence = np.random.default_rng(0).normal(size=(2, 7, 16)).astype(np.float32)
    every = head(sequence, np.tile(np.arange(7, dtype=np.int32), (2, 1))).numpy()  # (2, 7, 50)
    positions = np.array([[3, 0, 6], [5, 5, 1]], np.int32)
    logits = head(sequence, positions).numpy()
    assert logits.shape == (2, 3, 50) and logits.dtype == np.float32
    np.testing.assert_allclose(logits, np.take_along_axis(every, positions[..., None], axis=1), atol=1e-6)


def test_decoder_follows_the_embedding_table_and_adds_the_bias():
    head = _head()
    sequence = np.random.default_rng(1).normal(size=(1, 4, 16)).astype(np.float32)
    positions = np.array([[0, 2]], np.int32)
    before = head(sequence, positions).numpy()
    table = head.embedding_layer.word_embeddings
    table.assign(table.numpy() * 2.0)  # logits are linear in the table: they double (bias 0)
    np.testing.assert_allclose(head(sequence, positions).numpy(), 2.0 * before, rtol=1e-5, atol=1e-6)
    head.output_bias.assign(np.arange(50, dtype=np.float32))
    np.testing.assert_allclose(head(sequence, positions).numpy() - 2.0 * before, np.broadcast_to(np.arange(50.0),
                               (1, 2, 50)), rtol=1e-5, atol=1e-5)
    assert all(tuple(w.shape) != (50, 16) for w in head.weights if w is not table)


def test_mixed_precision_keeps_float32_logits_close_to_float32():
    full = _head()
    sequence = np.random.default_rng(2).normal(size=(2, 5, 16)).astype(np.float32)
    positions = np.array([[1, 2], [3, 4]], np.int32)
    expected = full(sequence, positions).numpy()
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        mixed = _head()
    finally:
        keras.mixed_precision.set_global_policy("float32")
    for target, source in zip(mixed.embedding_layer.weights + mixed.weights,
                              full.embedding_layer.weights + full.weights):
        target.assign(source.numpy())
    logits = mixed(sequence, positions)
    assert logits.dtype == "float32" and mixed.layer_norm.dtype == "float32"
    np.testing.assert_allclose(logits.numpy(), expected, atol=0.05 * np.abs(expected).max())
