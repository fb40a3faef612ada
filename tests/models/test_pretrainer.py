"""BertPretrainer: logits and loss equal transformers' BertForPreTraining; Google (`cls/*`) and Hugging Face
(`cls.*`) head checkpoints load with the right layout; checkpoints without heads start them fresh."""

import json
import logging

import keras
import numpy as np
import pytest

from official_bert import BertConfig, BertEncoder
from official_bert.checkpoints import encoder_tensors, write_google_checkpoint
from official_bert.models.pretrainer import BertPretrainer, load_pretrainer_weights, save_pretrainer

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

HF_CONFIG = dict(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                 max_position_embeddings=40, type_vocab_size=2, hidden_act="gelu", layer_norm_eps=1e-12)


def _randomized(model, seed=0):
    """Every parameter (LayerNorms and biases too) random, so no weight can load into the wrong place unseen."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.2)
    return model.eval()


@pytest.fixture(scope="module")
def hf_pretraining_dir(tmp_path_factory):
    """A tiny random `BertForPreTraining`, saved by transformers (safetensors)."""
    path = tmp_path_factory.mktemp("hf_pretraining")
    model = _randomized(transformers.BertForPreTraining(transformers.BertConfig(**HF_CONFIG)))
    model.save_pretrained(path)
    return path


def _batch(seed=0, batch=3, seq=12, predictions=4):
    """Padded inputs, distinct masked positions inside the real tokens (some prediction slots unused)."""
    rng = np.random.default_rng(seed)
    lengths = [seq, 9, 6]
    mask = (np.arange(seq)[None] < np.array(lengths)[:, None]).astype(np.int32)
    ids = rng.integers(1, HF_CONFIG["vocab_size"], (batch, seq)).astype(np.int32) * mask
    types = ((np.arange(seq)[None] >= np.array(lengths)[:, None] // 2) * mask).astype(np.int32)
    positions = np.zeros((batch, predictions), np.int32)
    weights = np.zeros((batch, predictions), np.float32)
    for i, (length, used) in enumerate(zip(lengths, (4, 3, 2))):
        positions[i, :used] = np.sort(rng.choice(np.arange(1, length - 1), used, replace=False))
        weights[i, :used] = 1.0
    labels = {"masked_lm_ids": (rng.integers(1, HF_CONFIG["vocab_size"], (batch, predictions)) * weights
                                ).astype(np.int32),
              "masked_lm_weights": weights, "next_sentence_labels": np.array([0, 1, 1], np.int32)}
    inputs = {"input_word_ids": ids, "input_mask": mask, "input_type_ids": types, "masked_lm_positions": positions}
    return inputs, labels


def _hf_outputs(model, inputs, labels):
    """transformers' logits at our masked positions, NSP logits and its loss (labels -100 off the masked slots)."""
    mlm_labels = np.full(inputs["input_word_ids"].shape, -100, np.int64)
    for i in range(mlm_labels.shape[0]):
        used = labels["masked_lm_weights"][i] > 0
        mlm_labels[i, inputs["masked_lm_positions"][i, used]] = labels["masked_lm_ids"][i, used]
    with torch.no_grad():
        out = model(input_ids=torch.tensor(inputs["input_word_ids"]).long(),
                    attention_mask=torch.tensor(inputs["input_mask"]).long(),
                    token_type_ids=torch.tensor(inputs["input_type_ids"]).long(),
                    labels=torch.tensor(mlm_labels), next_sentence_label=torch.tensor(labels["next_sentence_labels"].astype(np.int64)))
    logits = out.prediction_logits.numpy()  # (batch, seq, vocab)
    gathered = np.take_along_axis(logits, inputs["masked_lm_positions"][..., None].astype(np.int64), axis=1)
    return gathered, out.seq_relationship_logits.numpy(), float(out.loss)


def _pretrainer(config_dir):
    return BertPretrainer(BertEncoder(BertConfig.from_json_file(config_dir / "config.json")))


