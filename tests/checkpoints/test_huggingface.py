"""Hugging Face checkpoints: parity with transformers' outputs, save/reload round trip, errors."""

import json
import shutil

import numpy as np
import pytest

from official_bert.checkpoints import encoder_tensors, load_encoder, save_encoder

REFERENCE_SETS = ("sst2", "mrpc")  # 32 SST-2 sentences and 16 MRPC pairs


@pytest.fixture(scope="module")
def minilm(minilm_dir):
    return load_encoder(minilm_dir)


@pytest.fixture(scope="module")
def reference(shared_data):
    return dict(np.load(shared_data / "reference" / "minilm_reference.npz"))


def _encoder_inputs(reference, name):
    return {"input_word_ids": reference[f"{name}_input_ids"], "input_mask": reference[f"{name}_padding_mask"],
            "input_type_ids": reference[f"{name}_segment_ids"]}


@pytest.mark.parametrize("name", REFERENCE_SETS)
def test_minilm_matches_transformers_outputs(minilm, reference, name):
    encoder, config = minilm
    assert config.num_hidden_layers == 6 and config.hidden_size == 384
    outputs = encoder(_encoder_inputs(reference, name))
    real = reference[f"{name}_padding_mask"].astype(bool)
    sequence_diff = np.abs(outputs["sequence_output"].numpy() - reference[f"{name}_sequence_output"])[real].max()
    pooled_diff = np.abs(outputs["pooled_output"].numpy() - reference[f"{name}_pooled_output"]).max()
    assert sequence_diff <= 1e-5, sequence_diff
    assert pooled_diff <= 1e-5, pooled_diff
    # The sentence-transformers embedding: mean over real tokens, then L2 normalisation.
    mask = real[..., None]
    mean = (outputs["sequence_output"].numpy() * mask).sum(1) / mask.sum(1)
    embedding = mean / np.linalg.norm(mean, axis=-1, keepdims=True)
    np.testing.assert_allclose(embedding, reference[f"{name}_sentence_embedding"], atol=1e-5)


