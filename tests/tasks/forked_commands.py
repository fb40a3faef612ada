"""`python -m <module> <args>` command lines run as children of one process that imports TensorFlow, tensorflow_text
and the library's runner once (no op runs before the forks): each child runs the module as `-m` does (`runpy`, as
`__main__`), with its own stdout, stderr and exit status.

A command may end with a kill condition `(model_dir, step)`: the parent, polling every 5 ms, SIGKILLs the running
child as soon as `<model_dir>/checkpoints/checkpoint` names ckpt-<step> (or a later one) as the latest checkpoint,
and keeps a copy of `model_dir` as the dead child left it."""

import json
import os
import pathlib
import subprocess
import sys

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]

_SCRIPT = """
import json, os, re, runpy, shutil, signal, sys, time
import official_bert, official_bert.pipelines, official_bert.runner, official_bert.text  # once; no op runs

def latest_checkpoint(model_dir):
    try:
        with open(f"{model_dir}/checkpoints/checkpoint") as f:
            found = re.match(r'model_checkpoint_path: "(?:.*/)?ckpt-([0-9]+)"', f.read())
    except FileNotFoundError:
        return None
    return int(found.group(1)) if found else None

for index, (module, args, *kill) in enumerate(json.loads(sys.argv[2])):
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
    if kill:
        (model_dir, step), seen = kill[0], None
        while not os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT):  # not reaped: the pid stays
            seen = latest_checkpoint(model_dir)
            if seen is not None and seen >= step:
                os.kill(pid, signal.SIGKILL)
                break
            time.sleep(0.005)
    status = os.waitpid(pid, 0)[1]
    if kill:
        with open(out + ".checkpoint", "w") as f:
            f.write(json.dumps(seen))
        shutil.copytree(model_dir, out + ".model_dir", symlinks=True)
    with open(out + ".rc", "w") as f:
        f.write(str(os.waitstatus_to_exitcode(status)))
"""


def _result(out_dir, index, module, args, *kill):
    """The command's `CompletedProcess`; with a kill condition, also `latest_checkpoint` (the step the parent read
    last: the one it killed at, or None) and `model_dir` (the copy of the model dir once the child was dead)."""
    prefix = pathlib.Path(out_dir) / str(index)
    result = subprocess.CompletedProcess([module, *args], int(prefix.with_suffix(".rc").read_text()),
                                         prefix.with_suffix(".out").read_text(), prefix.with_suffix(".err").read_text())
    if kill:
        result.latest_checkpoint = json.loads(prefix.with_suffix(".checkpoint").read_text())
        result.model_dir = prefix.with_suffix(".model_dir")
    return result


def run_forked(commands, out_dir, cwd=REPO_ROOT, timeout=600):
    """Runs `commands`, a list of `(module, [args])` or `(module, [args], (model_dir, step))` (a kill condition),
    one after another; returns a `subprocess.CompletedProcess` (returncode, stdout, stderr) for each. `out_dir`
    (existing) keeps their outputs."""
    result = subprocess.run([sys.executable, "-c", _SCRIPT, str(out_dir), json.dumps(commands, default=str)], cwd=cwd,
                            capture_output=True, text=True, timeout=timeout,
                            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2",
                                 "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT),
                                                                             os.environ.get("PYTHONPATH")]))})
    assert result.returncode == 0, result.stderr[-3000:]
    return [_result(out_dir, index, *command) for index, command in enumerate(commands)]
