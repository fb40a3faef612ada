"""BertEncoder with an ALBERT config: factorised embeddings, shared blocks, the parameter count of albert-base-v2."""

import keras
import numpy as np
import pytest

from official_bert import BertConfig, BertEncoder, BertPretrainer

# albert-base-v2's config.json (transformers' hub copy): vocab 30000, E 128, H 768, 12 layers in 1 group, 12 heads.
ALBERT_BASE_V2 = dict(model_type="albert", vocab_size=30000, embedding_size=128, hidden_size=768, num_hidden_layers=12,
                      num_hidden_groups=1, inner_group_num=1, num_attention_heads=12, intermediate_size=3072,
                      max_position_embeddings=512, type_vocab_size=2, hidden_act="gelu_new")


def _tiny(**overrides):
    values = dict(model_type="albert", vocab_size=50, embedding_size=8, hidden_size=16, num_hidden_layers=6,
                  num_hidden_groups=3, inner_group_num=2, num_attention_heads=2, intermediate_size=24,
                  max_position_embeddings=10)
    return BertConfig.from_dict({**values, **overrides})


def _inputs(batch=2, seq=6):
    ids = np.arange(batch * seq, dtype=np.int32).reshape(batch, seq) % 50
    return {"input_word_ids": ids, "input_mask": np.ones_like(ids), "input_type_ids": np.zeros_like(ids)}


def test_albert_base_v2_has_transformers_parameter_count():
    transformers = pytest.importorskip("transformers")
    config = BertConfig.from_dict(ALBERT_BASE_V2)
    theirs = transformers.AlbertModel(transformers.AlbertConfig(**config.to_hf_dict()))
    expected = sum(p.numel() for p in theirs.parameters())
    assert expected == 11_683_584  # about 12M, as the ALBERT paper's Table 1 says of ALBERT-base
    assert BertEncoder(config).count_params() == expected


def test_blocks_are_shared_by_group():
    config = _tiny()
    encoder = BertEncoder(config)
    assert [block.name for block in encoder.transformer_layers] == [
        f"transformer_group_{g}_inner_{i}" for g in range(3) for i in range(2)]
    outputs = encoder(_inputs())
    assert len(outputs["encoder_outputs"]) == 6
    assert outputs["sequence_output"].shape == (2, 6, 16)
    assert encoder.embeddings.word_embeddings.shape == (50, 8)
    assert encoder.embedding_projection.kernel.shape == (8, 16)
    # one group: every layer runs the same block, so the same weights map each layer's input to its output
    single = BertEncoder(_tiny(num_hidden_groups=1, inner_group_num=1, num_hidden_layers=3))
    assert len(single.transformer_layers) == 1
    layers = single(_inputs())["encoder_outputs"]
    block = single.transformer_layers[0]
    mask = np.ones((2, 6), np.int32)
    np.testing.assert_allclose(block(layers[0], mask), layers[1], atol=1e-6)
    np.testing.assert_allclose(block(layers[1], mask), layers[2], atol=1e-6)


def test_albert_encoder_and_pretrainer_serialize(tmp_path):
    encoder = BertEncoder(_tiny())
    pretrainer = BertPretrainer(encoder, objective="mlm_sop")
    assert pretrainer.masked_lm.dense.kernel.shape == (16, 8)  # H -> E, decoder tied to the E-wide embeddings
    path = str(tmp_path / "albert.keras")
    pretrainer.save(path)
    loaded = keras.saving.load_model(path)
    inputs = {**_inputs(), "masked_lm_positions": np.zeros((2, 2), np.int32)}
    for name, value in pretrainer(inputs).items():
        np.testing.assert_allclose(loaded(inputs)[name], value, atol=1e-6)
    assert loaded.encoder.config == encoder.config


def test_bert_encoder_is_unchanged_by_the_albert_options(tiny_config):
    encoder = BertEncoder(tiny_config)
    assert encoder.embedding_projection is None
    assert [block.name for block in encoder.transformer_layers] == ["transformer_layer_0", "transformer_layer_1"]
    h, i, v, p, t = 32, 64, 100, 40, 2
    block = 4 * (h * h + h) + 2 * 2 * h + (h * i + i) + (i * h + h)
    assert encoder.count_params() == (v + p + t) * h + 2 * h + 2 * block + h * h + h
