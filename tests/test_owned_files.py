"""What official-bert wrote in a directory is recorded before it is written; only that is ever deleted."""

import json
import os
import re

import pytest

from official_bert import owned_files
from official_bert.owned_files import ForeignFilesError


def test_a_missing_or_empty_directory_may_be_written(tmp_path):
    owned_files.check_writable_here(str(tmp_path / "new"), "--model_dir")
    owned_files.check_writable_here(str(tmp_path), "--model_dir")


def test_an_entry_is_recorded_before_it_is_made(tmp_path):
    path = owned_files.claim(str(tmp_path / "run"), "task.json")
    assert path == str(tmp_path / "run" / "task.json") and not os.path.exists(path)
    assert owned_files.recorded(str(tmp_path / "run")) == {"task.json"}
    with pytest.raises(ValueError, match="one entry"):
        owned_files.claim(str(tmp_path / "run"), "a/b")


def test_a_directory_holding_files_we_did_not_write_is_refused_naming_them(tmp_path):
    owned_files.claim(str(tmp_path), "checkpoints")
    (tmp_path / "checkpoints").mkdir()
    for name in ("thesis.txt", "Documents", "a", "b", "c", "d"):
        (tmp_path / name).write_text("mine")
    with pytest.raises(ForeignFilesError, match=r"--model_dir=.* holds files official-bert did not write \(Documents, "
                                                r"a, b, c, d and 1 more\); .*pass another --model_dir"):
        owned_files.check_writable_here(str(tmp_path), "--model_dir")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="is a file, not a directory"):
        owned_files.check_writable_here(str(tmp_path / "file"), "--output_dir")
    with pytest.raises(ValueError, match=f"--output_dir=.*file/results/mrpc cannot be made: {tmp_path / 'file'} is a "
                                         "file, not a directory"):
        owned_files.check_writable_here(str(tmp_path / "file" / "results" / "mrpc"), "--output_dir")


def test_remove_ours_leaves_everything_else_and_follows_no_link(tmp_path):
    model_dir, outside = tmp_path / "run", tmp_path / "users"
    outside.mkdir()
    (outside / "thesis.txt").write_text("my thesis")
    (tmp_path / "beside.txt").write_text("beside")
    owned_files.claim(str(model_dir), "checkpoints")
    (model_dir / "checkpoints").mkdir()
    (model_dir / "checkpoints" / "ckpt-1_temp").symlink_to(outside)  # a link with our name inside our folder
    owned_files.claim(str(model_dir), "logs")
    (model_dir / "logs").symlink_to(outside)  # one of our names, now a link out of the model_dir
    owned_files.claim(str(model_dir), "run.lock")
    (model_dir / "run.lock").write_text("")
    owned_files.claim(str(model_dir), "never_made.json")
    assert owned_files.remove_ours(str(model_dir), keep=("run.lock",)) == ["checkpoints", "logs"]
    assert sorted(os.listdir(model_dir)) == [owned_files.RECORD_FILE, "run.lock"]
    assert (outside / "thesis.txt").read_text() == "my thesis" and (tmp_path / "beside.txt").read_text() == "beside"
    assert owned_files.recorded(str(model_dir)) == {"run.lock"}


def _finished_run(model_dir):
    """A model_dir with the files a training run leaves inside its folders."""
    files = ["checkpoints/checkpoint", "checkpoints/ckpt-2.index", "checkpoints/ckpt-2.data-00000-of-00001",
             "checkpoints/ckpt-3_temp/part-00000-of-00001.index", "logs/train/events.out.tfevents.1796.vm.14972.0.v2",
             "encoder/config.json", "encoder/model.safetensors", "encoder/vocab.txt", "encoder/tokenizer_config.json",
             "predictions/any name a user's input file has.tsv", "task.json"]
    for name in files:
        owned_files.claim(str(model_dir), name.split("/")[0])
        (model_dir / name).parent.mkdir(parents=True, exist_ok=True)
        (model_dir / name).write_text("ours")


def test_a_file_of_the_users_inside_our_folders_is_refused_and_nothing_is_deleted(tmp_path):
    _finished_run(tmp_path)
    (tmp_path / "encoder" / "README.md").write_text("my model card")
    (tmp_path / "logs" / "notes.txt").write_text("my notes")
    before = sorted(str(path) for path in tmp_path.rglob("*"))
    refused = (re.escape(str(tmp_path)) + r" holds files official-bert did not write inside its own folders "
               r"\(encoder/README.md, logs/notes.txt\); nothing was deleted: move them out")
    with pytest.raises(ForeignFilesError, match=refused):
        owned_files.remove_ours(str(tmp_path))
    assert sorted(str(path) for path in tmp_path.rglob("*")) == before
    (tmp_path / "encoder" / "README.md").unlink()
    (tmp_path / "logs" / "notes.txt").unlink()
    assert owned_files.remove_ours(str(tmp_path)) == ["checkpoints", "encoder", "logs", "predictions", "task.json"]
    assert os.listdir(tmp_path) == [owned_files.RECORD_FILE]


def test_a_model_dir_of_an_older_version_is_adopted_by_our_names_only(tmp_path):
    for name in ("task.json", "run.json", "model.weights.h5", "notes.txt"):
        (tmp_path / name).write_text("{}")
    (tmp_path / "checkpoints").mkdir()
    with pytest.raises(ForeignFilesError, match=r"\(notes.txt\)"):
        owned_files.check_writable_here(str(tmp_path), "--model_dir")
    assert owned_files.recorded(str(tmp_path)) == {"task.json", "run.json", "model.weights.h5", "checkpoints"}


def test_a_damaged_record_is_an_error_naming_it(tmp_path):
    (tmp_path / owned_files.RECORD_FILE).write_text("{not json")
    with pytest.raises(ValueError, match=f"{owned_files.RECORD_FILE}: not a record of official-bert's"):
        owned_files.recorded(str(tmp_path))
    (tmp_path / owned_files.RECORD_FILE).write_text(json.dumps({"entries": ["x"]}))
    owned_files.forget(str(tmp_path), "x")
    assert owned_files.recorded(str(tmp_path)) == set()
