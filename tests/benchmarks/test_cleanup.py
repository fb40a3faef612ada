"""benchmarks.cleanup: a finished run's checkpoints go once its results.json is written (unless --keep_checkpoints),
only the files we wrote; a run killed before its results keeps them and resumes."""

import argparse
import os

import pytest

from benchmarks import seed_spread
from benchmarks.cleanup import add_keep_checkpoints_flag, remove_checkpoints
from benchmarks.resumable import write_results
from benchmarks.seeds import add_seed_flags, over_seeds

# A seed's run as the SQuAD benchmark lays it out: our model_dir, the shared start, the peer's training state.
CHECKPOINTS = {"model_dirs": ("ours",), "weights": ("ours", "start"),
               "torch_states": (os.path.join("pytorch", "state.pt"),)}
# What tasks' runner, start_checkpoint and pytorch_loop write that a resumed run reads, by their names.
RESUMED_FROM = ["ours/checkpoints/checkpoint", "ours/checkpoints/ckpt-2.index",
                "ours/checkpoints/ckpt-2.data-00000-of-00001", "ours/checkpoints/ckpt-3_temp/part-00000",
                "ours/model.weights.h5", "ours/encoder/model.safetensors", "start/model.safetensors",
                "pytorch/state.pt", "pytorch/state.pt.tmp"]
# What stays: the results and records a rerun or a reader uses, and files that are not ours.
KEPT = ["ours/task.json", "ours/run.json", "ours/eval_results.json", "ours/train_results.json",
        "ours/encoder/config.json", "start/config.json", "start/vocab.txt", "pytorch/results.json",
        "ours/notes.txt", "ours/checkpoints/README", "my_model.safetensors", "pytorch/state.pt.bak"]


def _write(work, names):
    for name in names:
        path = os.path.join(work, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(name)


def _existing(work, names):
    return [name for name in names if os.path.exists(os.path.join(work, name))]


def _args(*argv):
    parser = argparse.ArgumentParser()
    add_seed_flags(parser)
    add_keep_checkpoints_flag(parser)
    return parser.parse_args(list(argv))


def _fake_run(calls, kill_seed=None):
    """A seed's run: resumes when its checkpoints are there (else writes them), then writes results.json; the
    `kill_seed` run dies between its checkpoints and its results."""
    def run_seed(args, work):
        calls.append((args.seed, "resumed" if os.path.exists(os.path.join(work, "ours", "checkpoints",
                                                                             "checkpoint")) else "fresh"))
        _write(work, RESUMED_FROM + KEPT)
        if args.seed == kill_seed:
            raise KeyboardInterrupt("killed")
        write_results(work, {"f1": 0.5}, {"f1": 0.4}, 10.0, 5.0)
    return run_seed


def test_remove_checkpoints_deletes_only_our_checkpoint_files(tmp_path):
    _write(str(tmp_path), RESUMED_FROM + KEPT)
    removed = remove_checkpoints(str(tmp_path), **CHECKPOINTS)
    assert sorted(os.path.relpath(path, tmp_path) for path in removed) == sorted(
        {name.split("/part-")[0] for name in RESUMED_FROM})
    assert _existing(str(tmp_path), RESUMED_FROM) == [] and _existing(str(tmp_path), KEPT) == KEPT
    assert os.path.isdir(tmp_path / "ours" / "checkpoints")  # it still holds a file not ours
    assert remove_checkpoints(str(tmp_path), **CHECKPOINTS) == []  # nothing left to do


def test_an_emptied_checkpoints_folder_goes_and_final_weights_stay_unless_named(tmp_path):
    _write(str(tmp_path), ["teacher/checkpoints/checkpoint", "teacher/checkpoints/ckpt-9.index",
                           "teacher/model.weights.h5", "teacher/encoder/model.safetensors"])
    remove_checkpoints(str(tmp_path), model_dirs=("teacher",))  # a later step reads its weights
    assert not os.path.exists(tmp_path / "teacher" / "checkpoints")
    assert (tmp_path / "teacher" / "model.weights.h5").exists()
    assert (tmp_path / "teacher" / "encoder" / "model.safetensors").exists()


@pytest.mark.parametrize("keep", [False, True])
def test_over_seeds_deletes_a_seed_s_checkpoints_once_it_has_results(tmp_path, keep):
    calls = []
    args = _args("--seeds=2", *["--keep_checkpoints"] * keep)
    results = over_seeds(args, str(tmp_path), _fake_run(calls), resumes=True, checkpoints=CHECKPOINTS)
    assert [seed for seed, _ in results] == [42, 43] and calls == [(42, "fresh"), (43, "fresh")]
    for seed in (42, 43):
        work = str(tmp_path / f"seed-{seed}")
        assert _existing(work, RESUMED_FROM) == (RESUMED_FROM if keep else [])
        assert _existing(work, KEPT + ["results.json"]) == KEPT + ["results.json"]
    calls.clear()
    assert over_seeds(args, str(tmp_path), _fake_run(calls), resumes=True, checkpoints=CHECKPOINTS) == results
    assert calls == []  # results.json still skips the finished seeds, their checkpoints gone or not


def test_a_run_killed_before_its_results_keeps_its_checkpoints_and_resumes(tmp_path):
    calls = []
    args = _args("--seeds=2")
    with pytest.raises(KeyboardInterrupt):
        over_seeds(args, str(tmp_path), _fake_run(calls, kill_seed=43), resumes=True, checkpoints=CHECKPOINTS)
    killed = str(tmp_path / "seed-43")
    assert _existing(killed, RESUMED_FROM) == RESUMED_FROM and not os.path.exists(os.path.join(killed, "results.json"))
    assert _existing(str(tmp_path / "seed-42"), RESUMED_FROM) == []  # the seed that finished was cleaned

    calls.clear()
    results = over_seeds(args, str(tmp_path), _fake_run(calls), resumes=True, checkpoints=CHECKPOINTS)
    assert calls == [(43, "resumed")] and [seed for seed, _ in results] == [42, 43]
    assert _existing(killed, RESUMED_FROM) == [] and _existing(killed, KEPT) == KEPT


@pytest.mark.parametrize("keep", [False, True])
def test_seed_spread_passes_keep_checkpoints_to_the_benchmark_it_runs(tmp_path, monkeypatch, keep):
    commands = []
    monkeypatch.setattr(seed_spread.subprocess, "run", lambda command, **kwargs: commands.append(command))
    seed_spread.run_one(seed_spread.BUDGETS["squad"], str(tmp_path / "seed-0"), 0.1, 0, keep_checkpoints=keep)
    assert commands[0][:3] == [seed_spread.sys.executable, "-m", "benchmarks.squad_finetune"]
    assert ("--keep_checkpoints" in commands[0]) == keep
