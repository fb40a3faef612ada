"""`--help` of every entry point lists every flag it takes: its own and the shared run flags of tasks/common.py;
`--help` and a flag that does not exist answer before TensorFlow or Keras load (`official_bert.cli.run_main`).

Each entry point runs as the real `python -m <module>`, in a fresh interpreter."""

import os
import pathlib
import re
import subprocess
import sys

import pytest

from tasks.common import RUN_FLAGS

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow
ENTRY_POINTS = ["tasks.run_classifier", "tasks.run_ner", "tasks.run_squad", "tasks.run_multiple_choice",
                "tasks.run_pretraining", "tasks.create_pretraining_data", "tasks.extract_features", "tasks.distill",
                "tasks.prune", "tasks.run_time_series_classifier", "export.saved_model", "export.tflite",
                "export.predict", "export.hugging_face"]
# The run flags an entry point leaves out (its `define_run_flags(skip=...)`).
DISTILLATION_SKIPS = {"init_checkpoint", "vocab_file", "do_lower_case"}  # the teacher's model_dir gives them
SKIPPED_RUN_FLAGS = {"tasks.run_pretraining": {"num_train_epochs", "warmup_proportion", "do_predict",
                                                "train_on_real_tokens"},
                     "tasks.run_multiple_choice": {"train_on_real_tokens"},
                     "tasks.distill": DISTILLATION_SKIPS, "tasks.prune": DISTILLATION_SKIPS,
                     "tasks.run_time_series_classifier": {"init_checkpoint", "vocab_file", "do_lower_case",
                                                          "max_seq_length", "train_on_real_tokens"}}
ABSL_FLAGS = {"flagfile", "undefok", "help", "helpfull", "helpshort", "helpxml", "verbosity", "logtostderr",
              "only_check_args", "pdb", "pdb_post_mortem", "run_with_pdb", "use_cprofile_for_profiling"}


def _expected_flags(module):
    """The flags the module's file defines, and the run flags when it calls `common.define_run_flags`."""
    source = (REPO_ROOT / (module.replace(".", "/") + ".py")).read_text()
    own = set(re.findall(r"DEFINE_\w+\(\s*\"(\w+)\"", source))
    run = set(RUN_FLAGS) - SKIPPED_RUN_FLAGS.get(module, set()) if "define_run_flags(" in source else set()
    return own, run


def _python_m(module, *args):
    """`python -X importtime -m module args` from the repository root: the CompletedProcess and the names of the
    top-level packages it imported."""
    command = [sys.executable, "-X", "importtime", "-m", module, *args]
    result = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    imported = {line.rsplit("|", 1)[1].strip().split(".")[0] for line in result.stderr.splitlines()
                if line.startswith("import time:")}
    return result, imported


@pytest.fixture(scope="module")
def helps():
    """module -> (CompletedProcess of `python -m module --help`, the packages it imported)."""
    return {module: _python_m(module, "--help") for module in ENTRY_POINTS}


@pytest.mark.parametrize("module", ENTRY_POINTS)
def test_help_loads_no_tensorflow(module, helps):
    result, imported = helps[module]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    assert "absl" in imported and not imported & {"tensorflow", "keras", "tensorflow_text"}, sorted(imported)


@pytest.mark.parametrize("module", ["tasks.run_classifier", "export.saved_model", "export.tflite"])
def test_a_flag_that_does_not_exist_is_an_error_before_tensorflow_loads(module):
    result, imported = _python_m(module, "--num_train_step=3")
    assert result.returncode == 1 and "Unknown command line flag 'num_train_step'" in result.stderr, result.stderr
    assert not imported & {"tensorflow", "keras"}, sorted(imported)


# The entry points with flags they cannot run without, and the first of them (reported first).
FIRST_REQUIRED_FLAG = {"export.hugging_face": "model_dir", "export.tflite": "saved_model_dir",
                       "export.predict": "export_dir", "tasks.create_pretraining_data": "input_file",
                       "tasks.distill": "teacher", "tasks.prune": "teacher", "tasks.extract_features": "input_file"}


@pytest.mark.parametrize("module", sorted(FIRST_REQUIRED_FLAG))
def test_a_missing_required_flag_is_one_line_before_tensorflow_loads(module):
    result, imported = _python_m(module)
    assert result.returncode == 2, result.stderr[-3000:]
    assert result.stderr.strip().splitlines()[-1] == f"error: --{FIRST_REQUIRED_FLAG[module]} is required"
    assert not imported & {"tensorflow", "keras"}, sorted(imported)


@pytest.mark.parametrize("module", ENTRY_POINTS)
def test_help_lists_the_entry_points_own_and_run_flags(module, helps):
    result, _ = helps[module]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]  # absl's --help exits with status 1
    listed = set(re.findall(r"^  --(?:\[no\])?(\w+):", result.stdout, re.MULTILINE))
    own, run = _expected_flags(module)
    assert own, module
    assert own <= listed, sorted(own - listed)
    assert run <= listed, sorted(run - listed)
    if run:
        assert {"model_dir", "num_train_steps", "learning_rate"} <= listed
    assert not listed & ABSL_FLAGS, sorted(listed & ABSL_FLAGS)  # absl's own stay under --helpfull
    assert "Try --helpfull to get a list of all flags." in result.stdout
