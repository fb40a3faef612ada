"""The docs cannot rot: README.md, CONTRIBUTING.md and docs/*.md checked against the code.

Every relative link resolves (a `#anchor` to a page names one of its headings); every `python -m X` names a module
that exists, and every `--flag` given to one of ours is a flag that module defines (read from its source and the
modules it imports: absl `flags.DEFINE_*`, `tasks.common.define_run_flags`, argparse `add_argument`; nothing is
imported); the Python snippets marked `<!-- runnable -->` run.
"""

import ast
import glob
import importlib.util
import os
import re
import shlex

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGES = ["README.md", "CONTRIBUTING.md"] + sorted(os.path.relpath(path, ROOT)
                                                  for path in glob.glob(os.path.join(ROOT, "docs", "*.md")))
FENCE = re.compile(r"^ *```(\w*)\n(.*?)^ *```$", re.M | re.S)  # also indented, in a list item
RUNNABLE = re.compile(r"^<!-- runnable -->\n```python\n(.*?)^```$", re.M | re.S)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
# Inline code: a run of backticks closed by a run of the same length (CommonMark).
INLINE = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.S)
SHELL_LANGUAGES = ("bash", "sh", "shell", "")
# absl's own flags, which every absl entry point takes.
ABSL_FLAGS = {"verbosity", "v", "logtostderr", "alsologtostderr", "log_dir", "flagfile", "helpfull"}
# The top-level folders whose modules' flags are read (the entry points and what they import).
ENTRY_POINT_PACKAGES = ("tasks", "export", "benchmarks", "tests")


def read(page):
    with open(os.path.join(ROOT, page), encoding="utf-8") as f:
        return f.read()


def prose(text):
    """The text without fenced blocks and inline code."""
    return INLINE.sub("", FENCE.sub("", text))


def slug(heading):
    """GitHub's anchor of a heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(text):
    return {slug(line.lstrip("#")) for line in FENCE.sub("", text).splitlines() if line.startswith("#")}


def commands(text):
    """Every shell command line of a page: fenced shell blocks (continuation lines joined) and inline code."""
    lines = []
    for language, block in FENCE.findall(text):
        if language in SHELL_LANGUAGES:
            lines += block.replace("\\\n", " ").splitlines()
    lines += [span.replace("\n", " ") for _, span in INLINE.findall(FENCE.sub("", text))]
    return [line for line in lines if re.search(r"\bpython3? -m ", line)]


def python_m_calls(line):
    """`(module, [flag names])` of each `python -m module ...` of a command line."""
    try:
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError:  # unbalanced quotes: an inline span that is not a whole command
        tokens = line.split()
    calls = []
    for i, token in enumerate(tokens[:-2]):
        if token in ("python", "python3") and tokens[i + 1] == "-m":
            args = []
            for arg in tokens[i + 3:]:
                if arg in ("&&", "||", ";", "|", "&", ")"):
                    break
                args.append(arg.strip("[]"))
            calls.append((tokens[i + 2], [arg[2:].split("=")[0] for arg in args if arg.startswith("--")]))
    return calls


def module_file(module):
    """The source file of one of this repository's modules, or None."""
    base = os.path.join(ROOT, *module.split("."))
    return next((path for path in (base + ".py", os.path.join(base, "__main__.py")) if os.path.isfile(path)), None)


def _run_flags():
    """`tasks.common.RUN_FLAGS`: name -> whether boolean."""
    tree = ast.parse(read(os.path.join("tasks", "common.py")))
    table = next(node.value for node in tree.body if isinstance(node, ast.Assign)
                 and getattr(node.targets[0], "id", None) == "RUN_FLAGS")
    return {key.value: value.elts[0].value == "boolean" for key, value in zip(table.keys, table.values)}


def _imported_modules(tree, module):
    """This repository's entry-point modules that a module's top level imports."""
    names = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            base = node.module if not node.level else ".".join(module.split(".")[:-node.level] + [node.module])
            names += [base] + [f"{base}.{alias.name}" for alias in node.names]
    return [name for name in names if name.split(".")[0] in ENTRY_POINT_PACKAGES and module_file(name)]


