"""`python -m <module> <args>` command lines run as children of one process that imports TensorFlow once: each
child runs the module as `-m` does (`runpy`, as `__main__`), with its own stdout, stderr and exit status."""

import json
import os
import pathlib
import subprocess
import sys

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]

_SCRIPT = """
import json, os, runpy, sys
import official_bert  # TensorFlow, once; no op runs before the forks
for index, (module, args) in enumerate(json.loads(sys.argv[2])):
    out = f"{sys.argv[1]}/{index}"
    pid = os.fork()
    if pid == 0:
        code = 0
        with open(out + ".out", "w") as stdout, open(out + ".err", "w") as stderr:
            os.dup2(stdout.fileno(), 1)
            os.dup2(stderr.fileno(), 2)
            sys.argv = [module, *args]
            try:
                runpy.run_module(module, run_name="__main__", alter_sys=True)
            except SystemExit as exit:
                code = 0 if exit.code is None else exit.code if isinstance(exit.code, int) else 1
            except BaseException:
                import traceback
                traceback.print_exc()
                code = 3
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)
    with open(out + ".rc", "w") as f:
        f.write(str(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])))
"""


def run_forked(commands, out_dir, cwd=REPO_ROOT, timeout=600):
    """Runs `commands`, a list of `(module, [args])`, one after another; returns a `subprocess.CompletedProcess`
    (returncode, stdout, stderr) for each. `out_dir` (existing) keeps their outputs."""
    result = subprocess.run([sys.executable, "-c", _SCRIPT, str(out_dir), json.dumps(commands)], cwd=cwd,
                            capture_output=True, text=True, timeout=timeout,
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2",
                                 "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT),
                                                                             os.environ.get("PYTHONPATH")]))})
    assert result.returncode == 0, result.stderr[-3000:]
    out_dir = pathlib.Path(out_dir)
    return [subprocess.CompletedProcess([module, *args], int((out_dir / f"{i}.rc").read_text()),
                                        (out_dir / f"{i}.out").read_text(), (out_dir / f"{i}.err").read_text())
            for i, (module, args) in enumerate(commands)]
