"""Python command lines run as children of a fork server, instead of each in a fresh interpreter that imports
TensorFlow again (3 to 4 s of CPU each).

A fork server is a process a pytest worker starts once, that imports a fixed set of modules and then forks a child
per command (no op runs in it, before or between forks). There are two kinds:
- "project": tensorflow, tensorflow_text and the library's runner (`run_forked`, for the entry points), and the
  uncased BERT vocab's normalizer tables (pure Python, cached by `official_bert.text.tokenizer`); its children
  trace without op tracebacks, as the workers do (`tests/tf_op_tracebacks.py`);
- "tensorflow": tensorflow alone (`run_python`, for a SavedModel's consumers, which must not see the project: each
  such check asserts that no module of the project was imported).

A child runs its command as `python <argv>` would: `-m module` with `runpy` as `__main__`, `-c code`, or a script's
path; in the caller's working directory and environment, with its own stdout, stderr and exit status.

A `run_forked` command may end with a kill condition `(model_dir, step)`: the server, polling every 5 ms, SIGKILLs
the running child as soon as `<model_dir>/checkpoints/checkpoint` names ckpt-<step> (or a later one) as the latest
checkpoint, and keeps a copy of `model_dir` as the dead child left it. A condition `(model_dir, step, copy_to)`
instead SIGSTOPs the child at that moment, copies `model_dir` to `copy_to` (the files a SIGKILL then would have
left), and lets the child go on (SIGCONT) to its end.

A server ends when its worker does (its stdin closes). A call that runs past its timeout kills the server and every
child of it (their own process group), and fails; the next call starts a new server."""

import json
import os
import pathlib
import selectors
import signal
import socket
import subprocess
import sys
import tempfile

from tests.conftest import REPO_ROOT, SHARED_DATA

UNCASED_VOCAB = SHARED_DATA / "bert-vocab" / "bert-base-uncased-vocab.txt"
# The project server also builds the uncased BERT vocab's normalizer tables (0.2 s of pure Python) and its
# FastWordpiece model (0.07 s; both cached by the tokenizer module, the latter at its default word length limit),
# which most commands' tokenizers would otherwise each build again.
_WARM_TOKENIZER = f"""
from official_bert.text import tokenizer, vocab
if os.path.isfile({str(UNCASED_VOCAB)!r}):
    _tokens = vocab.PieceTable(vocab.load_vocab({str(UNCASED_VOCAB)!r})).tokens
    tokenizer._normalizer_models(True, _tokens)
    tokenizer._wordpiece_model(_tokens, tokenizer.DEFAULT_MAX_CHARS_PER_WORD)
"""
_IMPORTS = {"project": "import official_bert, official_bert.pipelines, official_bert.runner, official_bert.text\n"
                       "from tests.tf_op_tracebacks import leave_out_op_tracebacks\nleave_out_op_tracebacks()\n"
                       + _WARM_TOKENIZER,
            "tensorflow": "import tensorflow"}