def defined_flags(module, seen=None):
    """The flag spellings a module of ours accepts: its own and those of the modules it imports."""
    seen = set() if seen is None else seen
    if module in seen:
        return set()
    seen.add(module)
    tree = ast.parse(read(module_file(module)))
    names = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        function = getattr(node.func, "attr", getattr(node.func, "id", ""))
        if function.startswith("DEFINE_") and node.args and isinstance(node.args[0], ast.Constant):
            name = node.args[0].value
            names |= {name, "no" + name} if function in ("DEFINE_bool", "DEFINE_boolean") else {name}
            names |= ABSL_FLAGS
        elif function == "define_run_flags":
            skip = next((ast.literal_eval(kw.value) for kw in node.keywords if kw.arg == "skip"), ())
            for name, boolean in _run_flags().items():
                if name not in skip:
                    names |= {name, "no" + name} if boolean else {name}
        elif function == "add_argument":
            negatable = any(kw.arg == "action" and "BooleanOptionalAction" in ast.unparse(kw.value)
                            for kw in node.keywords)
            for arg in node.args:
                if isinstance(arg, ast.Constant) and str(arg.value).startswith("--"):
                    names |= {arg.value[2:], "no-" + arg.value[2:]} if negatable else {arg.value[2:]}
    for imported in _imported_modules(tree, module):
        names |= defined_flags(imported, seen)
    return names


def command_problems(line):
    """What is wrong with the `python -m` calls of one command line."""
    problems = []
    for module, flags in python_m_calls(line):
        flags = [flag for flag in flags if flag != "help"]  # every entry point, absl or argparse
        if module_file(module) is None:
            if module.split(".")[0] in ENTRY_POINT_PACKAGES + ("official_bert",) or not importlib.util.find_spec(
                    module):
                problems.append(f"no module {module}: {line.strip()}")
            continue  # a third-party module (pytest, venv): its flags are its own
        unknown = sorted(set(flags) - defined_flags(module))
        if unknown:
            problems.append(f"{module} defines no --{', --'.join(unknown)}: {line.strip()}")
    return problems


@pytest.mark.parametrize("page", PAGES)
def test_relative_links_resolve(page):
    here = os.path.dirname(os.path.join(ROOT, page))
    broken = []
    for target in LINK.findall(prose(read(page))):
        if re.match(r"[a-z]+:", target):
            continue  # http:, https:, mailto:
        path, _, anchor = target.partition("#")
        full = os.path.normpath(os.path.join(here, path)) if path else os.path.join(ROOT, page)
        if not os.path.exists(full):
            broken.append(target)
        elif anchor and full.endswith(".md") and anchor not in anchors(read(full)):
            broken.append(target)
    assert not broken, f"{page}: links that lead nowhere: {broken}"


@pytest.mark.parametrize("page", PAGES)
def test_commands_name_modules_and_flags_that_exist(page):
    problems = [problem for line in commands(read(page)) for problem in command_problems(line)]
    assert not problems, f"{page}:\n" + "\n".join(problems)


def test_the_command_check_finds_unknown_modules_and_flags():
    assert command_problems("python -m tasks.run_ner --model_dir=out/ner --notrain_on_real_tokens") == []
    assert command_problems("python -m tasks.prune --teacher=out/mrpc --keep_layers=4 --model_dir=x") == []
    assert command_problems("python -m benchmarks.feature_based_ner --no-finetune [--seed=43]") == []
    assert command_problems("python3 -m venv .venv && python -m pytest -q -n auto") == []
    assert command_problems("python -m tasks.run_ner --no_such_flag=1") != []
    assert command_problems("python -m tasks.run_pretraining --warmup_proportion=0.1") != []  # skipped run flag
    assert command_problems("python -m tasks.no_such_entry_point") != []
    page = "```bash\npython -m export.predict --export_dir=a \\\n    --b  # --c\n```\nand `python -m x\n--d`\n"
    assert [python_m_calls(line) for line in commands(page)] == [[("export.predict", ["export_dir", "b"])],
                                                                  [("x", ["d"])]]


def test_every_docs_page_starts_with_a_command_or_snippet():
    for page in PAGES[2:]:
        lines = [line for line in read(page).splitlines() if line.strip()]
        assert lines[0].startswith("# ") and lines[1].startswith(("```", "<!-- runnable -->")), page


def test_readme_is_short_and_shows_the_test_command_ci_runs():
    readme = read("README.md")
    assert len(readme.splitlines()) <= 200
    ci_command = re.search(r"^python -m pytest .*$", read(os.path.join(".ci", "run")), re.M).group(0)
    assert f"```bash\n{ci_command}\n```" in readme


SNIPPETS = [(page, i, code) for page in PAGES for i, code in enumerate(RUNNABLE.findall(read(page)))]


def test_there_are_runnable_snippets():
    assert len(SNIPPETS) >= 3


@pytest.mark.parametrize("page,index,code", SNIPPETS, ids=[f"{page}:{i}" for page, i, _ in SNIPPETS])
def test_runnable_snippet_runs(page, index, code, monkeypatch):
    monkeypatch.chdir(ROOT)
    exec(compile(code, f"{page} (runnable snippet {index})", "exec"), {"__name__": "__docs__"})
