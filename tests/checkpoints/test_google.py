"""Google TF1 checkpoints: original variable names, optimizer slots skipped, errors name the variable."""

import json
import shutil

import numpy as np
import pytest

from official_bert.checkpoints import encoder_tensors, load_encoder, write_google_checkpoint


@pytest.fixture(scope="module")
def minilm(minilm_dir):
    return load_encoder(minilm_dir)


def _google_dir(tmp_path, minilm_dir, tensors):
    out = tmp_path / "google"
    out.mkdir()
    config = json.loads((minilm_dir / "config.json").read_text())
    google_keys = ("attention_probs_dropout_prob", "hidden_act", "hidden_dropout_prob", "hidden_size",
                   "initializer_range", "intermediate_size", "max_position_embeddings", "num_attention_heads",
                   "num_hidden_layers", "type_vocab_size", "vocab_size")
    (out / "bert_config.json").write_text(json.dumps({k: config[k] for k in google_keys}))
    write_google_checkpoint(tensors, str(out / "bert_model.ckpt"))
    return out


def _google_tensors_with_optimizer_state(encoder):
    tensors = encoder_tensors(encoder, "google")
    for name in list(tensors):
        tensors[f"{name}/adam_m"] = np.ones_like(tensors[name])
        tensors[f"{name}/adam_v"] = np.ones_like(tensors[name])
    tensors["global_step"] = np.array(1000, "int64")
    # Pre-training heads as Google stores them; seq_relationship is [classes, hidden].
    tensors["cls/seq_relationship/output_weights"] = np.zeros((2, 384), "float32")
    tensors["cls/seq_relationship/output_bias"] = np.zeros((2,), "float32")
    return tensors


def test_names_follow_the_original_bert_checkpoints(minilm):
    names = encoder_tensors(minilm[0], "google")
    assert names["bert/encoder/layer_0/attention/self/query/kernel"].shape == (384, 384)
    assert names["bert/encoder/layer_5/intermediate/dense/kernel"].shape == (384, 1536)
    assert {"bert/embeddings/word_embeddings", "bert/embeddings/LayerNorm/gamma", "bert/pooler/dense/bias",
            "bert/encoder/layer_2/attention/output/LayerNorm/beta"} <= set(names)
    assert len(names) == 5 + 6 * 16 + 2


@pytest.mark.slow
def test_google_checkpoint_loads_to_the_same_outputs(minilm, minilm_dir, shared_data, tmp_path):
    encoder, _ = minilm
    google_dir = _google_dir(tmp_path, minilm_dir, _google_tensors_with_optimizer_state(encoder))
    loaded, config = load_encoder(google_dir)
    assert config == minilm[1]
    reference = np.load(shared_data / "reference" / "minilm_reference.npz")
    x = {"input_word_ids": reference["mrpc_input_ids"], "input_mask": reference["mrpc_padding_mask"],
         "input_type_ids": reference["mrpc_segment_ids"]}
    ours = loaded(x)
    real = reference["mrpc_padding_mask"].astype(bool)
    assert np.abs(ours["sequence_output"].numpy() - reference["mrpc_sequence_output"])[real].max() <= 1e-5
    assert np.abs(ours["pooled_output"].numpy() - reference["mrpc_pooled_output"]).max() <= 1e-5
    # A checkpoint prefix works as well as the directory.
    by_prefix, _ = load_encoder(str(google_dir / "bert_model.ckpt"))
    np.testing.assert_array_equal(by_prefix.pooler.kernel.numpy(), loaded.pooler.kernel.numpy())


def test_google_shape_mismatch_names_the_variable(minilm, minilm_dir, tmp_path):
    tensors = encoder_tensors(minilm[0], "google")
    tensors["bert/encoder/layer_1/attention/self/key/kernel"] = np.zeros((384, 192), "float32")
    google_dir = _google_dir(tmp_path, minilm_dir, tensors)
    with pytest.raises(ValueError, match=r"'bert/encoder/layer_1/attention/self/key/kernel' has shape \(384, 192\), "
                                         r"expected \(384, 384\)"):
        load_encoder(google_dir)


def test_google_missing_variable_and_missing_config(minilm, minilm_dir, tmp_path):
    tensors = encoder_tensors(minilm[0], "google")
    del tensors["bert/embeddings/token_type_embeddings"]
    google_dir = _google_dir(tmp_path, minilm_dir, tensors)
    with pytest.raises(ValueError, match=r"missing.*'bert/embeddings/token_type_embeddings' \(expected shape \(2, 384\)\)"):
        load_encoder(google_dir)
    (google_dir / "bert_config.json").unlink()
    with pytest.raises(FileNotFoundError, match="expected bert_config.json"):
        load_encoder(google_dir)


def test_writer_refuses_to_overwrite(minilm, minilm_dir, tmp_path):
    tensors = encoder_tensors(minilm[0], "google")
    google_dir = _google_dir(tmp_path, minilm_dir, tensors)
    with pytest.raises(FileExistsError):
        write_google_checkpoint(tensors, str(google_dir / "bert_model.ckpt"))
    shutil.rmtree(google_dir)
