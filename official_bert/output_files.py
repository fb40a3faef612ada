"""Output files an entry point names by a flag: their folder made, and a file that cannot be written one line that
names the flag, what is in the way and why, never a traceback:

    --output_file=/proc/version cannot be written: Input/output error
    --output_file=out/notes.txt/features.jsonl cannot be written: out/notes.txt is a file, not a folder

An existing file is never written over unless the command is given `--overwrite`, and an input never.
`prepare_output_file` runs before the work (a conversion or an extraction that takes minutes), `writing` around the
writes themselves (a file system that accepts the file but not its bytes). Local paths only; a path with a scheme
(`gs://...`) is left to the writer. No TensorFlow here.

Examples:

>>> prepare_output_file("output_file", "out/features.jsonl")  # makes out/
>>> with writing("output_file", "out/features.jsonl"), open("out/features.jsonl", "w") as f:
...     f.write("...")
"""

import contextlib
import os

from official_bert.text_files import is_remote


def nearest_existing(path):
    """`path` if it exists, else its nearest existing ancestor (where it would be created); absolute."""
    path = os.path.abspath(path)
    while not os.path.exists(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    return path


def folder_in_the_way(folder):
    """The nearest existing ancestor of `folder` (or `folder` itself) when it is not a folder, else None."""
    existing = nearest_existing(folder)
    return existing if os.path.exists(existing) and not os.path.isdir(existing) else None


def _reason(error, path):
    """Why `error` (an OSError on `path` or its folder) stopped the write, in words."""
    folder = os.path.dirname(os.path.abspath(path))
    in_the_way = folder_in_the_way(folder)
    if in_the_way:
        return f"{in_the_way} is a file, not a folder"
    if isinstance(error, IsADirectoryError) or os.path.isdir(path):
        return "it is a folder; name a file"
    reason = error.strerror or str(error)
    named = os.path.abspath(str(error.filename)) if error.filename else None
    if named and os.path.abspath(path).startswith(named + os.sep):
        return f"cannot make the folder {error.filename} ({reason})"
    if named and named != os.path.abspath(path):
        return f"{error.filename}: {reason}"
    if isinstance(error, FileNotFoundError) and os.path.isdir(folder):
        return f"{reason} (the folder {folder} takes no new files)"
    return reason


def give_default_permissions(path):
    """Gives `path` the mode `open()` gives a new file (`os.mkdir` a new folder): 0o666 (0o777) less the umask.

    Writers that go through a private temporary file or folder (safetensors' `save_file`, `tempfile.mkdtemp`) leave
    0o600 (0o700), which a server or a colleague running as another user cannot read.

    Args:
        path: a local file or folder this process wrote.
    """
    umask = os.umask(0)  # reading the umask means setting it: put it back at once
    os.umask(umask)
    os.chmod(path, (0o777 if os.path.isdir(path) else 0o666) & ~umask)


def cannot_write(flag, path, error) -> ValueError:
    """The one-line error for `--flag=path`, from the OSError that stopped it."""
    return ValueError(f"--{flag}={path} cannot be written: {_reason(error, path)}")


@contextlib.contextmanager
def writing(flag, path):
    """Around writing `path`: an OSError becomes `cannot_write`'s ValueError naming the flag.

    Args:
        flag: the flag's name, without dashes ("output_file").
        path: its value.
    """
    try:
        yield
    except OSError as error:
        raise cannot_write(flag, path, error) from None


def prepare_output_file(flag, path, overwrite=False, inputs=()):
    """Makes the folder of `path` and checks that the file may and can be written there, before any work is done:
    an existing file is refused unless `overwrite` (nothing of the user's is written over unasked), an input file
    always; a new file is created and removed to see that it can be.

    Args:
        flag: the flag's name, without dashes ("output_file").
        path: its value, a local path (a `gs://` path is left to the writer).
        overwrite: whether an existing file at `path` may be replaced (the command's `--overwrite`).
        inputs: (flag name, path) of the command's input files, which the output may never be.

    Raises:
        ValueError: `--flag=path cannot be written: <why>`, or names the file in the way.
    """
    if is_remote(path):
        return
    for input_flag, input_path in inputs:
        if os.path.exists(path) and os.path.exists(input_path) and os.path.samefile(path, input_path):
            raise ValueError(f"--{flag}={path} is the input file (--{input_flag}); name another file")
    if os.path.isfile(path) and not overwrite:
        raise ValueError(f"--{flag}={path} already exists; name a new file, or pass --overwrite to replace it")
    with writing(flag, path):
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        if os.path.exists(path):
            if os.path.isdir(path):
                raise IsADirectoryError(path)
            with open(path, "ab"):  # may we write it? (appends nothing, truncates nothing)
                pass
        else:
            with open(path, "xb"):
                pass
            os.remove(path)
