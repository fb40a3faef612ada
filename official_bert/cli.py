"""How the entry points (`tasks/`, `export/`) run: absl's `app.run`, logging at INFO, one-line errors, and
TensorFlow's native start-up lines and its own INFO lines kept off the console unless `--verbosity` is given.

The native lines are written while TensorFlow loads, which `import official_bert` does: the package calls
`quiet_native_logs_of_entry_points()` first, which filters them when the program is one of our entry points. An
entry point then calls `run_main(main)` to run. This module imports no TensorFlow.
"""

import atexit
import logging
import os
import re
import sys
import threading

# A bad flag, file or setting: reported as one line on stderr, exit 2, no traceback.
USER_ERRORS = (ValueError, FileNotFoundError, FileExistsError)

# What TensorFlow's C++ runtime writes before its logging is initialised ("I0000 00:00:1795452153.77 6612
# port.cc:153] oneDNN custom operations are on...", CUDA probing on CPU-only machines, CPU feature notes):
# TF_CPP_MIN_LOG_LEVEL does not reach these.
_NATIVE_LINE = re.compile(rb"^(?:[IWE]0000 00:00:\d+\.\d+\s+\d+ [\w.+-]+:\d+\] |WARNING: All log messages before "
                          rb"absl::InitializeLog\(\) is called)")


def _verbose(argv):
    return any(arg == "-v" or arg.startswith(("--verbosity", "-v=")) for arg in argv[1:])


# The top-level packages of our entry points, installed beside `official_bert`.
_ENTRY_POINT_PACKAGES = ("tasks", "export")
_filtering = False


def is_entry_point_run():
    """Whether this program is one of our entry points (`python -m tasks.run_classifier`, ...): its main module
    belongs to `tasks` or `export` beside this package (a project's own `tasks` package does not count)."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is None or not getattr(main, "__file__", None) or spec.name.split(".")[0] not in _ENTRY_POINT_PACKAGES:
        return False
    ours = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return os.path.dirname(os.path.dirname(os.path.abspath(main.__file__))) == ours


def quiet_native_logs_of_entry_points():
    """`quiet_native_logs()` when `is_entry_point_run()`; otherwise nothing (a library user's stderr is theirs)."""
    if is_entry_point_run():
        quiet_native_logs()


def quiet_native_logs(argv=None):
    """Unless `--verbosity` (absl's flag) is on the command line: sets TF_CPP_MIN_LOG_LEVEL=2 (when unset) and
    drops TensorFlow's native pre-initialisation log lines from stderr; every other line passes.

    Args:
        argv: the command line (default `sys.argv`).
    """
    global _filtering
    if _filtering or _verbose(sys.argv if argv is None else argv):
        return
    _filtering = True
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    sys.stderr.flush()
    read_end, write_end = os.pipe()
    console = os.dup(2)  # the real stderr, written by the filter thread
    restore = os.dup(2)
    os.dup2(write_end, 2)
    os.close(write_end)

    def pump():
        with os.fdopen(read_end, "rb") as source, os.fdopen(console, "wb", buffering=0) as sink:
            for line in source:
                if not _NATIVE_LINE.match(line):
                    sink.write(line)

    thread = threading.Thread(target=pump, name="native-log-filter", daemon=True)
    thread.start()

    def stop():
        sys.stderr.flush()
        os.dup2(restore, 2)  # closes the pipe's last write end: the filter drains it and ends
        thread.join(timeout=5)

    atexit.register(stop)


def _no_framework_info(record):
    """False for TensorFlow's own INFO lines (saver sharding, fingerprints), logged through the "absl" and
    "tensorflow" loggers; ours go through official_bert.* loggers."""
    return record.levelno >= logging.WARNING or record.name.split(".")[0] not in ("absl", "tensorflow")


def check_command_line(argv, required=()):
    """The usage errors every entry point shares: words on the command line that are not flags, and required flags
    left unset.

    Args:
        argv: what absl left of the command line (the program name first); None when `main` is called directly.
        required: names of flags that must be given.
    """
    from absl import app, flags

    if argv and len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    for name in required:
        if not flags.FLAGS[name].value:
            raise app.UsageError(f"--{name} is required")


def run_main(main, required=()):
    """Runs an entry point's `main(argv)` with absl; a usage error or one of `USER_ERRORS` is one line, exit 2, and
    Ctrl-C one line, exit 130 (with `--verbosity`, their traceback instead).

    Args:
        main: the entry point's `main(argv)`.
        required: names of flags the command cannot run without: a missing one is the usage error before
            TensorFlow loads (a fraction of a second, not the 8 s a TensorFlow start costs on 2 cores).
    """
    from absl import app

    verbose = _verbose(sys.argv)

    def guarded(argv):
        if not verbose:  # absl's handler is in place once the flags are parsed
            for handler in logging.getLogger().handlers:
                handler.addFilter(_no_framework_info)
        try:
            check_command_line(None, required)
            import official_bert

            official_bert.register_keras_objects()  # after the flags: a typo or --help need no TensorFlow
            main(argv)
        except (app.UsageError, *USER_ERRORS) as error:
            if verbose:
                raise
            sys.stderr.write(f"error: {error}\n")
            sys.exit(2)
        except KeyboardInterrupt as interrupt:  # Ctrl-C: one line (training says where it stopped), exit 130
            if verbose:
                raise
            sys.stderr.write(f"{interrupt or 'interrupted'}\n")
            sys.exit(130)

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    app.run(guarded)