def test_logits_loss_and_metrics_equal_transformers_bert_for_pretraining(hf_pretraining_dir):
    pretrainer = _pretrainer(hf_pretraining_dir)
    assert load_pretrainer_weights(pretrainer, hf_pretraining_dir) == {"masked_lm": True, "next_sentence": True}
    hf = transformers.BertForPreTraining.from_pretrained(hf_pretraining_dir, attn_implementation="eager").eval()
    inputs, labels = _batch()
    mlm, nsp, hf_loss = _hf_outputs(hf, inputs, labels)
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


def test_saved_pretrainer_loads_in_transformers_with_equal_logits(hf_pretraining_dir, tmp_path):
    pretrainer = _pretrainer(hf_pretraining_dir)
    load_pretrainer_weights(pretrainer, hf_pretraining_dir)
    save_pretrainer(pretrainer, tmp_path / "ours")
    reloaded, info = transformers.BertForPreTraining.from_pretrained(
        tmp_path / "ours", attn_implementation="eager", output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"]
    inputs, labels = _batch(seed=1)
    mlm, nsp, _ = _hf_outputs(reloaded.eval(), inputs, labels)
    outputs = pretrainer(inputs)
    np.testing.assert_allclose(outputs["mlm_logits"].numpy(), mlm, atol=1e-5)
    np.testing.assert_allclose(outputs["nsp_logits"].numpy(), nsp, atol=1e-5)
    with pytest.raises(FileExistsError, match="model.safetensors exists"):
        save_pretrainer(pretrainer, tmp_path / "ours")


def test_google_checkpoint_with_cls_variables_loads_with_the_right_layout(hf_pretraining_dir, tmp_path):
    """Google's run_pretraining.py names and shapes: dense kernels [in, out], `cls/seq_relationship/output_weights`
    [2, hidden] (not transposed), `cls/predictions/output_bias` [vocab]; optimizer slots are skipped."""
    hf = transformers.BertForPreTraining.from_pretrained(hf_pretraining_dir, attn_implementation="eager").eval()
    state = {k: v.numpy() for k, v in hf.state_dict().items()}
    source = _pretrainer(hf_pretraining_dir)
    load_pretrainer_weights(source, hf_pretraining_dir)
    tensors = encoder_tensors(source.encoder, "google")  # the encoder half (its layout is tested in checkpoints/)
    tensors.update({
        "cls/predictions/transform/dense/kernel": state["cls.predictions.transform.dense.weight"].T,
        "cls/predictions/transform/dense/bias": state["cls.predictions.transform.dense.bias"],
        "cls/predictions/transform/LayerNorm/gamma": state["cls.predictions.transform.LayerNorm.weight"],
        "cls/predictions/transform/LayerNorm/beta": state["cls.predictions.transform.LayerNorm.bias"],
        "cls/predictions/output_bias": state["cls.predictions.bias"],
        "cls/seq_relationship/output_weights": state["cls.seq_relationship.weight"],  # [2, hidden]
        "cls/seq_relationship/output_bias": state["cls.seq_relationship.bias"],
        "cls/seq_relationship/output_weights/adam_m": np.zeros((2, 32), np.float32),
        "global_step": np.array(1000, np.int64),
    })
    assert tensors["cls/seq_relationship/output_weights"].shape == (2, 32)
    write_google_checkpoint(tensors, str(tmp_path / "bert_model.ckpt"))
    (tmp_path / "bert_config.json").write_text(json.dumps(BertConfig(**HF_CONFIG).to_dict()))

    pretrainer = BertPretrainer(BertEncoder(BertConfig.from_json_file(tmp_path / "bert_config.json")))
    assert load_pretrainer_weights(pretrainer, tmp_path) == {"masked_lm": True, "next_sentence": True}
    inputs, labels = _batch(seed=2)
    mlm, nsp, _ = _hf_outputs(hf, inputs, labels)
    outputs = pretrainer(inputs)
    np.testing.assert_allclose(outputs["mlm_logits"].numpy(), mlm, atol=1e-5)
    np.testing.assert_allclose(outputs["nsp_logits"].numpy(), nsp, atol=1e-5)
    names = {spec.google_name: spec.stored_shape("google") for spec in pretrainer.head_specs()}
    assert names == {"cls/predictions/transform/dense/kernel": (32, 32), "cls/predictions/transform/dense/bias": (32,),
                     "cls/predictions/transform/LayerNorm/gamma": (32,), "cls/predictions/transform/LayerNorm/beta": (32,),
                     "cls/predictions/output_bias": (100,), "cls/seq_relationship/output_weights": (2, 32),
                     "cls/seq_relationship/output_bias": (2,)}


def test_masked_lm_only_checkpoint_and_the_old_decoder_bias_name(tmp_path):
    """A `BertForMaskedLM` has no NSP head (it starts fresh); old exports name the bias `cls.predictions.decoder.bias`."""
    from safetensors.numpy import load_file, save_file

    hf = _randomized(transformers.BertForMaskedLM(transformers.BertConfig(**HF_CONFIG)), seed=3)
    hf.save_pretrained(tmp_path)
    tensors = load_file(tmp_path / "model.safetensors")
    assert "cls.predictions.bias" in tensors
    tensors["cls.predictions.decoder.bias"] = tensors.pop("cls.predictions.bias")
    save_file(tensors, tmp_path / "model.safetensors", metadata={"format": "pt"})

    pretrainer = _pretrainer(tmp_path)
    assert load_pretrainer_weights(pretrainer, tmp_path) == {"masked_lm": True, "next_sentence": False}
    inputs, _ = _batch(seed=4)
    with torch.no_grad():
        logits = hf(input_ids=torch.tensor(inputs["input_word_ids"]).long(),
                    attention_mask=torch.tensor(inputs["input_mask"]).long(),
                    token_type_ids=torch.tensor(inputs["input_type_ids"]).long()).logits.numpy()
    expected = np.take_along_axis(logits, inputs["masked_lm_positions"][..., None].astype(np.int64), axis=1)
    np.testing.assert_allclose(pretrainer(inputs)["mlm_logits"].numpy(), expected, atol=1e-5)


def test_head_with_a_wrong_shape_names_the_variable(hf_pretraining_dir, tmp_path):
    from safetensors.numpy import load_file, save_file

    tensors = load_file(hf_pretraining_dir / "model.safetensors")
    tensors["cls.seq_relationship.weight"] = np.zeros((3, 32), np.float32)
    save_file(tensors, tmp_path / "model.safetensors", metadata={"format": "pt"})
    (tmp_path / "config.json").write_text((hf_pretraining_dir / "config.json").read_text())
    with pytest.raises(ValueError, match=r"'cls.seq_relationship.weight' has shape \(3, 32\), expected \(2, 32\)"):
        load_pretrainer_weights(_pretrainer(tmp_path), tmp_path)


def test_checkpoint_without_heads_starts_them_fresh(minilm_dir, caplog):
    from official_bert.checkpoints import load_encoder

    pretrainer = _pretrainer(minilm_dir)
    with caplog.at_level(logging.INFO):
        loaded = load_pretrainer_weights(pretrainer, minilm_dir)
    assert loaded == {"masked_lm": False, "next_sentence": False}
    assert "no task head in the checkpoint" in caplog.text and "no next-sentence head" in caplog.text
    encoder, _ = load_encoder(minilm_dir)
    np.testing.assert_array_equal(pretrainer.encoder.embeddings.word_embeddings.numpy(),
                                  encoder.embeddings.word_embeddings.numpy())
    np.testing.assert_array_equal(pretrainer.masked_lm.output_bias.numpy(), np.zeros(30522, np.float32))
    inputs, _ = _batch()
    assert pretrainer(inputs)["mlm_logits"].shape == (3, 4, 30522)


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
    inputs, _ = _batch()
    np.testing.assert_allclose(restored(inputs)["mlm_logits"], pretrainer(inputs)["mlm_logits"], atol=1e-6)