_SERVER = """
import json, os, re, runpy, shutil, signal, sys, time
# Once, before any fork; no TensorFlow op runs.
{imports}
import gc
gc.collect()
gc.freeze()  # the imported heap: each child's full garbage collections scan only what the child makes

def latest_checkpoint(model_dir):
    try:
        with open(f"{{model_dir}}/checkpoints/checkpoint") as f:
            found = re.match(r'model_checkpoint_path: "(?:.*/)?ckpt-([0-9]+)"', f.read())
    except FileNotFoundError:
        return None
    return int(found.group(1)) if found else None

def run_argv(argv):
    if argv[0] == "-m":
        sys.argv = argv[1:]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    elif argv[0] == "-c":
        sys.argv = ["-c", *argv[2:]]
        exec(compile(argv[1], "<string>", "exec"), {{"__name__": "__main__", "__builtins__": __builtins__}})
    else:
        sys.argv = list(argv)
        sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
        runpy.run_path(argv[0], run_name="__main__")

def run_child(argv, out, environment):
    os.environ.clear()
    os.environ.update(environment)
    stdin = os.open(os.devnull, os.O_RDONLY)
    os.dup2(stdin, 0)  # not the server's request pipe
    code = 0
    with open(out + ".out", "w") as stdout, open(out + ".err", "w") as stderr:
        os.dup2(stdout.fileno(), 1)
        os.dup2(stderr.fileno(), 2)
        try:
            run_argv(argv)
        except SystemExit as exit:
            code = 0 if exit.code is None else exit.code if isinstance(exit.code, int) else 1
        except BaseException:
            import traceback
            traceback.print_exc()
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)

def fork_child(argv, out, environment):
    pid = os.fork()
    if pid == 0:
        run_child(argv, out, environment)
    return pid

def write_exit_code(out, status):
    with open(out + ".rc", "w") as f:
        f.write(str(os.waitstatus_to_exitcode(status)))

def serve(request):
    os.chdir(request["cwd"])
    outs = [f"{{request['out_dir']}}/{{index}}" for index in range(len(request["commands"]))]
    if request["together"]:  # all started, then each waited for (no conditions)
        pids = [fork_child(argv, out, environment) for (argv, _, environment), out in zip(request["commands"], outs)]
        for pid, out in zip(pids, outs):
            write_exit_code(out, os.waitpid(pid, 0)[1])
        return
    for (argv, kill, environment), out in zip(request["commands"], outs):
        pid = fork_child(argv, out, environment)
        if kill:
            (model_dir, step, copy_to), seen = kill, None
            while not os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT):  # not reaped: the pid stays
                seen = latest_checkpoint(model_dir)
                if seen is not None and seen >= step:
                    if copy_to is None:
                        os.kill(pid, signal.SIGKILL)
                    else:  # stopped, the model dir is as a kill now would leave it; then the run goes on
                        os.kill(pid, signal.SIGSTOP)
                        os.waitid(os.P_PID, pid, os.WSTOPPED | os.WNOWAIT)
                        shutil.copytree(model_dir, copy_to, symlinks=True)
                        seen = latest_checkpoint(copy_to)
                        os.kill(pid, signal.SIGCONT)
                    break
                time.sleep(0.005)
        status = os.waitpid(pid, 0)[1]
        if kill:
            with open(out + ".checkpoint", "w") as f:
                f.write(json.dumps(seen))
            if copy_to is None:
                shutil.copytree(model_dir, out + ".model_dir", symlinks=True)
        write_exit_code(out, status)

for line in sys.stdin:
    serve(json.loads(line))
    sys.stdout.write("done\\n")
    sys.stdout.flush()
"""

_servers = {}  # kind -> this worker's server: (Popen, its stderr file)


def _environment(env=None):
    """`env` (default: this process's environment) with TF_CPP_MIN_LOG_LEVEL=2 and the repository on PYTHONPATH."""
    env = dict(os.environ if env is None else env)
    return {**env, "TF_CPP_MIN_LOG_LEVEL": "2",
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))}


def _server(kind):
    """This worker's server of `kind`, started if it is not running (in its own process group, so that a timeout
    can kill it with its children)."""
    if kind not in _servers or _servers[kind][0].poll() is not None:
        stderr = tempfile.TemporaryFile(mode="w+")
        process = subprocess.Popen([sys.executable, "-c", _SERVER.format(imports=_IMPORTS[kind])], cwd=REPO_ROOT,
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, text=True,
                                   env=_environment(), start_new_session=True)
        _servers[kind] = process, stderr
    return _servers[kind][0]


def _stop_server(kind):
    """Kills the server of `kind` and its children; returns what the server wrote to stderr."""
    process, stderr = _servers.pop(kind)
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    stderr.seek(0)
    return stderr.read()


def _serve(kind, commands, out_dir, cwd, timeout, together=False):
    """Runs `commands` ([argv, kill or copy condition or None, environment]) in children of the `kind` server, one
    after another, or with `together` all at once (no conditions)."""
    process = _server(kind)
    request = {"commands": commands, "together": together, "out_dir": str(pathlib.Path(out_dir).resolve()),
               "cwd": str(cwd)}
    process.stdin.write(json.dumps(request, default=str) + "\n")
    process.stdin.flush()
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        ready = selector.select(timeout)
    reply = process.stdout.readline() if ready else None
    if reply != "done\n":
        log = _stop_server(kind)
        what = f"ran past {timeout} s" if reply is None else "died"
        raise AssertionError(f"the {kind} fork server {what} on {[argv[:2] for argv, *_ in commands]}:\n"
                             f"{log[-3000:]}")


