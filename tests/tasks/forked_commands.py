"""`python -m <module> <args>` command lines run as children of a fork server: one process per pytest worker that
imports TensorFlow, tensorflow_text and the library's runner once (no op runs in it, before or between forks) and
then forks a child per command. Each child runs the module as `-m` does (`runpy`, as `__main__`) in the caller's
working directory and environment, with its own stdout, stderr and exit status.

A command may end with a kill condition `(model_dir, step)`: the server, polling every 5 ms, SIGKILLs the running
child as soon as `<model_dir>/checkpoints/checkpoint` names ckpt-<step> (or a later one) as the latest checkpoint,
and keeps a copy of `model_dir` as the dead child left it.

The server starts with the worker's first `run_forked` (3.5 s of imports, paid once a worker instead of once a
call) and ends when the worker does (its stdin closes). A call that runs past its timeout kills the server and
every child of it (their own process group), and fails; the next call starts a new server."""

import json
import os
import pathlib
import selectors
import signal
import subprocess
import sys
import tempfile

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]

_SERVER = """
import json, os, re, runpy, shutil, signal, sys, time
import official_bert, official_bert.pipelines, official_bert.runner, official_bert.text  # once; no op runs

def latest_checkpoint(model_dir):
    try:
        with open(f"{model_dir}/checkpoints/checkpoint") as f:
            found = re.match(r'model_checkpoint_path: "(?:.*/)?ckpt-([0-9]+)"', f.read())
    except FileNotFoundError:
        return None
    return int(found.group(1)) if found else None

def run_child(module, args, out, environment):
    os.environ.clear()
    os.environ.update(environment)
    stdin = os.open(os.devnull, os.O_RDONLY)
    os.dup2(stdin, 0)  # not the server's request pipe
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

def serve(request):
    os.chdir(request["cwd"])
    for index, (module, args, *kill) in enumerate(request["commands"]):
        out = f"{request['out_dir']}/{index}"
        pid = os.fork()
        if pid == 0:
            run_child(module, args, out, request["env"])
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

for line in sys.stdin:
    serve(json.loads(line))
    sys.stdout.write("done\\n")
    sys.stdout.flush()
"""

_server = None  # this worker's server: (Popen, its stderr file)


def _start_server():
    """A new fork server (in its own process group, so that a timeout can kill it with its children)."""
    stderr = tempfile.TemporaryFile(mode="w+")
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    process = subprocess.Popen([sys.executable, "-c", _SERVER], cwd=REPO_ROOT, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=stderr, text=True, env=env, start_new_session=True)
    return process, stderr


def _stop_server():
    global _server
    process, stderr = _server
    _server = None
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    stderr.seek(0)
    return stderr.read()


def _result(out_dir, index, module, args, *kill):
    """The command's `CompletedProcess`; with a kill condition, also `latest_checkpoint` (the step the server read
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
    one after another, each in a child of this worker's fork server; returns a `subprocess.CompletedProcess`
    (returncode, stdout, stderr) for each. `out_dir` (existing) keeps their outputs; `cwd` is their working
    directory; they get this process's environment (TF_CPP_MIN_LOG_LEVEL=2, the repository on PYTHONPATH)."""
    global _server
    if _server is None or _server[0].poll() is not None:
        _server = _start_server()
    process = _server[0]
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    request = {"commands": commands, "out_dir": str(pathlib.Path(out_dir).resolve()), "cwd": str(cwd), "env": env}
    process.stdin.write(json.dumps(request, default=str) + "\n")
    process.stdin.flush()
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        ready = selector.select(timeout)
    reply = process.stdout.readline() if ready else None
    if reply != "done\n":
        log = _stop_server()
        what = f"ran past {timeout} s" if reply is None else "died"
        raise AssertionError(f"the fork server {what} on {[command[0] for command in commands]}:\n{log[-3000:]}")
    return [_result(out_dir, index, *command) for index, command in enumerate(commands)]
