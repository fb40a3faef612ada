"""The runner refuses what would silently give a wrong model: empty training data, a second run in a model_dir in
use, a different run resumed as if it were the same; it writes nothing before its inputs are checked, and
evaluating a finished run writes none of its training files."""

import hashlib
import json
import pathlib
import subprocess
import sys

import h5py
import pytest

from official_bert.model_dir_lock import ModelDirInUseError, ModelDirLock
from official_bert.owned_files import RECORD_FILE
from official_bert.runner import RunConfig, run
from official_bert.tasks.classification import ClassificationTask
from official_bert.tasks.squad import SquadTask
from official_bert.tasks.tagging import TaggingTask

pytestmark = pytest.mark.slow
MRPC_HEADER = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String"


def _mrpc(shared_data, directory, train_rows=40, train_lines=None):
    """An MRPC directory: the first `train_rows` rows of the real train.tsv (or `train_lines` as given) and the
    first 16 rows of dev and 8 of test."""
    directory.mkdir(parents=True, exist_ok=True)
    source = shared_data / "glue" / "MRPC"
    train = (source / "train.tsv").read_text(encoding="utf-8-sig").splitlines()
    lines = train_lines if train_lines is not None else train[1:1 + train_rows]
    (directory / "train.tsv").write_text("\n".join([MRPC_HEADER, *lines]) + "\n", encoding="utf-8")
    dev = (source / "dev.tsv").read_text(encoding="utf-8-sig").splitlines()
    (directory / "dev.tsv").write_text("\n".join([MRPC_HEADER, *dev[1:17]]) + "\n", encoding="utf-8")
    test = (source / "test.tsv").read_text(encoding="utf-8-sig").splitlines()
    (directory / "test.tsv").write_text("\n".join(test[:9]) + "\n", encoding="utf-8")
    return directory


def _config(model_dir, checkpoint, **overrides):
    values = dict(model_dir=str(model_dir), init_checkpoint=str(checkpoint), max_seq_length=32, train_batch_size=4,
                  eval_batch_size=16, num_train_steps=2, checkpoint_steps=1)
    return RunConfig(**{**values, **overrides})


def _task(data_dir, **kwargs):
    return ClassificationTask("MRPC", data_dir=str(data_dir), **kwargs)


def _copy(model_dir, tmp_path):
    """A copy of a finished run's model_dir, for a test that changes it."""
    import shutil

    return pathlib.Path(shutil.copytree(model_dir, tmp_path / "run"))


@pytest.fixture(scope="module")
def finished(shared_data, tiny_checkpoint, tmp_path_factory):
    """A finished 2-step run with its evaluation on `_mrpc`'s default data: (data dir, model_dir, eval results).
    Tests that change the model_dir take a `_copy`."""
    root = tmp_path_factory.mktemp("finished")
    data = _mrpc(shared_data, root / "data")
    results = run(_task(data), _config(root / "run", tiny_checkpoint))
    return data, root / "run", results


@pytest.fixture(scope="module")
def finished_without_eval(shared_data, tiny_checkpoint, tmp_path_factory):
    """The same run with --do_eval=false: (data dir, model_dir)."""
    root = tmp_path_factory.mktemp("finished_without_eval")
    data = _mrpc(shared_data, root / "data")
    run(_task(data), _config(root / "run", tiny_checkpoint, do_eval=False))
    return data, root / "run"


def _snapshot(directory):
    """Every file under `directory`: relative path -> (SHA-256, modification time)."""
    return {str(p.relative_to(directory)): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
            for p in sorted(directory.rglob("*")) if p.is_file()}


# 1. Nothing to train on is an error naming the file, raised before anything is written.

@pytest.mark.parametrize("steps", [None, 3])
def test_a_header_only_training_file_is_an_error_naming_it(shared_data, tiny_checkpoint, tmp_path, steps):
    data = _mrpc(shared_data, tmp_path / "data", train_lines=[])
    model_dir = tmp_path / "run"
    with pytest.raises(ValueError, match=f"{data / 'train.tsv'}: no training examples"):
        run(_task(data), _config(model_dir, tiny_checkpoint, num_train_steps=steps))
    assert not model_dir.exists()