def _completed(out_dir, index, argv):
    prefix = pathlib.Path(out_dir) / str(index)
    return subprocess.CompletedProcess(argv, int(prefix.with_suffix(".rc").read_text()),
                                       prefix.with_suffix(".out").read_text(), prefix.with_suffix(".err").read_text())


def run_forked(commands, out_dir, cwd=REPO_ROOT, timeout=600):
    """Runs `commands`, a list of `(module, [args])`, `(module, [args], (model_dir, step))` (a kill condition) or
    `(module, [args], (model_dir, step, copy_to))` (a copy condition), as `python -m module args`, one after another,
    each in a child of this worker's "project" fork server.

    Args:
        commands: as above.
        out_dir: an existing directory for their outputs.
        cwd: their working directory.
        timeout: seconds for all of them.

    Returns:
        a `subprocess.CompletedProcess` (returncode, stdout, stderr) for each; with a kill or copy condition, also
        `latest_checkpoint` (the step the server read last: the one it killed at, the copy's, or None); with a kill
        condition, also `model_dir` (the copy of the model dir once the child was dead).
    """
    environment = _environment()
    requests = []
    for module, args, *kill in commands:
        condition = None
        if kill:  # the server takes (model_dir, step, copy_to or None)
            model_dir, step, *copy_to = kill[0]
            condition = [model_dir, step, copy_to[0] if copy_to else None]
        requests.append([["-m", module, *args], condition, environment])
    _serve("project", requests, out_dir, cwd, timeout)
    results = []
    for index, (module, args, *kill) in enumerate(commands):
        result = _completed(out_dir, index, [module, *args])
        if kill:
            prefix = pathlib.Path(out_dir) / str(index)
            result.latest_checkpoint = json.loads(prefix.with_suffix(".checkpoint").read_text())
            if len(kill[0]) == 2:
                result.model_dir = prefix.with_suffix(".model_dir")
        results.append(result)
    return results


def run_python(argv, cwd=REPO_ROOT, env=None, timeout=600):
    """`python <argv>` (`["-c", code, *args]`, `["-m", module, *args]` or `[script, *args]`) in a child of this
    worker's "tensorflow" fork server, which imported tensorflow and nothing else: a `subprocess.CompletedProcess`.

    Args:
        argv: the command line after `python`.
        cwd: its working directory.
        env: its environment (default: this process's); TF_CPP_MIN_LOG_LEVEL=2 and the repository on PYTHONPATH
            are added.
        timeout: seconds.
    """
    argv = [str(arg) for arg in argv]
    with tempfile.TemporaryDirectory() as out_dir:
        _serve("tensorflow", [[argv, None, _environment(env)]], out_dir, cwd, timeout)
        return _completed(out_dir, 0, argv)


def run_forked_workers(module, args, tmp_path, workers=2, timeout=600):
    """Runs `python -m module args` as the `workers` workers of one multi-worker cluster on free local ports, all at
    once, each in a child of this worker's "project" fork server, with its TF_CONFIG (its index in the cluster) and
    its own TMPDIR, `tmp_path/tmp<index>`; their outputs go to `tmp_path/outputs`.

    Returns:
        a `subprocess.CompletedProcess` for each worker, the chief's first.
    """
    cluster = {"worker": [f"127.0.0.1:{_free_port()}" for _ in range(workers)]}
    argv, commands = ["-m", module, *args], []
    for index in range(workers):
        temp = tmp_path / f"tmp{index}"
        temp.mkdir()
        environment = _environment({**os.environ, "TMPDIR": str(temp), "TF_CONFIG": json.dumps(
            {"cluster": cluster, "task": {"type": "worker", "index": index}})})
        commands.append([argv, None, environment])
    (tmp_path / "outputs").mkdir()
    _serve("project", commands, tmp_path / "outputs", REPO_ROOT, timeout, together=True)
    return [_completed(tmp_path / "outputs", index, argv) for index in range(workers)]


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
