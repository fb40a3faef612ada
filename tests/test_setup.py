"""setup.py: `install_requires` is exactly what the library imports at run time; what only the tests and
benchmarks import is in the `test` extra."""

import ast
import importlib.metadata
import pathlib
import re
import sys

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
LIBRARY = ("official_bert", "tasks", "export", "configs")
# Needed at run time by what the library imports, which does not declare them.
UNDECLARED_RUN_TIME = {"tensorboard", "importlib-resources"}
# Imported by export.tflite.interpreter, the runtime of an app (or test) that runs a converted model; converting
# needs none of it.
APP_RUNTIME = {"ai-edge-litert"}
# Imported by the library only on a Keras backend the user chose and installed (official_bert.models.matmul_precision).
BACKEND_RUNTIME = {"jax"}
# Imported by a benchmark for its version only; installed as jax's dependency, not named in the extra.
JAX_DEPENDENCY_ONLY = {"jaxlib"}


def _requirements(name):
    """The distribution names of the list `name` (INSTALL_REQUIRES, TEST_REQUIRES) of setup.py."""
    tree = ast.parse((REPO_ROOT / "setup.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and node.targets[0].id == name:
            return {_normalize(re.split(r"[<>=!~;\[ ]", spec)[0]) for spec in ast.literal_eval(node.value)}
    raise AssertionError(f"no {name} in setup.py")


def _normalize(distribution):
    return distribution.lower().replace("_", "-")


def _imported_distributions(*folders):
    """The installed distributions of the third-party modules imported under `folders` (top-level names that are
    neither the standard library nor this repository's: its top-level packages and the tests' helper modules)."""
    local = {path.stem for path in REPO_ROOT.iterdir()} | {path.stem for path in (REPO_ROOT / "tests").rglob("*.py")}
    modules = set()
    for folder in folders:
        for path in (REPO_ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    modules.update(alias.name.split(".")[0] for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.level == 0:
                    modules.add(node.module.split(".")[0])
    modules -= set(sys.stdlib_module_names) | local | {"__future__"}
    names = importlib.metadata.packages_distributions()
    return {_normalize(names[module][0]) if module in names else _normalize(module) for module in modules}


def test_install_requires_is_what_the_library_imports():
    imported = _imported_distributions(*LIBRARY)
    assert imported - APP_RUNTIME - BACKEND_RUNTIME == _requirements("INSTALL_REQUIRES") - UNDECLARED_RUN_TIME


def test_the_test_extra_installs_what_only_tests_and_benchmarks_import():
    installed = _requirements("INSTALL_REQUIRES") | _requirements("TEST_REQUIRES")
    assert APP_RUNTIME | BACKEND_RUNTIME <= _requirements("TEST_REQUIRES")
    assert _imported_distributions("tests", "benchmarks") - JAX_DEPENDENCY_ONLY <= installed
    assert "keras-hub" not in _requirements("INSTALL_REQUIRES")