def test_a_split_where_most_rows_are_skipped_is_an_error_with_the_counts(shared_data, tiny_checkpoint, tmp_path):
    good = (shared_data / "glue" / "MRPC" / "train.tsv").read_text(encoding="utf-8-sig").splitlines()[1:4]
    data = _mrpc(shared_data, tmp_path / "data", train_lines=good + ["broken row"] * 5)
    with pytest.raises(ValueError, match=r"train.tsv: only 3 of 8 training examples can be trained on \(5 malformed"):
        run(_task(data, skip_bad_rows=True), _config(tmp_path / "run", tiny_checkpoint))
    assert not (tmp_path / "run").exists()


def test_squad_with_no_answer_matching_its_context_is_an_error(tiny_checkpoint, tmp_path):
    articles = [{"title": "t", "paragraphs": [{"context": "The cat sat on the mat.", "qas": [
        {"id": f"q{i}", "question": "Where did the cat sit?", "answers": [{"text": "sofa", "answer_start": 4}]}
        for i in range(3)]}]}]
    train = tmp_path / "train.json"
    train.write_text(json.dumps({"version": "1.1", "data": articles}))
    with pytest.raises(ValueError, match=f"{train}: only 0 of 3 training questions can be trained on"):
        run(SquadTask(train_file=str(train), max_query_length=16),
            _config(tmp_path / "run", tiny_checkpoint, max_seq_length=48, do_eval=False))
    assert not (tmp_path / "run").exists()


def test_an_empty_conll_training_file_is_an_error(tiny_checkpoint, tmp_path):
    data = tmp_path / "conll"
    data.mkdir()
    (data / "train.txt").write_text("")
    with pytest.raises(ValueError, match=f"{data / 'train.txt'}: no training sentences"):
        run(TaggingTask(str(data)), _config(tmp_path / "run", tiny_checkpoint, do_eval=False))
    assert not (tmp_path / "run").exists()


# 2. One run at a time per model_dir.

def test_a_model_dir_in_use_stops_a_second_run_naming_the_holder(shared_data, tiny_checkpoint, tmp_path):
    model_dir = tmp_path / "run"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom official_bert.model_dir_lock import ModelDirLock\n"
         f"with ModelDirLock({str(model_dir)!r}):\n    print('locked', flush=True)\n    time.sleep(600)"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(ModelDirInUseError, match=rf"{model_dir} is in use by another run \(pid {holder.pid} on "):
            run(_task(_mrpc(shared_data, tmp_path / "data")), _config(model_dir, tiny_checkpoint))
    finally:
        holder.kill()
        holder.wait()
    assert sorted(p.name for p in model_dir.iterdir()) == [RECORD_FILE, "run.lock"]  # the second run wrote nothing
    with ModelDirLock(str(model_dir)):  # a killed holder's lock is free at once (the system releases it)
        pass


def test_the_lock_is_exclusive_and_released(tmp_path):
    with ModelDirLock(str(tmp_path)):
        with pytest.raises(ModelDirInUseError, match=f"pid \\d+ on .*lock: {tmp_path / 'run.lock'}"):
            with ModelDirLock(str(tmp_path)):
                pass
    with ModelDirLock(str(tmp_path)):
        pass


# 3. A model_dir holding another run is not continued; --overwrite starts over.

