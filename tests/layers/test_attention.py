"""BertSelfAttention's fused path (`keras.ops.dot_product_attention`, taken by a layer built with
`fused_attention=True`) equals its float32 einsum path, and training with dropout keeps the latter; the option is
saved by `get_config`; `attention_scores` gives the scores that path softmaxes (TinyBERT's attention-distillation
target)."""

import keras
import numpy as np

from official_bert.layers.attention import BertSelfAttention

BATCH, SEQ, HIDDEN, HEADS = 3, 12, 32, 4


def _inputs(seed=0):
    rng = np.random.default_rng(seed)
    hidden = rng.normal(size=(BATCH, SEQ, HIDDEN)).astype("float32")
    mask = np.ones((BATCH, SEQ), "int32")
    mask[0, 7:] = 0  # padding never attended to
    mask[2, 1:] = 0
    return hidden, mask


def _layer(dropout_rate, fused_attention=True):
    keras.utils.set_random_seed(0)
    layer = BertSelfAttention(HIDDEN, HEADS, dropout_rate, initializer_range=0.1, fused_attention=fused_attention)
    layer.build((None, None, HIDDEN))
    return layer


def test_fused_attention_is_off_by_default_and_saved_in_the_config():
    assert not BertSelfAttention(HIDDEN, HEADS, 0.0, initializer_range=0.1).uses_fused_attention(training=False)
    layer = _layer(0.0)
    assert layer.uses_fused_attention(training=True)
    assert BertSelfAttention.from_config(layer.get_config()).uses_fused_attention(training=True)
    config = layer.get_config()
    del config["fused_attention"]  # a layer saved before the option: the einsum path
    assert not BertSelfAttention.from_config(config).uses_fused_attention(training=False)


def test_fused_attention_equals_the_einsum_path_in_values_and_gradients():
    import tensorflow as tf

    hidden, mask = _inputs()
    layers = {True: _layer(0.0), False: _layer(0.0, fused_attention=False)}  # the same weights

    def run(fused):
        layer = layers[fused]
        x = tf.constant(hidden)
        with tf.GradientTape() as tape:
            tape.watch(x)
            out = layer(x, mask, training=True)
            loss = tf.reduce_sum(out * out)
        return out.numpy(), [g.numpy() for g in tape.gradient(loss, [x] + layer.trainable_weights)]

    assert layers[True].uses_fused_attention(training=True) and not layers[False].uses_fused_attention(False)
    fused, fused_grads = run(True)
    plain, plain_grads = run(False)
    np.testing.assert_allclose(fused, plain, atol=2e-5, rtol=0)
    for a, b in zip(fused_grads, plain_grads, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-4, rtol=1e-4)
    changed = hidden.copy()
    changed[0, 7:] += 10.0  # padded positions of row 0 do not reach its real positions
    np.testing.assert_allclose(layers[True](changed, mask)[0, :7], fused[0, :7], atol=2e-5, rtol=0)


def test_fused_attention_passes_a_mask_of_the_scores_shape(monkeypatch):
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


def test_training_with_attention_dropout_keeps_the_einsum_path():
    layer = _layer(0.1)
    assert not layer.uses_fused_attention(training=True) and layer.uses_fused_attention(training=False)
    hidden, mask = _inputs(1)
    fused = layer(hidden, mask, training=True).numpy()
    without = _layer(0.1, fused_attention=False)(hidden, mask, training=True).numpy()  # same weights, dropout seeds
    np.testing.assert_array_equal(fused, without)  # the same masks on the same path
    assert not np.allclose(fused, layer(hidden, mask, training=False).numpy())  # dropout was on


def test_attention_scores_are_the_softmax_inputs_with_padded_keys_zero():
    """Softmax over the real keys of `attention_scores`, applied to the values, gives the layer's output."""
    hidden, mask = _inputs(1)
    layer = _layer(0.0, fused_attention=False)
    scores = np.asarray(layer.attention_scores(hidden, mask))  # (batch, heads, seq, seq)
    assert scores.shape == (BATCH, HEADS, SEQ, SEQ) and not scores[0, :, :, 7:].any() and scores[0, :, :, :7].all()
    masked = np.where(mask[:, None, None, :] == 1, scores, -np.inf)
    probs = np.exp(masked - masked.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    context = np.einsum("bnqk,bknd->bqnd", probs, np.asarray(layer.value(hidden)))
    np.testing.assert_allclose(np.asarray(layer.output_dense(context)), np.asarray(layer(hidden, mask)),
                               atol=1e-5, rtol=0)
