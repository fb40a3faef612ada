"""BertFeatureEncoder and BertTimeSeriesClassifier: parity with PyTorch's own transformer layer, padding, the key
mask, standardisation and get_config."""

import keras
import numpy as np
import pytest
import torch

from official_bert import BertConfig, BertFeatureEncoder, BertTimeSeriesClassifier
from benchmarks.time_series_torch import TorchFeatureClassifier, torch_reference

pytestmark = pytest.mark.slow


def _config(hidden=32, layers=2, time=12):
    return BertConfig(vocab_size=1, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=4,
                      intermediate_size=4 * hidden, max_position_embeddings=time + 1, layer_norm_eps=1e-5)


def _batch(batch=3, time=9, channels=6, seed=0):
    rng = np.random.default_rng(seed)
    features = rng.normal(size=(batch, time, channels)).astype("float32")
    lengths = np.array([time, time - 3, 2][:batch])
    mask = (np.arange(time)[None] < lengths[:, None]).astype("int32")
    return {"input_features": (features * mask[..., None]).astype("float32"), "input_mask": mask}


def _classifier(channels=6, norm_first=True, **kwargs):
    keras.utils.set_random_seed(1)
    encoder = BertFeatureEncoder(_config(**kwargs), input_channels=channels, norm_first=norm_first,
                                 key_keep_prob=0.8)
    return BertTimeSeriesClassifier(encoder, num_classes=5)


@pytest.mark.parametrize("norm_first,channels", [(True, 6), (False, 6), (True, 32)])
def test_logits_equal_pytorch_transformer_layers(norm_first, channels):
    model = _classifier(channels, norm_first)
    assert (model.encoder.embeddings.projection is None) == (channels == 32)  # identity when equal
    inputs = _batch(channels=channels)
    inputs["input_features"][1, 6:] = 5.0  # garbage under the mask must not count
    ours = keras.ops.convert_to_numpy(model(inputs))
    with torch.no_grad():
        theirs = torch_reference(model)(torch.tensor(inputs["input_features"]),
                                        torch.tensor(inputs["input_mask"])).numpy()
    np.testing.assert_allclose(ours, theirs, atol=1e-5)


def test_the_fan_in_scheme_draws_each_weight_as_pytorchs_defaults_do():
    keras.utils.set_random_seed(2)
    config = BertConfig(vocab_size=1, hidden_size=64, num_hidden_layers=2, num_attention_heads=8,
                        intermediate_size=256, max_position_embeddings=30, layer_norm_eps=1e-5)
    encoder = BertFeatureEncoder(config, input_channels=12, norm_first=True, init_scheme="fan_in")
    ours = dict(torch_reference(BertTimeSeriesClassifier(encoder, num_classes=9)).named_parameters())
    torch.manual_seed(2)
    theirs = dict(TorchFeatureClassifier(12, 64, 2, 8, 256, 30, 9, True, 1e-5).named_parameters())
    assert sorted(ours) == sorted(theirs)
    for name, reference in theirs.items():
        mine, reference = ours[name].detach().numpy(), reference.detach().numpy()
        if not reference.any() or (reference == 1).all():  # zero biases; LayerNorm gammas
            np.testing.assert_array_equal(mine, reference, err_msg=name)
        elif reference.size >= 256:  # (the smallest, the classifier's bias, is too few draws to compare)
            assert 0.85 < mine.std() / reference.std() < 1.15, name
            assert np.abs(mine).max() <= 1.02 * np.abs(reference).max(), name
    with pytest.raises(ValueError, match="init_scheme must be one of"):
        BertFeatureEncoder(config, input_channels=12, init_scheme="xavier")


def test_padding_does_not_change_the_logits():
    model = _classifier()
    inputs = _batch(time=9)
    padded = {"input_features": np.pad(inputs["input_features"], [(0, 0), (0, 3), (0, 0)], constant_values=7.0),
              "input_mask": np.pad(inputs["input_mask"], [(0, 0), (0, 3)])}
    np.testing.assert_allclose(model(inputs), model(padded), atol=1e-5)