def test_a_finished_model_dir_refuses_other_flags_or_data_and_overwrite_starts_over(shared_data, tiny_checkpoint,
                                                                                   finished, tmp_path):
    data, finished_dir, _ = finished
    model_dir = _copy(finished_dir, tmp_path)
    record = json.loads((model_dir / "run.json").read_text())
    assert record["flags"]["learning_rate"] == 5e-5
    assert record["data"][0]["bytes"] == (data / "train.tsv").stat().st_size

    with pytest.raises(ValueError, match=r"holds another training run: flags.learning_rate was 5e-05, this run has "
                                         r"0.001; pass --overwrite"):
        run(_task(data), _config(model_dir, tiny_checkpoint, learning_rate=1e-3))
    other = _mrpc(shared_data, tmp_path / "other", train_rows=41)
    with pytest.raises(ValueError, match=rf"holds another training run: data\[0\] \({other / 'train.tsv'}\)"):
        run(_task(other), _config(model_dir, tiny_checkpoint))
    # The same data elsewhere is the same run: training is complete, the evaluation the same.
    copy = _mrpc(shared_data, tmp_path / "copy")
    before = json.loads((model_dir / "eval_results.json").read_text())
    assert run(_task(copy), _config(model_dir, tiny_checkpoint)) == before

    run(_task(other), _config(model_dir, tiny_checkpoint, num_train_steps=3, overwrite=True))
    assert json.loads((model_dir / "train_results.json").read_text())["steps"] == 3  # trained from the start
    assert json.loads((model_dir / "run.json").read_text())["data"][0]["bytes"] == (other / "train.tsv").stat().st_size


def test_a_killed_run_is_not_resumed_on_other_data(shared_data, tiny_checkpoint, finished_without_eval, tmp_path):
    model_dir = _copy(finished_without_eval[1], tmp_path)
    (model_dir / "model.weights.h5").unlink()  # as if killed after its checkpoints
    with pytest.raises(ValueError, match="holds another training run: data"):
        run(_task(_mrpc(shared_data, tmp_path / "other", train_rows=20)), _config(model_dir, tiny_checkpoint))


def test_a_training_run_refuses_a_directory_holding_a_users_files(shared_data, tiny_checkpoint, finished_without_eval,
                                                                   tmp_path):
    """The new-user probe's data loss: a run into $HOME-like directory, then --overwrite, deleted everything."""
    mine = tmp_path / "mine"
    (mine / "Documents").mkdir(parents=True)
    (mine / "Documents" / "thesis.txt").write_text("my thesis")
    data = _mrpc(shared_data, tmp_path / "data")
    for overwrite in (False, True):
        with pytest.raises(ValueError, match=r"--model_dir=.*mine holds files official-bert did not write "
                                             r"\(Documents\); .*pass another --model_dir, or move those files"):
            run(_task(data), _config(mine, tiny_checkpoint, overwrite=overwrite))
    assert sorted(p.name for p in mine.rglob("*")) == ["Documents", "thesis.txt"]  # nothing written
    out = tmp_path / "results"
    out.mkdir()
    (out / "eval_results.json").write_text("a user's file of that name")
    data, finished_dir = finished_without_eval
    model_dir = _copy(finished_dir, tmp_path)
    with pytest.raises(ValueError, match=r"--output_dir=.*results holds files official-bert did not write "
                                         r"\(eval_results.json\)"):
        run(_task(data), _config(model_dir, tiny_checkpoint, do_train=False, output_dir=str(out)))
    assert (out / "eval_results.json").read_text() == "a user's file of that name"


def test_overwrite_deletes_only_what_the_library_wrote(shared_data, tiny_checkpoint, tmp_path):
    from official_bert.owned_files import recorded

    model_dir, outside = tmp_path / "run", tmp_path / "users"
    outside.mkdir()
    (outside / "thesis.txt").write_text("my thesis")
    (tmp_path / "beside.txt").write_text("beside the model_dir")
    data = _mrpc(shared_data, tmp_path / "data")
    run(_task(data), _config(model_dir, tiny_checkpoint, do_predict=True))
    entries = {p.name for p in model_dir.iterdir()} - {RECORD_FILE}
    assert entries == recorded(str(model_dir))  # every entry the run made was recorded
    assert {"task.json", "checkpoints", "model.weights.h5", "encoder", "predictions", "run.lock"} <= entries
    (model_dir / "checkpoints" / "ckpt-9_temp").symlink_to(outside)  # a link of our name in our folder: not followed
    run(_task(data), _config(model_dir, tiny_checkpoint, num_train_steps=3, overwrite=True))
    assert json.loads((model_dir / "train_results.json").read_text())["steps"] == 3  # trained from the start
    assert not (model_dir / "predictions").exists()
    assert (outside / "thesis.txt").read_text() == "my thesis"
    assert (tmp_path / "beside.txt").read_text() == "beside the model_dir"


