"""BertPretrainer: logits, loss and metrics equal transformers' BertForPreTraining; the decoder is tied to the word
embeddings and survives a Keras round trip."""

import keras
import numpy as np
import pytest

from official_bert import BertConfig, BertEncoder
from official_bert.checkpoints import load_pretrainer_weights
from official_bert.models.pretrainer import BertPretrainer

from hf_pretraining import HF_CONFIG, batch, hf_outputs, pretrainer_for, save_hf_pretraining, torch, transformers


@pytest.fixture(scope="module")
def hf_pretraining_dir(tmp_path_factory):
    return save_hf_pretraining(tmp_path_factory.mktemp("hf_pretraining"))


def test_logits_loss_and_metrics_equal_transformers_bert_for_pretraining(hf_pretraining_dir):
    pretrainer = pretrainer_for(hf_pretraining_dir)
    assert load_pretrainer_weights(pretrainer, hf_pretraining_dir) == {"masked_lm": True, "next_sentence": True}
    hf = transformers.BertForPreTraining.from_pretrained(hf_pretraining_dir, attn_implementation="eager").eval()
    inputs, labels = batch()
    mlm, nsp, hf_loss = hf_outputs(hf, inputs, labels)
    outputs = pretrainer(inputs)
    assert outputs["mlm_logits"].shape == (3, 4, 100) and outputs["mlm_logits"].dtype == "float32"
    np.testing.assert_allclose(outputs["mlm_logits"].numpy(), mlm, atol=1e-5)
    np.testing.assert_allclose(outputs["nsp_logits"].numpy(), nsp, atol=1e-5)
    # Total loss: HF's mean MLM cross-entropy over the labeled tokens + NSP cross-entropy.
    loss = float(pretrainer.compute_loss(y=labels, y_pred=outputs))
    assert loss == pytest.approx(hf_loss, abs=1e-4)
    pretrainer.compile(optimizer="sgd")
    metrics = {k: float(v) for k, v in pretrainer.compute_metrics(inputs, labels, outputs).items()}
    used = labels["masked_lm_weights"] > 0
    assert metrics["masked_lm_accuracy"] == pytest.approx(
        np.mean(mlm.argmax(-1)[used] == labels["masked_lm_ids"][used]), abs=1e-6)
    assert metrics["next_sentence_accuracy"] == pytest.approx(
        np.mean(nsp.argmax(-1) == labels["next_sentence_labels"]), abs=1e-6)
    nsp_ce = torch.nn.functional.cross_entropy(torch.tensor(nsp), torch.tensor(labels["next_sentence_labels"].astype(np.int64)))
    assert metrics["next_sentence_loss"] == pytest.approx(float(nsp_ce), abs=1e-5)
    assert metrics["masked_lm_loss"] + metrics["next_sentence_loss"] == pytest.approx(hf_loss, abs=1e-4)


def test_decoder_is_the_word_embedding_matrix_and_config_round_trip(tmp_path):
    config = BertConfig(**HF_CONFIG)
    pretrainer = BertPretrainer(BertEncoder(config))
    table = pretrainer.encoder.embeddings.word_embeddings
    assert pretrainer.masked_lm.embedding_layer.word_embeddings is table
    assert [v.path for v in pretrainer.trainable_variables if tuple(v.shape) == (100, 32)] == [table.path]
    assert len({id(v) for v in pretrainer.trainable_variables}) == len(pretrainer.trainable_variables)
    pretrainer.save(tmp_path / "pretrainer.keras")
    restored = keras.models.load_model(tmp_path / "pretrainer.keras")
    assert restored.masked_lm.embedding_layer.word_embeddings is restored.encoder.embeddings.word_embeddings
    inputs, _ = batch()
    np.testing.assert_allclose(restored(inputs)["mlm_logits"], pretrainer(inputs)["mlm_logits"], atol=1e-6)
