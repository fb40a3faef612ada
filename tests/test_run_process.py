"""A run's process set-up: the strategies it builds by name, its temporary folders."""

import os
import subprocess
import sys
import tempfile

import pytest

from official_bert.run_process import STRATEGIES, get_strategy, scratch_dir


def test_an_unknown_strategy_is_an_error_naming_the_known_ones():
    with pytest.raises(ValueError, match="distribution_strategy must be one of " + ", ".join(STRATEGIES)):
        get_strategy("horovod")


def test_one_device_runs_on_one_replica():
    assert get_strategy("one_device").num_replicas_in_sync == 1


def test_one_device_without_a_gpu_is_the_default_strategy():
    """On the CPU alone a `OneDeviceStrategy` only adds a per-device iterator and a replica context to each step."""
    import tensorflow as tf

    if tf.config.list_logical_devices("GPU"):
        pytest.skip("this machine has a GPU: one_device is a OneDeviceStrategy on it")
    assert get_strategy("one_device") is tf.distribute.get_strategy()


def test_a_scratch_dir_deletes_those_of_processes_that_no_longer_run_and_nothing_else(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = tmp_path / f"official_bert_run_{finished.stdout.strip()}_abc"  # a run killed with SIGKILL left it
    alive = tmp_path / f"official_bert_run_{os.getppid()}_def"  # a run still going
    others = [tmp_path / "official_bert_run_xyz", tmp_path / f"official_bert_worker_{finished.stdout.strip()}_x",
              tmp_path / "mine"]
    for folder in [dead, alive, *others]:
        folder.mkdir()
        (folder / "vocab.txt").write_text("[PAD]\n")

    made = scratch_dir("run")

    assert os.path.basename(made).startswith(f"official_bert_run_{os.getpid()}_") and os.path.isdir(made)
    assert not dead.exists() and alive.exists() and all(folder.exists() for folder in others)