def test_a_finished_run_keeps_one_checkpoint_and_weights_without_optimizer_state(shared_data, tiny_checkpoint,
                                                                                tmp_path):
    model_dir = tmp_path / "run"
    run(_task(_mrpc(shared_data, tmp_path / "data")), _config(model_dir, tiny_checkpoint, num_train_steps=3,
                                                               do_eval=False))
    assert sorted(p.name for p in (model_dir / "checkpoints").iterdir()) == [
        "checkpoint", "ckpt-3.data-00000-of-00001", "ckpt-3.index"]
    with h5py.File(model_dir / "model.weights.h5", "r") as f:
        assert "optimizer" not in f and "layers" in f
    with pytest.raises(ValueError, match="--keep_checkpoints=0: at least the last checkpoint is kept"):
        run(_task(_mrpc(shared_data, tmp_path / "data")), _config(tmp_path / "other", tiny_checkpoint,
                                                                   keep_checkpoints=0))


# 4. A failed run does not block its corrected retry.

def test_a_failed_run_leaves_nothing_that_blocks_its_retry(shared_data, tiny_checkpoint, tmp_path):
    model_dir = tmp_path / "run"
    with pytest.raises(ValueError, match="no training examples"):
        run(_task(_mrpc(shared_data, tmp_path / "empty", train_lines=[])), _config(model_dir, tiny_checkpoint))
    assert not model_dir.exists()
    # A run that stopped after writing task.json but before its first checkpoint holds no progress either.
    model_dir.mkdir()
    (model_dir / "task.json").write_text(json.dumps({"task": "MRPC", "kind": "classification", "max_seq_length": 48,
                                                     "do_lower_case": True, "label_names": ["0", "1"]}))
    run(_task(_mrpc(shared_data, tmp_path / "data")), _config(model_dir, tiny_checkpoint, do_eval=False))
    assert json.loads((model_dir / "task.json").read_text())["max_seq_length"] == 32


# 6. Evaluating a finished run writes none of its training files.

def test_evaluating_a_finished_run_writes_only_its_results(finished, tmp_path):
    data, model_dir, trained = finished
    before = _snapshot(model_dir)
    out = tmp_path / "results"
    evaluate_only = _config(model_dir, "/nonexistent/checkpoint", do_train=False, output_dir=str(out),
                            do_predict=True)
    results = run(_task(data), evaluate_only)  # the model_dir's own model, vocab and casing: no checkpoint read
    assert results == trained == json.loads((out / "eval_results.json").read_text())
    assert (out / "predictions" / "MRPC.tsv").is_file()
    assert _snapshot(model_dir) == before


def test_a_read_only_results_directory_is_an_error_before_anything_runs(shared_data, tiny_checkpoint, tmp_path,
                                                                       monkeypatch):
    import os

    from official_bert import runner

    real_access = os.access
    monkeypatch.setattr(runner.os, "access", lambda path, mode: False if str(path).startswith(str(tmp_path / "ro"))
                        else real_access(path, mode))
    (tmp_path / "ro").mkdir()
    with pytest.raises(ValueError, match=r"--model_dir=.*ro/run cannot be written \(read-only\).*pass --output_dir"):
        run(_task(_mrpc(shared_data, tmp_path / "data")),
            _config(tmp_path / "ro" / "run", tiny_checkpoint, do_train=False))


# 8. Under --deterministic a rerun gives bit-identical weights: `tests/tasks/test_resume_every_entry_point.py` (an
# unbroken run against one killed twice and resumed, for every entry point).
