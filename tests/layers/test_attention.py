"""BertSelfAttention's fused path (`keras.ops.dot_product_attention`, taken after `set_fused_attention(True)`) equals
its float32 einsum path, and training with dropout keeps the latter; `attention_scores` gives the scores that path
softmaxes (TinyBERT's attention-distillation target)."""

import keras
import numpy as np
import pytest

from official_bert.layers.attention import BertSelfAttention, fused_attention_enabled, set_fused_attention

BATCH, SEQ, HIDDEN, HEADS = 3, 12, 32, 4


@pytest.fixture
def fused():
    """The fused path switched on for one test, and off again after it."""
    assert not fused_attention_enabled()  # the default
    set_fused_attention(True)
    yield
    set_fused_attention(False)


def _inputs(seed=0):
    rng = np.random.default_rng(seed)
    hidden = rng.normal(size=(BATCH, SEQ, HIDDEN)).astype("float32")
    mask = np.ones((BATCH, SEQ), "int32")
    mask[0, 7:] = 0  # padding never attended to
    mask[2, 1:] = 0
    return hidden, mask


def _layer(dropout_rate):
    keras.utils.set_random_seed(0)
    layer = BertSelfAttention(HIDDEN, HEADS, dropout_rate, initializer_range=0.1)
    layer.build((None, None, HIDDEN))
    return layer


def test_fused_attention_equals_the_einsum_path_in_values_and_gradients(fused):
    import tensorflow as tf

    hidden, mask = _inputs()
    layer = _layer(0.0)
    assert layer.uses_fused_attention(training=True)
    set_fused_attention(False)
    assert not layer.uses_fused_attention(training=False)

    def run(fused):
        set_fused_attention(fused)
        x = tf.constant(hidden)
        with tf.GradientTape() as tape:
            tape.watch(x)
            out = layer(x, mask, training=True)
            loss = tf.reduce_sum(out * out)
        return out.numpy(), [g.numpy() for g in tape.gradient(loss, [x] + layer.trainable_weights)]

    fused, fused_grads = run(True)
    plain, plain_grads = run(False)
    np.testing.assert_allclose(fused, plain, atol=2e-5, rtol=0)
    for a, b in zip(fused_grads, plain_grads, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-4, rtol=1e-4)
    changed = hidden.copy()
    changed[0, 7:] += 10.0  # padded positions of row 0 do not reach its real positions
    set_fused_attention(True)
    np.testing.assert_allclose(layer(changed, mask)[0, :7], fused[0, :7], atol=2e-5, rtol=0)


def test_fused_attention_passes_a_mask_of_the_scores_shape(fused, monkeypatch):
    """cuDNN's flash kernel (JAX on GPU) takes a (batch, 1, seq, seq) mask only; Keras runs plain attention for a
    (batch, 1, 1, seq) one."""
    from official_bert.layers import attention

    seen = []
    original = attention.ops.dot_product_attention
    monkeypatch.setattr(attention.ops, "dot_product_attention",
                        lambda *args, mask, **kwargs: seen.append(mask) or original(*args, mask=mask, **kwargs))
    hidden, mask = _inputs()
    _layer(0.0)(hidden, mask)
    assert len(seen) == 1 and tuple(seen[0].shape) == (BATCH, 1, SEQ, SEQ)
    np.testing.assert_array_equal(np.asarray(seen[0])[:, 0], np.broadcast_to(mask[:, None, :] == 1, (BATCH, SEQ, SEQ)))


def test_training_with_attention_dropout_keeps_the_einsum_path(fused):
    layer = _layer(0.1)
    assert not layer.uses_fused_attention(training=True) and layer.uses_fused_attention(training=False)
    hidden, mask = _inputs(1)
    with_switch = layer(hidden, mask, training=True).numpy()
    set_fused_attention(False)
    without = _layer(0.1)(hidden, mask, training=True).numpy()  # the same weights and dropout seeds
    np.testing.assert_array_equal(with_switch, without)  # the same masks on the same path
    assert not np.allclose(with_switch, layer(hidden, mask, training=False).numpy())  # dropout was on


def test_attention_scores_are_the_softmax_inputs_with_padded_keys_zero():
    """Softmax over the real keys of `attention_scores`, applied to the values, gives the layer's output."""
    hidden, mask = _inputs(1)
    layer = _layer(0.0)
    scores = np.asarray(layer.attention_scores(hidden, mask))  # (batch, heads, seq, seq)
    assert scores.shape == (BATCH, HEADS, SEQ, SEQ) and not scores[0, :, :, 7:].any() and scores[0, :, :, :7].all()
    masked = np.where(mask[:, None, None, :] == 1, scores, -np.inf)
    probs = np.exp(masked - masked.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    context = np.einsum("bnqk,bknd->bqnd", probs, np.asarray(layer.value(hidden)))
    np.testing.assert_allclose(np.asarray(layer.output_dense(context)), np.asarray(layer(hidden, mask)),
                               atol=1e-5, rtol=0)
