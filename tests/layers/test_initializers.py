"""A new model draws each weight on its own, as BERT (Google's `create_initializer` per variable) and transformers
(`_init_weights` per module) do: no two weights share their values, not even a prefix of them (a Keras initializer
instance repeats its draw, so sharing one made a layer's query, key and value kernels equal and the position table
the first rows of the word table)."""

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
