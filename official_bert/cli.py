"""How the entry points (`tasks/`, `export/`) run: absl's `app.run`, logging at INFO, one-line errors, and
TensorFlow's native start-up lines and its own INFO lines kept off the console unless `--verbosity` is given.

An entry point calls `quiet_native_logs()` before anything imports TensorFlow, and `run_main(main)` to run.
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


def quiet_native_logs(argv=None):
    """Unless `--verbosity` (absl's flag) is on the command line: sets TF_CPP_MIN_LOG_LEVEL=2 (when unset) and
    drops TensorFlow's native pre-initialisation log lines from stderr; every other line passes.

    Args:
        argv: the command line (default `sys.argv`).
    """
    if _verbose(sys.argv if argv is None else argv):
        return
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


def run_main(main):
    """Runs an entry point's `main(argv)` with absl; a usage error or one of `USER_ERRORS` is one line, exit 2
    (with `--verbosity`, its traceback instead)."""
    from absl import app

    verbose = _verbose(sys.argv)

    def guarded(argv):
        if not verbose:  # absl's handler is in place once the flags are parsed
            for handler in logging.getLogger().handlers:
                handler.addFilter(_no_framework_info)
        try:
            main(argv)
        except (app.UsageError, *USER_ERRORS) as error:
            if verbose:
                raise
            sys.stderr.write(f"error: {error}\n")
            sys.exit(2)

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    app.run(guarded)
