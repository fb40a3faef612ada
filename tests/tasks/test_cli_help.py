"""`--help` of every entry point lists every flag it takes: its own and the shared run flags of tasks/common.py.

One process imports TensorFlow and the library once and forks a child per entry point that runs it as `python -m
<module> --help` does (`runpy`, as `__main__`). Each entry point also runs as `python -m` in a child of a process
that imported TensorFlow alone (`run_python`), so it imports the rest of what it needs by itself and prints the same
help; the first of them, `tasks.run_classifier`, in a fresh interpreter, the real `python -m`."""

import os
import pathlib
import re
import subprocess
import sys

import pytest
from tests.tasks.forked_commands import run_forked, run_python

from tasks.common import RUN_FLAGS

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow
ENTRY_POINTS = ["tasks.run_classifier", "tasks.run_ner", "tasks.run_squad", "tasks.run_multiple_choice",
                "tasks.run_pretraining", "tasks.create_pretraining_data", "tasks.extract_features", "tasks.distill",
                "tasks.prune", "tasks.run_time_series_classifier", "export.saved_model", "export.tflite",
                "export.predict"]
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


def _env():
    return {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}


@pytest.fixture(scope="module")
def helps(tmp_path_factory):
    """module -> CompletedProcess of `--help`, each entry point in a child of one process."""
    results = run_forked([(module, ["--help"]) for module in ENTRY_POINTS], tmp_path_factory.mktemp("help"))
    return dict(zip(ENTRY_POINTS, results))


@pytest.mark.parametrize("module", ENTRY_POINTS)
def test_python_m_without_the_librarys_imports_prints_the_forked_help(module, helps):
    if module == ENTRY_POINTS[0]:
        result = subprocess.run([sys.executable, "-m", module, "--help"], cwd=REPO_ROOT,
                                capture_output=True, text=True, timeout=300, env=_env())
    else:
        result = run_python(["-m", module, "--help"], timeout=300)
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    forked = helps[module]
    assert (forked.returncode, forked.stdout) == (result.returncode, result.stdout)


@pytest.mark.parametrize("module", ENTRY_POINTS)
def test_help_lists_the_entry_points_own_and_run_flags(module, helps):
    result = helps[module]
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