@pytest.mark.slow
def test_saved_directory_loads_in_transformers_with_equal_outputs(minilm, reference, tmp_path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    encoder, _ = minilm
    save_encoder(encoder, tmp_path / "hf")
    model = transformers.BertModel.from_pretrained(tmp_path / "hf", attn_implementation="eager").eval()
    x = _encoder_inputs(reference, "mrpc")
    with torch.no_grad():
        theirs = model(input_ids=torch.tensor(x["input_word_ids"]).long(),
                       attention_mask=torch.tensor(x["input_mask"]).long(),
                       token_type_ids=torch.tensor(x["input_type_ids"]).long())
    ours = encoder(x)
    real = x["input_mask"].astype(bool)
    np.testing.assert_allclose(theirs.last_hidden_state.numpy()[real], ours["sequence_output"].numpy()[real],
                               atol=1e-5)
    np.testing.assert_allclose(theirs.pooler_output.numpy(), ours["pooled_output"].numpy(), atol=1e-5)
    # And back again: our reader loads what our writer wrote, to identical weights.
    reloaded, _ = load_encoder(tmp_path / "hf")
    for a, b in zip(encoder.weights, reloaded.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_save_refuses_to_overwrite(minilm, tmp_path):
    encoder, _ = minilm
    save_encoder(encoder, tmp_path)
    with pytest.raises(FileExistsError, match="model.safetensors exists"):
        save_encoder(encoder, tmp_path)
    save_encoder(encoder, tmp_path, overwrite=True)


def test_saved_files_have_the_mode_open_gives_under_the_umask(minilm, tmp_path):
    """safetensors writes through a private temporary file (mode 0o600): a server or a colleague running as
    another user could not read the weights beside a readable config.json."""
    import os
    import stat

    encoder, _ = minilm
    previous = os.umask(0o027)
    try:
        save_encoder(encoder, tmp_path / "hf")
    finally:
        os.umask(previous)
    modes = {path.name: stat.S_IMODE(path.stat().st_mode) for path in (tmp_path / "hf").iterdir()}
    assert modes == {"model.safetensors": 0o640, "config.json": 0o640}


def _copy_with_tensors(minilm_dir, tmp_path, edit):
    """A copy of MiniLM whose tensors `edit(dict)` changed."""
    from safetensors.numpy import load_file, save_file

    tensors = load_file(minilm_dir / "model.safetensors")
    edit(tensors)
    out = tmp_path / "edited"
    out.mkdir()
    shutil.copy(minilm_dir / "config.json", out / "config.json")
    save_file(tensors, out / "model.safetensors", metadata={"format": "pt"})
    return out


def test_task_model_prefix_and_heads_are_accepted(minilm_dir, minilm, tmp_path):
    def add_prefix_and_head(tensors):
        for name in list(tensors):
            tensors["bert." + name] = tensors.pop(name)
        tensors["classifier.weight"] = np.zeros((3, 384), "float32")
        tensors["classifier.bias"] = np.zeros((3,), "float32")

    encoder, _ = load_encoder(_copy_with_tensors(minilm_dir, tmp_path, add_prefix_and_head))
    np.testing.assert_array_equal(encoder.pooler.kernel.numpy(), minilm[0].pooler.kernel.numpy())


def test_wrong_shape_names_variable_and_both_shapes(minilm_dir, tmp_path):
    def shrink(tensors):
        tensors["encoder.layer.3.intermediate.dense.weight"] = np.zeros((1536, 380), "float32")

    with pytest.raises(ValueError, match=r"'encoder\.layer\.3\.intermediate\.dense\.weight' has shape \(1536, 380\), "
                                         r"expected \(1536, 384\)"):
        load_encoder(_copy_with_tensors(minilm_dir, tmp_path, shrink))


def test_missing_variable_is_named_and_nothing_is_loaded(minilm_dir, tmp_path):
    def drop(tensors):
        del tensors["pooler.dense.bias"]

    with pytest.raises(ValueError, match=r"1 variable\(s\) missing.*'pooler\.dense\.bias' \(expected shape \(384,\)\)"):
        load_encoder(_copy_with_tensors(minilm_dir, tmp_path, drop))


def test_config_with_fewer_layers_than_weights_is_an_error(minilm_dir, tmp_path):
    out = _copy_with_tensors(minilm_dir, tmp_path, lambda tensors: None)
    config = json.loads((out / "config.json").read_text())
    config["num_hidden_layers"] = 4
    (out / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match=r"not used by a model built from its config.*encoder\.layer\.4\."):
        load_encoder(out)


def test_directories_without_a_usable_checkpoint(tmp_path):
    with pytest.raises(FileNotFoundError, match="no BERT checkpoint found"):
        load_encoder(tmp_path)
    (tmp_path / "pytorch_model.bin").write_bytes(b"")
    with pytest.raises(ValueError, match="only pytorch_model.bin found"):
        load_encoder(tmp_path)
    with pytest.raises(FileNotFoundError, match="missing: no such directory, nor a TF checkpoint prefix"):
        load_encoder(tmp_path / "missing")


def test_a_checkpoint_without_its_optional_pooler_draws_the_pooler_as_a_new_encoder(tmp_path):
    """A RoBERTa checkpoint without the pooler (transformers saves its task models so) loads every other weight, and
    the pooler is drawn as a new encoder of the same seed draws it: the same values as before loads skipped draws."""
    import keras
    from safetensors.numpy import load_file, save_file

    from official_bert import BertEncoder
    from tests.tiny_families import roberta_directory

    path = roberta_directory(tmp_path / "roberta", max_position_embeddings=20)
    tensors = load_file(path / "model.safetensors")
    save_file({k: v for k, v in tensors.items() if not k.startswith("pooler.")}, path / "model.safetensors",
              metadata={"format": "pt"})
    keras.utils.set_random_seed(5)
    encoder, config = load_encoder(path)
    keras.utils.set_random_seed(5)
    new = BertEncoder(config)
    np.testing.assert_array_equal(encoder.pooler.kernel.numpy(), new.pooler.kernel.numpy())
    assert np.abs(encoder.pooler.kernel.numpy()).max() > 0
    np.testing.assert_array_equal(encoder.pooler.bias.numpy(), 0)
    loaded = encoder_tensors(encoder, "hf")
    for name, value in tensors.items():
        if not name.startswith("pooler."):
            np.testing.assert_array_equal(loaded[name], value, err_msg=name)
