"""What a new user meets first: the design card's commands with few or no flags, and one-line errors."""

import json
import os
import socket
import subprocess
import sys

import pytest

GLUE_DOWNLOAD_HOST = "dl.fbaipublicfiles.com"


def _cli(module, *args, cwd):
    return subprocess.run([sys.executable, "-m", module, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})


def _error_line(result):
    """The one `error: ...` line a failed CLI prints (and that there is no traceback)."""
    assert result.returncode == 2, result.stderr[-3000:]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, result.stderr[-3000:]
    return errors[0]


def _online():
    try:
        socket.create_connection((GLUE_DOWNLOAD_HOST, 443), timeout=3).close()
        return True
    except OSError:
        return False


@pytest.mark.skipif(_online(), reason="online: the command would download all of MNLI")
def test_task_alone_uses_the_demo_checkpoint_and_says_offline_what_to_pass(tmp_path):
    result = _cli("tasks.run_classifier", "--task=MNLI", f"--tfds_data_dir={tmp_path / 'tfds'}", cwd=tmp_path)
    error = _error_line(result)
    assert f"{GLUE_DOWNLOAD_HOST} cannot be reached" in error
    assert "--data_dir" in error and "--tfds_data_dir" in error
    assert "all-MiniLM-L6-v2" in result.stderr  # the demo's checkpoint was the default
    assert not (tmp_path / "out").exists()  # nothing written


def test_other_flags_without_task_are_a_usage_error_not_the_demo(tmp_path):
    error = _error_line(_cli("tasks.run_classifier", "--num_train_steps=2", cwd=tmp_path))
    assert "--task is required (given: --num_train_steps)" in error
    assert not (tmp_path / "out").exists()


def _classifier_args(shared_data, checkpoint, model_dir, *extra):
    return ["--task=MRPC", f"--data_dir={shared_data / 'glue' / 'MRPC'}", f"--init_checkpoint={checkpoint}",
            f"--model_dir={model_dir}", "--max_seq_length=32", "--train_batch_size=8", "--num_train_steps=1",
            "--do_eval=false", *extra]


@pytest.mark.parametrize("module,args", [
    ("tasks.run_classifier", ["--task=MRPC", "--data_dir={glue}"]),
    ("tasks.run_ner", ["--data_dir={conll}"]),
    ("tasks.run_squad", ["--train_file={squad}", "--max_query_length=16"]),
])
def test_a_sequence_length_over_the_position_limit_fails_before_anything_is_written(
        module, args, shared_data, tiny_checkpoint, tmp_path):
    paths = {"glue": shared_data / "glue" / "MRPC", "conll": shared_data / "conll2003" / "hf-iob2",
             "squad": shared_data / "squad" / "v1.1" / "dev-v1.1.json"}
    model_dir = tmp_path / "run"
    args = [a.format(**paths) for a in args] + [f"--init_checkpoint={tiny_checkpoint}", f"--model_dir={model_dir}"]
    error = _error_line(_cli(module, *args, "--max_seq_length=65", cwd=tmp_path))
    assert "--max_seq_length=65 must be between 3 and the model's max_position_embeddings=64" in error
    assert not model_dir.exists()


def test_casing_travels_with_the_model_dir(shared_data, tiny_checkpoint, tmp_path):
    cased = tmp_path / "cased"
    result = _cli("tasks.run_classifier", *_classifier_args(shared_data, tiny_checkpoint, cased,
                                                            "--do_lower_case=false"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    tokenizer_config = json.loads((cased / "encoder" / "tokenizer_config.json").read_text())
    assert tokenizer_config["do_lower_case"] is False
    again = tmp_path / "again"
    result = _cli("tasks.run_classifier", *_classifier_args(shared_data, cased, again), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads((again / "task.json").read_text())["do_lower_case"] is False
    assert "Casing" not in result.stderr  # known, not guessed


def test_export_with_no_flags_exports_the_demo_model_dir_or_says_what_to_pass(shared_data, tiny_checkpoint,
                                                                               tmp_path):
    error = _error_line(_cli("export.saved_model", cwd=tmp_path))
    assert "--model_dir is required" in error and "python -m tasks.run_classifier" in error
    demo_dir = tmp_path / "out" / "demo"
    result = _cli("tasks.run_classifier", *_classifier_args(shared_data, tiny_checkpoint, demo_dir), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    result = _cli("export.saved_model", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"exported {os.path.join('out', 'demo')} to {os.path.join('out', 'export', 'demo', '1')}" in result.stdout
    assert (tmp_path / "out" / "export" / "demo" / "1" / "saved_model.pb").is_file()


def test_tensorflow_start_up_lines_only_with_verbosity(shared_data, tiny_checkpoint, tmp_path):
    args = ["--task=MRPC", f"--data_dir={shared_data / 'glue' / 'MRPC'}", f"--init_checkpoint={tiny_checkpoint}",
            f"--model_dir={tmp_path / 'run'}", "--max_seq_length=65"]  # an error after TensorFlow has started
    quiet = _cli("tasks.run_classifier", *args, cwd=tmp_path)
    _error_line(quiet)
    assert "absl::InitializeLog()" not in quiet.stderr
    assert not [line for line in quiet.stderr.splitlines() if line.startswith(("I0000 ", "W0000 ", "E0000 "))]
    verbose = _cli("tasks.run_classifier", *args, "--verbosity=1", cwd=tmp_path)
    assert "absl::InitializeLog()" in verbose.stderr  # TensorFlow's native start-up lines are back
    assert "Traceback" in verbose.stderr  # and the error's traceback
