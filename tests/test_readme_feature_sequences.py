"""README.md's "Your own feature sequences, end to end" runs as written: its Python block writes the `.npz` files
in an empty directory, then its command lines (train, export, query) run there in order, and `export.predict`
answers each new sequence with its label."""

import json
import shlex

import pytest

from tests.tasks.forked_commands import run_forked
from tests.test_docs import FENCE, read

pytestmark = pytest.mark.slow
HEADING = "### Your own feature sequences, end to end"


def _section_blocks():
    """(the Python block, the bash command lines) of the README's section."""
    text = read("README.md")
    section = text[text.index(HEADING):]
    section = section[:section.index("\n#", len(HEADING))]  # up to the next heading
    blocks = dict((language, block) for language, block in FENCE.findall(section))
    return blocks["python"], [line for line in blocks["bash"].splitlines() if line.strip()]


def test_the_readmes_feature_sequence_example_trains_exports_and_answers(tmp_path, monkeypatch):
    code, command_lines = _section_blocks()
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md (feature sequences)", "exec"), {"__name__": "__readme__"})
    commands = []
    for line in command_lines:
        python, dash_m, module, *args = shlex.split(line, comments=True)
        assert (python, dash_m) == ("python", "-m"), line
        commands.append((module, args))
    results = run_forked(commands, tmp_path, cwd=tmp_path)
    for (module, _), result in zip(commands, results):
        assert result.returncode == 0, (module, result.stderr[-3000:])
    answers = [json.loads(line) for line in results[-1].stdout.splitlines()]
    assert [answer["label"] for answer in answers] == ["walk", "run"] * 5
    assert all(len(answer["probabilities"]) == 2 for answer in answers)
    eval_results = json.loads((tmp_path / "out" / "gait" / "eval_results.json").read_text())
    assert eval_results["accuracy"] == 1.0
