"""BertTokenClassifier: shapes, loss masking, config round trip, HF BertForTokenClassification parity."""

import keras
import numpy as np
import pytest

from official_bert import BertEncoder
from official_bert.checkpoints import head_specs, load_task_weights
from official_bert.models.token_classifier import BertTokenClassifier


def _inputs(batch, seq, pad_from=None, vocab=100, seed=0):
    rng = np.random.default_rng(seed)
    mask = np.ones((batch, seq), np.int32)
    if pad_from is not None:
        mask[:, pad_from:] = 0
    return {"input_word_ids": rng.integers(1, vocab, (batch, seq)).astype(np.int32) * mask,
            "input_mask": mask, "input_type_ids": np.zeros((batch, seq), np.int32)}


def test_logits_per_token_in_float32_even_under_mixed_precision(tiny_config):
    model = BertTokenClassifier(BertEncoder(tiny_config), num_labels=9)
    logits = model(_inputs(2, 7))
    assert tuple(logits.shape) == (2, 7, 9) and logits.dtype == "float32"
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        mixed = BertTokenClassifier(BertEncoder(tiny_config), num_labels=9)
        assert mixed(_inputs(2, 7)).dtype == "float32"
    finally:
        keras.mixed_precision.set_global_policy("float32")
    assert model.dropout_rate == tiny_config.hidden_dropout_prob


def test_default_loss_ignores_positions_labeled_minus_100(tiny_config):
    logits = np.random.default_rng(0).normal(size=(2, 3, 4)).astype(np.float32)
    labels = np.array([[1, -100, 2], [0, -100, -100]])
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    expected = -(log_probs[0, 0, 1] + log_probs[0, 2, 2] + log_probs[1, 0, 0]) / 3
    loss = BertTokenClassifier(BertEncoder(tiny_config), num_labels=4).default_loss()
    assert float(loss(labels, logits)) == pytest.approx(expected, rel=1e-5)


def test_get_config_and_keras_file_round_trip(tiny_config, tmp_path):
    model = BertTokenClassifier(BertEncoder(tiny_config), num_labels=5, dropout_rate=0.2)
    clone = BertTokenClassifier.from_config(model.get_config())
    assert clone.num_labels == 5 and clone.dropout_rate == 0.2
    model.save(tmp_path / "tagger.keras")
    restored = keras.models.load_model(tmp_path / "tagger.keras")
    x = _inputs(2, 6, pad_from=4)
    np.testing.assert_allclose(model(x), restored(x), atol=1e-6)


def test_loads_hugging_face_bert_for_token_classification_and_matches_its_logits(tiny_config, tmp_path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    hf_config = transformers.BertConfig(**{**tiny_config.to_hf_dict(), "num_labels": 9})
    torch.manual_seed(0)
    reference = transformers.BertForTokenClassification(hf_config).eval()
    reference.save_pretrained(tmp_path, safe_serialization=True)
    model = BertTokenClassifier(BertEncoder(tiny_config), num_labels=9)
    # HF's token classifier has no pooler; ours keeps its own.
    assert load_task_weights(model.encoder, head_specs(model), str(tmp_path), optional_pooler=True)
    x = _inputs(2, 8, pad_from=6)
    with torch.no_grad():
        expected = reference(input_ids=torch.tensor(x["input_word_ids"], dtype=torch.long),
                             attention_mask=torch.tensor(x["input_mask"], dtype=torch.long),
                             token_type_ids=torch.tensor(x["input_type_ids"], dtype=torch.long)).logits.numpy()
    np.testing.assert_allclose(np.asarray(model(x))[:, :6], expected[:, :6], atol=1e-5)


def test_loads_an_encoder_checkpoint_with_a_fresh_head(tiny_config, tmp_path):
    from official_bert.checkpoints import save_encoder

    source = BertEncoder(tiny_config)
    save_encoder(source, tmp_path)
    model = BertTokenClassifier(BertEncoder(tiny_config), num_labels=4)
    assert not load_task_weights(model.encoder, head_specs(model), str(tmp_path), optional_pooler=True)
    np.testing.assert_array_equal(model.encoder.pooler.kernel.numpy(), source.pooler.kernel.numpy())
