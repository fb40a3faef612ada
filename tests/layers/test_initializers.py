"""A new model draws each weight on its own, as BERT (Google's `create_initializer` per variable) and transformers
(`_init_weights` per module) do: no two weights share their values, not even a prefix of them (a Keras initializer
instance repeats its draw, so sharing one made a layer's query, key and value kernels equal and the position table
the first rows of the word table)."""

import contextlib
import itertools

import keras
import numpy as np
import pytest

from official_bert import BertConfig, BertEncoder
from official_bert.layers.initializers import truncated_normal

TRUNCATED_STD = 0.8796  # the standard deviation of a normal truncated at two of its own, per unit of it


def _drawn_weights(model):
    """path -> values of the weights drawn at random (not the zero biases, nor the LayerNorms' ones and zeros)."""
    values = {v.path: np.asarray(v.numpy(), np.float64).ravel() for v in model.weights}
    return {path: value for path, value in values.items() if np.unique(value).size > 2}


def _assert_drawn_apart(model):
    drawn = _drawn_weights(model)
    assert len(drawn) >= 6, sorted(drawn)
    for (path_a, a), (path_b, b) in itertools.combinations(drawn.items(), 2):
        size = min(a.size, b.size)
        assert not np.array_equal(a[:size], b[:size]), f"{path_a} repeats {path_b}"
    return drawn


@pytest.mark.parametrize("model_type", ["bert", "albert"])
def test_a_new_encoder_draws_each_weight_on_its_own(model_type):
    keras.utils.set_random_seed(0)
    config = BertConfig(model_type=model_type, vocab_size=100, hidden_size=32,
                        embedding_size=16 if model_type == "albert" else None, num_hidden_layers=2,
                        num_attention_heads=4, intermediate_size=64, max_position_embeddings=40, initializer_range=0.02)
    drawn = _assert_drawn_apart(BertEncoder(config))
    assert any("query" in path for path in drawn) and any("key" in path for path in drawn)
    for path, values in drawn.items():  # each a truncated normal of stddev 0.02
        assert np.abs(values).max() <= 2 * 0.02 + 1e-7, path
        if values.size >= 512:  # (the token-type table has 2 rows)
            np.testing.assert_allclose(values.std(), 0.02 * TRUNCATED_STD, rtol=0.15, err_msg=path)


@pytest.mark.parametrize("init_scheme", ["bert", "fan_in"])
def test_a_new_feature_encoder_draws_each_weight_on_its_own(init_scheme):
    from official_bert import BertFeatureEncoder

    keras.utils.set_random_seed(0)
    config = BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                        max_position_embeddings=21)
    drawn = _assert_drawn_apart(BertFeatureEncoder(config, input_channels=6, init_scheme=init_scheme))
    assert sum("attention" in path and path.endswith("kernel") for path in drawn) == 8  # q, k, v, output x 2 blocks


def test_draws_repeat_under_the_same_seed():
    values = []
    for _ in range(2):
        keras.utils.set_random_seed(7)
        values.append([np.asarray(truncated_normal(0.02)((8, 4))) for _ in range(2)])
    np.testing.assert_array_equal(values[0][0], values[1][0])
    np.testing.assert_array_equal(values[0][1], values[1][1])
    assert not np.array_equal(values[0][0], values[0][1])


def _encoder_and_head(config, loaded_after_build):
    """Under seed 3: an encoder (built inside `weights_loaded_after_build()` when asked), then a head built after."""
    from official_bert.layers.initializers import weights_loaded_after_build

    keras.utils.set_random_seed(3)
    with weights_loaded_after_build() if loaded_after_build else contextlib.nullcontext():
        encoder = BertEncoder(config)
    head = keras.layers.Dense(3, kernel_initializer=truncated_normal(0.02))
    head.build((None, config.hidden_size))
    return encoder, head


@pytest.mark.parametrize("model_type", ["bert", "albert"])
def test_a_build_for_loading_skips_bert_draws_and_moves_no_other_draw(model_type):
    """Inside `weights_loaded_after_build()` the weights BERT's initializer draws are zeros, everything else is as a
    normal build makes it, a skipped draw made later equals the normal build's, and the draws after the build (a
    head's) are those of a normal build: the skipped draws took nothing from the random state."""
    config = BertConfig(model_type=model_type, vocab_size=100, hidden_size=32,
                        embedding_size=16 if model_type == "albert" else None, num_hidden_layers=2,
                        num_attention_heads=4, intermediate_size=64, max_position_embeddings=40)
    drawn, drawn_head = _encoder_and_head(config, loaded_after_build=False)
    skipped, skipped_head = _encoder_and_head(config, loaded_after_build=True)
    assert [v.path for v in skipped.weights] == [v.path for v in drawn.weights]
    random_paths = set(_drawn_weights(drawn))
    assert any("query" in path for path in random_paths) and any("word" in path for path in random_paths)
    for a, b in zip(drawn.weights, skipped.weights):
        if a.path in random_paths:
            assert not np.any(b.numpy()), b.path
        else:  # biases, LayerNorms
            np.testing.assert_array_equal(b.numpy(), a.numpy(), err_msg=b.path)
    np.testing.assert_array_equal(skipped_head.kernel.numpy(), drawn_head.kernel.numpy())
    later = skipped.pooler.kernel_initializer(skipped.pooler.kernel.shape, skipped.pooler.kernel.dtype)
    np.testing.assert_array_equal(np.asarray(later), drawn.pooler.kernel.numpy())


def test_an_encoder_saved_as_keras_reloads_with_its_initializers(tmp_path):
    """BERT's initializer is registered with Keras: a `.keras` file of a new encoder loads, with equal weights."""
    config = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=1, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=40)
    encoder = BertEncoder(config)
    encoder.save(tmp_path / "encoder.keras")
    reloaded = keras.saving.load_model(tmp_path / "encoder.keras")
    for a, b in zip(encoder.weights, reloaded.weights):
        np.testing.assert_array_equal(b.numpy(), a.numpy(), err_msg=a.path)
    assert type(reloaded.pooler.kernel_initializer) is type(encoder.pooler.kernel_initializer)
