"""Through the CLI as a user runs it: Ctrl-C stops training cleanly in one line, and a directory holding a user's
files is never written into (the new-user probe's data loss: `--overwrite` deleted a thesis). The interrupted run is
a process of its own; the resuming run and the two refused ones run as children of one process (`forked_commands`):
TensorFlow is imported twice in all."""

import pathlib
import re
import signal
import subprocess
import sys
import time

import pytest
from tests.tasks.forked_commands import run_forked

pytestmark = pytest.mark.slow
REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
MRPC_HEADER = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String"


def _mrpc(shared_data, directory, rows=40):
    directory.mkdir(parents=True)
    for split, count in (("train", rows), ("dev", 8)):
        lines = (shared_data / "glue" / "MRPC" / f"{split}.tsv").read_text(encoding="utf-8-sig").splitlines()
        (directory / f"{split}.tsv").write_text("\n".join([MRPC_HEADER, *lines[1:1 + count]]) + "\n", encoding="utf-8")
    return directory


def _args(data, checkpoint, model_dir, *extra):
    return ["--task=MRPC", f"--data_dir={data}", f"--init_checkpoint={checkpoint}", f"--model_dir={model_dir}",
            "--max_seq_length=32", "--train_batch_size=8", *extra]


@pytest.fixture(scope="module")
def runs(shared_data, tiny_checkpoint, tmp_path_factory):
    """(root, process interrupted by SIGINT and its stderr, [CompletedProcess of the same command resumed, of the
    user's directory `root/mine` as --model_dir, the same with --overwrite])."""
    root = tmp_path_factory.mktemp("interrupts")
    data = _mrpc(shared_data, root / "data")
    model_dir, mine = root / "run", root / "mine"
    (mine / "Documents").mkdir(parents=True)
    (mine / "Documents" / "thesis.txt").write_text("my thesis")
    args = _args(data, tiny_checkpoint, model_dir, "--num_train_steps=40", "--checkpoint_steps=2", "--do_eval=false")
    process = subprocess.Popen([sys.executable, "-m", "tasks.run_classifier", *args], cwd=REPO_ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 300
    while not (model_dir / "checkpoints" / "ckpt-4.index").exists():
        assert process.poll() is None and time.time() < deadline, "no checkpoint written"
        time.sleep(0.02)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=300)
    temporaries = [p for p in (model_dir / "checkpoints").iterdir() if "_temp" in p.name]  # before the resume
    commands = [args, *(_args(data, tiny_checkpoint, mine, "--num_train_steps=2", *extra)
                        for extra in ([], ["--overwrite"]))]
    (root / "out").mkdir()
    return root, process, stderr, temporaries, run_forked([("tasks.run_classifier", a) for a in commands], root / "out")


def test_ctrl_c_stops_after_a_step_in_one_line_and_the_same_command_resumes(runs):
    root, process, stderr, temporaries, (resumed, _, _) = runs
    model_dir = root / "run"
    assert process.returncode == 130, stderr[-2000:]
    assert "Traceback" not in stderr
    last = stderr.strip().splitlines()[-1]
    match = re.fullmatch(r"interrupted at step (\d+) of 40; last checkpoint: (.*); run the same command to resume",
                         last)
    assert match, last
    assert match.group(2) == str(model_dir / "checkpoints" / f"ckpt-{int(match.group(1)) // 2 * 2}")
    assert not temporaries
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert f"Resumed from {match.group(2)}" in resumed.stderr


def test_a_users_directory_is_refused_with_and_without_overwrite(runs):
    root, *_, (_, *refused) = runs
    mine = root / "mine"
    for result in refused:
        assert result.returncode == 2, result.stderr[-2000:]
        assert result.stderr.strip().splitlines()[-1] == (
            f"error: --model_dir={mine} holds files official-bert did not write (Documents); it writes only into an "
            "empty directory or one of its own: pass another --model_dir, or move those files")
    assert sorted(p.name for p in mine.rglob("*")) == ["Documents", "thesis.txt"]
    assert (mine / "Documents" / "thesis.txt").read_text() == "my thesis"
