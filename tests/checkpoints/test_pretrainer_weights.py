"""load_pretrainer_weights / save_pretrainer: Google (`cls/*`) and Hugging Face (`cls.*`) head checkpoints load with
the right layout, checkpoints without heads start them fresh, and what we write transformers loads."""

import json
import logging

import numpy as np
import pytest

from official_bert import BertConfig, BertEncoder
from official_bert.checkpoints import (encoder_tensors, head_specs, load_pretrainer_weights, save_pretrainer,
                                       write_google_checkpoint)
from official_bert.models.pretrainer import BertPretrainer

from hf_pretraining import (HF_CONFIG, batch, hf_outputs, pretrainer_for, randomized, save_hf_pretraining, torch,
                            transformers)


@pytest.fixture(scope="module")
def hf_pretraining_dir(tmp_path_factory):
    return save_hf_pretraining(tmp_path_factory.mktemp("hf_pretraining"))


def test_saved_pretrainer_loads_in_transformers_with_equal_logits(hf_pretraining_dir, tmp_path):
    pretrainer = pretrainer_for(hf_pretraining_dir)
    load_pretrainer_weights(pretrainer, hf_pretraining_dir)
    save_pretrainer(pretrainer, tmp_path / "ours")
    reloaded, info = transformers.BertForPreTraining.from_pretrained(
        tmp_path / "ours", attn_implementation="eager", output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"]
    inputs, labels = batch(seed=1)
    mlm, nsp, _ = hf_outputs(reloaded.eval(), inputs, labels)
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
    source = pretrainer_for(hf_pretraining_dir)
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
    inputs, labels = batch(seed=2)
    mlm, nsp, _ = hf_outputs(hf, inputs, labels)
    outputs = pretrainer(inputs)
    np.testing.assert_allclose(outputs["mlm_logits"].numpy(), mlm, atol=1e-5)
    np.testing.assert_allclose(outputs["nsp_logits"].numpy(), nsp, atol=1e-5)
    names = {spec.google_name: spec.stored_shape("google") for spec in head_specs(pretrainer)}
    assert names == {"cls/predictions/transform/dense/kernel": (32, 32), "cls/predictions/transform/dense/bias": (32,),
                     "cls/predictions/transform/LayerNorm/gamma": (32,), "cls/predictions/transform/LayerNorm/beta": (32,),
                     "cls/predictions/output_bias": (100,), "cls/seq_relationship/output_weights": (2, 32),
                     "cls/seq_relationship/output_bias": (2,)}


def test_masked_lm_only_checkpoint_and_the_old_decoder_bias_name(tmp_path):
    """A `BertForMaskedLM` has no NSP head (it starts fresh); old exports name the bias `cls.predictions.decoder.bias`."""
    from safetensors.numpy import load_file, save_file

    hf = randomized(transformers.BertForMaskedLM(transformers.BertConfig(**HF_CONFIG)), seed=3)
    hf.save_pretrained(tmp_path)
    tensors = load_file(tmp_path / "model.safetensors")
    assert "cls.predictions.bias" in tensors
    tensors["cls.predictions.decoder.bias"] = tensors.pop("cls.predictions.bias")
    save_file(tensors, tmp_path / "model.safetensors", metadata={"format": "pt"})

    pretrainer = pretrainer_for(tmp_path)
    assert load_pretrainer_weights(pretrainer, tmp_path) == {"masked_lm": True, "next_sentence": False}
    inputs, _ = batch(seed=4)
    with torch.no_grad():
        logits = hf(input_ids=torch.tensor(inputs["input_word_ids"]).long(),
                    attention_mask=torch.tensor(inputs["input_mask"]).long(),
                    token_type_ids=torch.tensor(inputs["input_type_ids"]).long()).logits.numpy()
    expected = np.take_along_axis(logits, inputs["masked_lm_positions"][..., None].astype(np.int64), axis=1)
    np.testing.assert_allclose(pretrainer(inputs)["mlm_logits"].numpy(), expected, atol=1e-5)


def test_a_pretrainer_without_a_sentence_head_logs_nothing_about_one(tmp_path, caplog):
    """Objective "mlm" (no next-sentence head): loading a `BertForMaskedLM` says nothing of a fresh NSP head; a
    pre-trainer that has that head is told it starts fresh."""
    randomized(transformers.BertForMaskedLM(transformers.BertConfig(**HF_CONFIG)), seed=5).save_pretrained(tmp_path)
    config = BertConfig.from_json_file(tmp_path / "config.json")
    with caplog.at_level(logging.INFO):
        loaded = load_pretrainer_weights(BertPretrainer(BertEncoder(config), objective="mlm"), tmp_path)
    assert loaded == {"masked_lm": True, "next_sentence": False}
    assert "next-sentence" not in caplog.text
    caplog.clear()
    with caplog.at_level(logging.INFO):
        load_pretrainer_weights(BertPretrainer(BertEncoder(config)), tmp_path)
    assert "no next-sentence head in the checkpoint; it starts from a fresh initialisation" in caplog.text


def test_head_with_a_wrong_shape_names_the_variable(hf_pretraining_dir, tmp_path):
    from safetensors.numpy import load_file, save_file

    tensors = load_file(hf_pretraining_dir / "model.safetensors")
    tensors["cls.seq_relationship.weight"] = np.zeros((3, 32), np.float32)
    save_file(tensors, tmp_path / "model.safetensors", metadata={"format": "pt"})
    (tmp_path / "config.json").write_text((hf_pretraining_dir / "config.json").read_text())
    with pytest.raises(ValueError, match=r"'cls.seq_relationship.weight' has shape \(3, 32\), expected \(2, 32\)"):
        load_pretrainer_weights(pretrainer_for(tmp_path), tmp_path)


@pytest.mark.slow
def test_checkpoint_without_heads_starts_them_fresh(minilm_dir, caplog):
    from official_bert.checkpoints import load_encoder

    pretrainer = pretrainer_for(minilm_dir)
    with caplog.at_level(logging.INFO):
        loaded = load_pretrainer_weights(pretrainer, minilm_dir)
    assert loaded == {"masked_lm": False, "next_sentence": False}
    assert "no masked-LM head in the checkpoint" in caplog.text and "no next-sentence head" in caplog.text
    encoder, _ = load_encoder(minilm_dir)
    np.testing.assert_array_equal(pretrainer.encoder.embeddings.word_embeddings.numpy(),
                                  encoder.embeddings.word_embeddings.numpy())
    np.testing.assert_array_equal(pretrainer.masked_lm.output_bias.numpy(), np.zeros(30522, np.float32))
    inputs, _ = batch()
    assert pretrainer(inputs)["mlm_logits"].shape == (3, 4, 30522)
