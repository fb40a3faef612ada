"""One run at a time per model_dir: an advisory lock on `<model_dir>/run.lock` held while a run writes there.

The lock is `fcntl.flock` on the file, so the operating system releases it when the process ends, however it
ends (a killed run never leaves a stale lock). The file holds who took it last (pid, host, command, time), which
a second run names when it stops. The file stays after release: deleting it would let two runs lock two
different files of the same name.

Examples:

>>> with ModelDirLock("out/mrpc"):
...     train()  # a second `ModelDirLock("out/mrpc")` meanwhile raises ModelDirInUseError naming this process
"""

import fcntl
import json
import os
import socket
import sys
import time

from official_bert import owned_files

LOCK_FILE = "run.lock"


class ModelDirInUseError(FileExistsError):
    """Another run holds the model_dir's lock (the message names it)."""


def _holder_description(path):
    try:
        with open(path, encoding="utf-8") as f:
            holder = json.loads(f.read() or "{}")
    except (OSError, ValueError):
        holder = {}
    if not holder:
        return "another process"
    return (f"pid {holder.get('pid')} on {holder.get('host')}, since {holder.get('started')}: "
            f"{holder.get('command')}")


class ModelDirLock:
    """Holds `<model_dir>/run.lock` from `__enter__` to `__exit__` (creating the model_dir).

    Args:
        model_dir: the run directory.

    Raises (on enter):
        ModelDirInUseError: another process holds it; the message names that process and the lock file.
    """

    def __init__(self, model_dir):
        self.model_dir = model_dir
        self.path = os.path.join(model_dir, LOCK_FILE)
        self._fd = None

    def __enter__(self):
        owned_files.claim(self.model_dir, LOCK_FILE)  # recorded before it is made (creates the model_dir)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise ModelDirInUseError(
                f"{self.model_dir} is in use by another run ({_holder_description(self.path)}); wait for it to "
                f"finish or use another --model_dir (lock: {self.path})") from None
        holder = {"pid": os.getpid(), "host": socket.gethostname(), "command": " ".join(sys.argv),
                  "started": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(holder) + "\n").encode("utf-8"), 0)
        self._fd = fd
        return self

    def __exit__(self, *exc_info):
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
        return False
