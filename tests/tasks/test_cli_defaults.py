"""What a new user meets first: the design card's commands with few or no flags, and one-line errors. What a
command line itself decides (defaults, usage errors, exit codes, stderr) runs as a command; a check of a task's
setting runs that task in-process through the runner (what the CLI runs with the same flags). The commands run as
children of the worker's fork server (`forked_commands`), except the one about TensorFlow's start-up lines, which
needs TensorFlow imported by the command itself."""

import json
import logging
import os
import socket
import subprocess
import sys

import pytest

from tests.tasks.forked_commands import run_forked

GLUE_DOWNLOAD_HOST = "dl.fbaipublicfiles.com"

pytestmark = pytest.mark.slow


def _forked(module, *args, cwd):
    """The command's CompletedProcess, run in a child of the fork server (its outputs under `cwd`/.forked)."""
    out_dir = cwd / ".forked"
    out_dir.mkdir(exist_ok=True)
    return run_forked([(module, list(args))], out_dir, cwd=cwd)[0]


def _cli(module, *args, cwd):
    """The command's CompletedProcess, run as a fresh `python -m`."""
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
    result = _forked("tasks.run_classifier", "--task=MNLI", f"--tfds_data_dir={tmp_path / 'tfds'}", cwd=tmp_path)
    error = _error_line(result)
    assert f"{GLUE_DOWNLOAD_HOST} cannot be reached" in error
    assert "--data_dir" in error and "--tfds_data_dir" in error
    assert "all-MiniLM-L6-v2" in result.stderr  # the demo's checkpoint was the default
    assert not (tmp_path / "out").exists()  # nothing written


def test_other_flags_without_task_are_a_usage_error_not_the_demo(tmp_path):
    error = _error_line(_forked("tasks.run_classifier", "--num_train_steps=2", cwd=tmp_path))
    assert "--task is required (given: --num_train_steps)" in error
    assert not (tmp_path / "out").exists()


def _train_classifier(shared_data, checkpoint, model_dir, **settings):
    """`tasks.run_classifier --task=MRPC` for one step, no eval, in-process through the runner."""
    from official_bert.runner import RunConfig, run
    from official_bert.tasks.classification import ClassificationTask

    config = RunConfig(init_checkpoint=str(checkpoint), model_dir=str(model_dir), max_seq_length=32,
                       train_batch_size=8, num_train_steps=1, do_eval=False, **settings)
    run(ClassificationTask("MRPC", data_dir=str(shared_data / "glue" / "MRPC")), config)


def _task(kind, shared_data):
    """The task each entry point builds from its flags: run_classifier `--task=MRPC --data_dir=...`, run_ner
    `--data_dir=...`, run_squad `--train_file=... --max_query_length=16`."""
    from official_bert.tasks.classification import ClassificationTask
    from official_bert.tasks.squad import SquadTask
    from official_bert.tasks.tagging import TaggingTask

    if kind == "classifier":
        return ClassificationTask("MRPC", data_dir=str(shared_data / "glue" / "MRPC"))
    if kind == "ner":
        return TaggingTask(str(shared_data / "conll2003" / "hf-iob2"))
    return SquadTask(train_file=str(shared_data / "squad" / "v1.1" / "dev-v1.1.json"), max_query_length=16)


@pytest.mark.parametrize("kind", ["classifier", "ner", "squad"])
def test_a_sequence_length_over_the_position_limit_fails_before_anything_is_written(
        kind, shared_data, tiny_checkpoint, tmp_path):
    from official_bert.runner import RunConfig, run

    model_dir = tmp_path / "run"  # the CLI's one-line error of this ValueError: test_tensorflow_start_up_lines_...
    with pytest.raises(ValueError) as error:
        run(_task(kind, shared_data), RunConfig(init_checkpoint=str(tiny_checkpoint), model_dir=str(model_dir),
                                                max_seq_length=65))
    assert "--max_seq_length=65 must be between 3 and the model's max_position_embeddings=64" in str(error.value)
    assert not model_dir.exists()


def test_casing_travels_with_the_model_dir(shared_data, tiny_checkpoint, tmp_path, caplog):
    cased = tmp_path / "cased"
    _train_classifier(shared_data, tiny_checkpoint, cased, do_lower_case=False)
    tokenizer_config = json.loads((cased / "encoder" / "tokenizer_config.json").read_text())
    assert tokenizer_config["do_lower_case"] is False
    again = tmp_path / "again"
    caplog.set_level(logging.INFO)
    caplog.clear()  # this run's log only
    _train_classifier(shared_data, cased, again)
    assert json.loads((again / "task.json").read_text())["do_lower_case"] is False
    assert "Casing" not in caplog.text  # known, not guessed


def _write_demo_model_dir(shared_data, path):
    """A tiny random MRPC classifier written where the demo run leaves its model (the runner's `save_trained`)."""
    import keras
    from classifier_model_dirs import mrpc_task_info, write_classifier_model_dir

    from official_bert import BertConfig, BertEncoder
    from official_bert.models.classifier import BertClassifier

    keras.utils.set_random_seed(0)
    config = BertConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=64,
                        max_position_embeddings=64)
    info = mrpc_task_info()
    return write_classifier_model_dir(path, BertClassifier(BertEncoder(config), 2), info,
                                      shared_data / "bert-vocab" / "bert-base-uncased-vocab.txt")


def test_export_with_no_flags_exports_the_demo_model_dir_or_says_what_to_pass(shared_data, tmp_path):
    error = _error_line(_forked("export.saved_model", cwd=tmp_path))
    assert "--model_dir is required" in error and "python -m tasks.run_classifier" in error
    _write_demo_model_dir(shared_data, tmp_path / "out" / "demo")
    result = _forked("export.saved_model", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"exported {os.path.join('out', 'demo')} to {os.path.join('out', 'export', 'demo', '1')}" in result.stdout
    assert (tmp_path / "out" / "export" / "demo" / "1" / "saved_model.pb").is_file()


def test_tensorflow_start_up_lines_only_with_verbosity(shared_data, tiny_checkpoint, tmp_path):
    args = ["--task=MRPC", f"--data_dir={shared_data / 'glue' / 'MRPC'}", f"--init_checkpoint={tiny_checkpoint}",
            f"--model_dir={tmp_path / 'run'}", "--max_seq_length=65"]  # an error after TensorFlow has started
    quiet = _cli("tasks.run_classifier", *args, cwd=tmp_path)
    assert ("--max_seq_length=65 must be between 3 and the model's max_position_embeddings=64"
            in _error_line(quiet))  # the runner's ValueError, as the CLI reports it
    assert "absl::InitializeLog()" not in quiet.stderr
    assert not [line for line in quiet.stderr.splitlines() if line.startswith(("I0000 ", "W0000 ", "E0000 "))]
    verbose = _cli("tasks.run_classifier", *args, "--verbosity=1", cwd=tmp_path)
    assert "absl::InitializeLog()" in verbose.stderr  # TensorFlow's native start-up lines are back
    assert "Traceback" in verbose.stderr  # and the error's traceback