def test_key_keep_mask_drops_steps_in_training_only():
    mask = np.ones((200, 10), "int32")
    mask[:, 8:] = 0
    layer = BertFeatureEncoder(_config(), 6, key_keep_prob=0.8).get_layer("key_keep_mask")
    trained = keras.ops.convert_to_numpy(layer(mask, training=True))
    assert trained.shape == (200, 11)
    assert (trained[:, 0] == 1).all() and (trained[:, 9:] == 0).all()  # the classification position; padding
    assert 0.75 < trained[:, 1:9].mean() < 0.85
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(layer(mask)), np.pad(mask, [(0, 0), (1, 0)],
                                                                                   constant_values=1))


def test_standardisation_is_part_of_the_model():
    keras.utils.set_random_seed(1)
    encoder = BertFeatureEncoder(_config(), input_channels=6, norm_first=True)
    mean, scale = np.linspace(-1, 1, 6), np.linspace(0.5, 2, 6)
    model = BertTimeSeriesClassifier(encoder, 5, feature_mean=mean.tolist(), feature_scale=scale.tolist())
    plain = BertTimeSeriesClassifier(encoder, 5)
    plain.head.set_weights(model.head.get_weights())
    inputs = _batch()
    standardised = {**inputs, "input_features": ((inputs["input_features"] - mean) / scale).astype("float32")}
    np.testing.assert_allclose(model(inputs), plain(standardised), atol=1e-5)


def test_get_config_and_keras_file_round_trip(tmp_path):
    encoder = BertFeatureEncoder(_config(), input_channels=6, norm_first=True, key_keep_prob=0.7,
                                 init_scheme="fan_in")
    model = BertTimeSeriesClassifier(encoder, 5, dropout_rate=0.5, feature_mean=[0.0] * 6, feature_scale=[2.0] * 6)
    config = model.get_config()
    assert config["encoder"]["config"]["key_keep_prob"] == 0.7
    assert config["encoder"]["config"]["init_scheme"] == "fan_in"
    assert config["encoder"]["config"]["norm_first"] is True
    assert (config["dropout_rate"], config["feature_scale"]) == (0.5, [2.0] * 6)
    path = str(tmp_path / "model.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    inputs = _batch()
    np.testing.assert_allclose(model(inputs), loaded(inputs), atol=1e-6)
    assert loaded.encoder.key_keep_prob == 0.7 and loaded.encoder.norm_first


def test_trains():
    model = _classifier()
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    inputs = _batch(batch=3)
    history = model.fit(inputs, np.array([0, 1, 2]), epochs=8, batch_size=3, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]


def test_logits_equal_pytorch_on_the_torch_backend():
    from tests.models.test_other_backends import run_on_backend

    (result,) = run_on_backend("torch", """
        import json
        import keras
        import numpy as np
        import torch
        from tests.models.test_time_series_classifier import _batch, _classifier
        from benchmarks.time_series_torch import TorchFeatureClassifier, torch_reference

        diffs = []
        for norm_first in (True, False):
            model = _classifier(6, norm_first)
            inputs = _batch()
            ours = keras.ops.convert_to_numpy(model(inputs))
            with torch.no_grad():
                theirs = torch_reference(model)(torch.tensor(inputs["input_features"]),
                                                torch.tensor(inputs["input_mask"])).numpy()
            diffs.append(float(np.abs(ours - theirs).max()))
        print(json.dumps({"backend": keras.backend.backend(), "max_diff": max(diffs)}))
    """)
    assert result["backend"] == "torch"
    assert result["max_diff"] <= 1e-5, result


@pytest.mark.parametrize("norm_first", [True, False])
def test_mixed_bfloat16_gives_float32_logits_close_to_float32(norm_first):
    model = _classifier(norm_first=norm_first)
    policy = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        mixed = _classifier(norm_first=norm_first)
    finally:
        keras.mixed_precision.set_global_policy(policy)
    mixed.set_weights(model.get_weights())
    inputs = _batch()
    logits = mixed(inputs)
    assert logits.dtype == "float32"
    np.testing.assert_allclose(keras.ops.convert_to_numpy(logits), keras.ops.convert_to_numpy(model(inputs)),
                               atol=0.02)
