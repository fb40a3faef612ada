"""BertEncoder: contract, parameter counts, serialization, XLA, mixed precision, masking."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from official_bert import BertConfig, BertEncoder


def _inputs(batch, seq, vocab_size=100, seed=0, pad_from=None):
    rng = np.random.default_rng(seed)
    mask = np.ones((batch, seq), "int32")
    if pad_from is not None:
        mask[:, pad_from:] = 0
    return {
        "input_word_ids": rng.integers(1, vocab_size, (batch, seq)).astype("int32") * mask,
        "input_mask": mask,
        "input_type_ids": (np.arange(seq)[None, :] >= seq // 2).astype("int32").repeat(batch, 0),
    }


def test_outputs_follow_the_tf_hub_contract(tiny_config):
    encoder = BertEncoder(tiny_config)
    assert sorted(encoder.input) == ["input_mask", "input_type_ids", "input_word_ids"]
    outputs = encoder(_inputs(3, 7))
    assert outputs["sequence_output"].shape == (3, 7, 32)
    assert outputs["pooled_output"].shape == (3, 32)
    assert len(outputs["encoder_outputs"]) == 2
    np.testing.assert_array_equal(outputs["encoder_outputs"][-1], outputs["sequence_output"])
    embedding = encoder.embeddings(_inputs(3, 7)["input_word_ids"], _inputs(3, 7)["input_type_ids"])
    np.testing.assert_allclose(outputs["embedding_output"], embedding, atol=1e-6)  # the first layer's input


@pytest.mark.slow
@pytest.mark.parametrize("preset,expected", [("bert_base_uncased", 109_482_240), ("bert_large_uncased", 335_141_888)])
def test_parameter_counts_match_bert(preset, expected):
    import tensorflow as tf

    # Built in a graph, the model's variables are ops that never run: the same layers and shapes without drawing
    # 335M random weights (1.3 s instead of 8.7 for BERT-large).
    with tf.Graph().as_default():
        assert BertEncoder(BertConfig.from_preset(preset)).count_params() == expected


def test_any_length_up_to_max_positions(tiny_config):
    encoder = BertEncoder(tiny_config)
    for seq in (1, 5, tiny_config.max_position_embeddings):
        assert encoder(_inputs(2, seq))["sequence_output"].shape == (2, seq, 32)
    with pytest.raises(ValueError, match="exceeds max_position_embeddings=40"):
        encoder(_inputs(1, tiny_config.max_position_embeddings + 1))


def test_padding_does_not_change_real_tokens(tiny_config):
    encoder = BertEncoder(tiny_config)
    short = _inputs(2, 6)
    padded = {k: np.concatenate([v, np.zeros((2, 4), "int32")], axis=1) for k, v in short.items()}
    padded["input_word_ids"][:, 6:] = 7  # garbage under the mask must not leak into real tokens
    a, b = encoder(short), encoder(padded)
    np.testing.assert_allclose(a["sequence_output"], b["sequence_output"][:, :6], atol=1e-5)
    np.testing.assert_allclose(a["pooled_output"], b["pooled_output"], atol=1e-5)


def test_get_config_and_keras_file_round_trip(tiny_config, tmp_path):
    encoder = BertEncoder(tiny_config)
    clone = BertEncoder.from_config(encoder.get_config())
    assert clone.config == tiny_config
    path = tmp_path / "encoder.keras"
    encoder.save(path)
    restored = keras.models.load_model(path)
    x = _inputs(2, 5)
    np.testing.assert_allclose(encoder(x)["pooled_output"], restored(x)["pooled_output"], atol=1e-6)


def test_jit_compile_matches_eager(tiny_config):
    encoder = BertEncoder(tiny_config)
    x = _inputs(2, 9, pad_from=6)
    compiled = tf.function(lambda inputs: encoder(inputs, training=False), jit_compile=True)
    eager, xla = encoder(x), compiled(x)
    np.testing.assert_allclose(eager["sequence_output"], xla["sequence_output"], atol=1e-5)
    np.testing.assert_allclose(eager["pooled_output"], xla["pooled_output"], atol=1e-5)


def test_dropout_is_active_only_in_training(tiny_config):
    encoder = BertEncoder(tiny_config)
    x = _inputs(2, 8)
    np.testing.assert_array_equal(encoder(x, training=False)["pooled_output"], encoder(x)["pooled_output"])
    assert not np.allclose(encoder(x, training=True)["pooled_output"], encoder(x, training=False)["pooled_output"])


@pytest.mark.parametrize("policy,atol", [("mixed_bfloat16", 0.1), ("mixed_float16", 0.02)])
def test_mixed_precision_keeps_layer_norm_and_softmax_in_float32(tiny_config, policy, atol):
    reference = BertEncoder(tiny_config)
    keras.mixed_precision.set_global_policy(policy)
    try:
        mixed = BertEncoder(tiny_config)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    mixed.set_weights(reference.get_weights())
    block = mixed.transformer_layers[0]
    assert block.attention.query.compute_dtype == policy.split("_")[1]
    assert block.attention_layer_norm.compute_dtype == "float32"
    assert mixed.embeddings.layer_norm.compute_dtype == "float32"
    x = _inputs(2, 12, pad_from=9)
    out = mixed(x)
    assert out["sequence_output"].dtype == tf.float32  # residual stream in float32
    np.testing.assert_allclose(out["sequence_output"], reference(x)["sequence_output"], atol=atol)
    compiled = tf.function(lambda inputs: mixed(inputs, training=False), jit_compile=True)
    np.testing.assert_allclose(compiled(x)["sequence_output"], out["sequence_output"], atol=atol)


def test_masked_softmax_ignores_padding_in_half_precision(tiny_config):
    """A padded position must get zero attention even when scores are computed in float16."""
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        encoder = BertEncoder(tiny_config)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    short = _inputs(1, 4)
    padded = {k: np.concatenate([v, np.zeros((1, 3), "int32")], axis=1) for k, v in short.items()}
    np.testing.assert_allclose(encoder(short)["sequence_output"], encoder(padded)["sequence_output"][:, :4],
                               atol=2e-3)
