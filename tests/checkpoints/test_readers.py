"""Checkpoint files that exist but cannot be read: one clear error naming the file and what is wrong with it."""

import json
import os
import re
import shutil

import numpy as np
import pytest
from tests.tasks.forked_commands import run_forked

from official_bert.checkpoints import load_encoder, open_checkpoint


def _corrupt_copy(minilm_dir, tmp_path, kind):
    """MiniLM's config.json beside a broken model.safetensors: cut to 1 MB, random bytes, or empty."""
    out = tmp_path / kind
    out.mkdir()
    shutil.copy(minilm_dir / "config.json", out / "config.json")
    with open(minilm_dir / "model.safetensors", "rb") as f:
        real = f.read(1 << 20)
    data = {"truncated": real, "header_cut": real[:100], "garbage": os.urandom(4096), "empty": b""}[kind]
    (out / "model.safetensors").write_bytes(data)
    return out


@pytest.mark.parametrize("kind,problem", [
    ("truncated", r"the file is truncated \(1048576 bytes, shorter than its header says\)"),
    ("header_cut", r"the file is truncated \(100 bytes"),
    ("garbage", r"not a safetensors file, or corrupt \(4096 bytes\)"),
    ("empty", r"the file is empty \(0 bytes\)"),
])
def test_a_corrupt_safetensors_file_is_named_with_its_problem(minilm_dir, tmp_path, kind, problem):
    directory = _corrupt_copy(minilm_dir, tmp_path, kind)
    path = str(directory / "model.safetensors")
    for load in (open_checkpoint, load_encoder):
        with pytest.raises(ValueError) as error:  # the CLIs print a ValueError as one line
            load(directory)
        message = str(error.value)
        assert message.startswith(f"{path}: cannot read the checkpoint: "), message
        assert re.search(problem, message), message
        assert "download or save it again" in message


def test_a_missing_shard_or_broken_index_is_named(minilm_dir, tmp_path):
    (tmp_path / "config.json").write_bytes((minilm_dir / "config.json").read_bytes())
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(json.dumps({"weight_map": {"a": "model-00001-of-00002.safetensors"}}))
    with pytest.raises(FileNotFoundError, match=r"model-00001-of-00002\.safetensors: shard named in the checkpoint "
                                                r"index is missing"):
        open_checkpoint(tmp_path)
    index.write_text('{"weight_map": ')
    with pytest.raises(ValueError, match=rf"{index}: not a safetensors index"):
        open_checkpoint(tmp_path)


@pytest.mark.slow
def test_the_cli_reports_a_truncated_checkpoint_as_one_line(minilm_dir, shared_data, tmp_path):
    directory = _corrupt_copy(minilm_dir, tmp_path, "truncated")
    model_dir = tmp_path / "run"
    (result,) = run_forked([("tasks.run_classifier", [
        "--task=MRPC", f"--data_dir={shared_data / 'glue' / 'MRPC'}", f"--init_checkpoint={directory}",
        f"--model_dir={model_dir}", "--num_train_steps=1"])], tmp_path)
    assert result.returncode == 2, result.stderr[-3000:]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert errors == [f"error: {directory / 'model.safetensors'}: cannot read the checkpoint: the file is truncated "
                      "(1048576 bytes, shorter than its header says) [safetensors: incomplete metadata, file not "
                      "fully covered]; download or save it again"], result.stderr[-3000:]


def test_a_corrupt_google_checkpoint_is_named(tmp_path):
    from official_bert.checkpoints import write_google_checkpoint

    prefix = str(tmp_path / "bert_model.ckpt")
    write_google_checkpoint({"bert/pooler/dense/bias": np.arange(1000, dtype="float32")}, prefix)
    data = next(tmp_path.glob("bert_model.ckpt.data-*"))
    data.write_bytes(data.read_bytes()[:100])  # truncated data: the index opens, the variable does not read
    reader = open_checkpoint(tmp_path)
    with pytest.raises(ValueError, match=rf"{prefix}: cannot read variable 'bert/pooler/dense/bias' \({prefix}\.index "
                                         rf"\+ {prefix}\.data-\*\): .*; download or save it again"):
        reader.get("bert/pooler/dense/bias")
    (tmp_path / "bert_model.ckpt.index").write_bytes(b"garbage")
    with pytest.raises(ValueError, match=rf"{prefix}: cannot read the TF checkpoint \({prefix}\.index \+ "
                                         rf"{prefix}\.data-\*\): file is too short to be an sstable"):
        open_checkpoint(tmp_path)


def test_a_path_that_is_no_checkpoint_says_what_it_is(minilm_dir, tmp_path):
    with pytest.raises(FileNotFoundError, match=re.escape(f"{tmp_path / 'MiniLM-v3'}: no such directory, nor a TF "
                                                          f"checkpoint prefix ({tmp_path / 'MiniLM-v3'}.index)")):
        open_checkpoint(tmp_path / "MiniLM-v3")
    config = minilm_dir / "config.json"
    with pytest.raises(FileNotFoundError, match=re.escape(f"{config}: a file, not a checkpoint directory or TF "
                                                          f"checkpoint prefix; pass the directory that holds it "
                                                          f"({minilm_dir})")):
        open_checkpoint(config)
    with pytest.raises(FileNotFoundError, match=re.escape(f"{tmp_path}: no BERT checkpoint found")):
        open_checkpoint(tmp_path)


def test_a_folder_of_an_unsupported_family_is_named_so_with_or_without_weights(tmp_path):
    """A T5 folder (config.json `model_type` "t5"): the unsupported-family message, not "no BERT checkpoint found",
    whether its weights are there, absent, or only pytorch_model.bin."""
    from safetensors.numpy import save_file

    config = tmp_path / "config.json"
    config.write_text(json.dumps({"model_type": "t5", "d_model": 32}))
    expected = (f"{config}: field 'model_type' is 't5': a checkpoint of that family is not supported (supported: "
                f"bert, roberta, xlm-roberta, distilbert, albert)")
    with pytest.raises(ValueError) as error:
        open_checkpoint(tmp_path)
    assert str(error.value) == expected
    (tmp_path / "pytorch_model.bin").write_bytes(b"torch")
    with pytest.raises(ValueError) as error:
        load_encoder(str(tmp_path))
    assert str(error.value) == expected
    save_file({"shared.weight": np.zeros((4, 2), np.float32)}, str(tmp_path / "model.safetensors"))
    with pytest.raises(ValueError) as error:
        load_encoder(str(tmp_path))
    assert str(error.value) == expected
    config.write_text(json.dumps({"model_type": "bert"}))  # a supported family without weights: as before
    (tmp_path / "model.safetensors").unlink()
    (tmp_path / "pytorch_model.bin").unlink()
    with pytest.raises(FileNotFoundError, match="no BERT checkpoint found"):
        open_checkpoint(tmp_path)
