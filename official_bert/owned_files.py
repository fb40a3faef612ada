"""What official-bert wrote in a directory, recorded before it is written, so that nothing else is ever deleted.

Every directory official-bert writes into (a model_dir, an `--output_dir`, an export base directory) holds
`.official_bert_files.json`: the names of the entries official-bert made there, each recorded *before* it is
made, so a run killed at any moment leaves nothing unrecorded. A recorded folder is ours, but a user may add a
file inside it (a model card in `encoder/`, notes in `logs/`): `_FOLDER_CONTENTS` names what official-bert writes
in each of its folders (any name in `predictions/`, whose files are named after the user's input files), and a
recorded folder not in that table is ours whole. The rules every writer keeps:

- `check_writable_here(directory, flag)`: before a run writes anything, a directory that holds an entry it did
  not record is refused, naming a few of those entries (`ForeignFilesError`). An empty or missing directory is
  fine.
- `claim(directory, name)`: records `name` and returns its path; call it before creating the entry.
- `remove_ours(directory)`: deletes the recorded entries (for `--overwrite`); a symbolic link is removed, never
  followed, and everything else stays. A recorded folder holding a file official-bert does not write there is
  refused before anything is deleted, naming a few of those files (`ForeignFilesError`).

A model_dir written by an official-bert older than this record (a task.json, no record) is adopted once: the
entries with the names those versions wrote are recorded as ours; anything else there stays foreign.

Examples:

>>> check_writable_here("out/mrpc", "--model_dir")  # ForeignFilesError if out/mrpc holds a file we did not write
>>> path = claim("out/mrpc", "eval_results.json")
"""

import fnmatch
import json
import logging
import os
import shutil

from official_bert.output_files import folder_in_the_way

logger = logging.getLogger(__name__)

RECORD_FILE = ".official_bert_files.json"
# What official-bert versions before RECORD_FILE wrote in a model_dir (only to adopt such a model_dir).
_LEGACY_MODEL_DIR_NAMES = frozenset([
    "task.json", "bert_config.json", "vocab.txt", "vocab.json", "merges.txt", "spiece.model", "run.json",
    "run.lock", "checkpoints", "logs", "train_results.json", "model.weights.h5", "encoder", "pretrainer",
    "eval_results.json", "predictions", "predictions.json", "nbest_predictions.json", "null_odds.json",
    "sparsity.json", "importance.json"])
_SHOWN = 5  # foreign entries named in an error
# The files save_encoder and save_pretrainer write in a Hugging Face directory (`checkpoints/loading.py`
# write_hf_directory, `model_dir.write_tokenizer_config`).
_HF_FILES = ("config.json", "model.safetensors", "tokenizer_config.json", "vocab.txt", "vocab.json", "merges.txt",
             "spiece.model")
# What official-bert writes inside the folders it records: recorded folder -> patterns (fnmatch, `*` spanning
# sub-folders) of the paths of the files in it. `remove_ours` deletes such a folder only when every file matches.
_FOLDER_CONTENTS = {
    # TensorFlow's CheckpointManager: `checkpoint` (written through `checkpoint.tmp<hex>`), `ckpt-<n>.index` and
    # `.data-*`, and `ckpt-<n>_temp/` while a checkpoint is being written.
    "checkpoints": ("checkpoint", "checkpoint.tmp*", "ckpt-*"),
    "logs": ("*events.out.tfevents.*",),  # TensorBoard's, in logs/train/ (training.StepSummaries)
    "encoder": _HF_FILES,
    "pretrainer": _HF_FILES,
    "predictions": ("*",),  # named after the user's input files (tasks/base.predictions_path): any name is ours
}


class ForeignFilesError(ValueError):
    """A directory a run would write into holds entries official-bert did not write (the message names them)."""


def _record_path(directory):
    return os.path.join(directory, RECORD_FILE)


def recorded(directory):
    """The names official-bert recorded in `directory` (an empty set when it has no record)."""
    try:
        with open(_record_path(directory), encoding="utf-8") as f:
            return set(json.load(f).get("entries", []))
    except FileNotFoundError:
        return set()
    except ValueError as error:
        raise ValueError(f"{_record_path(directory)}: not a record of official-bert's ({error}); delete it only "
                         "if you know which files in that directory are official-bert's") from None


def _write_record(directory, names):
    path = _record_path(directory)
    staging = path + ".tmp"
    with open(staging, "w", encoding="utf-8") as f:
        json.dump({"written_by": "official-bert", "entries": sorted(names)}, f, indent=1)
        f.write("\n")
    os.replace(staging, path)  # atomic: a reader sees the old record or the new one


def claim(directory, name):
    """Records the entry `name` of `directory` as official-bert's (creating the directory) and returns its path.

    Call it before creating the entry. `name` is one entry (a file or folder name), not a path inside one.
    """
    if not name or os.sep in name or name in (".", ".."):
        raise ValueError(f"claim takes one entry of {directory}, got {name!r}")
    os.makedirs(directory, exist_ok=True)
    names = recorded(directory)
    if name not in names:
        _write_record(directory, names | {name})
    return os.path.join(directory, name)


def forget(directory, name):
    """Drops `name` from the record (an entry that is gone, e.g. a staging folder renamed into place)."""
    names = recorded(directory)
    if name in names:
        _write_record(directory, names - {name})


def _adopt_legacy_model_dir(directory, entries):
    """A model_dir of an older official-bert (task.json, no record): records its entries with our names."""
    if "task.json" not in entries or os.path.isfile(_record_path(directory)):
        return
    ours = sorted(name for name in entries if name in _LEGACY_MODEL_DIR_NAMES)
    _write_record(directory, set(ours))
    logger.info("%s: a model_dir of an older official-bert; recorded its files as official-bert's: %s", directory,
                ", ".join(ours))


def foreign_entries(directory, allowed=lambda name: False):
    """The entries of `directory` that official-bert did not record (sorted), besides those `allowed(name)`
    accepts."""
    if not os.path.isdir(directory):
        return []
    entries = os.listdir(directory)
    _adopt_legacy_model_dir(directory, entries)
    ours = recorded(directory) | {RECORD_FILE, RECORD_FILE + ".tmp"}
    return sorted(name for name in entries if name not in ours and not allowed(name))


def check_writable_here(directory, flag, allowed=lambda name: False):
    """Refuses, before anything is written, a directory that holds entries official-bert did not write.

    Args:
        directory: the directory a run or export writes into (missing or empty: fine).
        flag: the flag that named it, for the message (e.g. "--model_dir").
        allowed: `f(name) -> bool` for entries that may be there although not ours (e.g. an export base
            directory's numbered versions).

    Raises:
        ForeignFilesError: naming up to five such entries and the way out.
        ValueError: `directory`, or the nearest existing directory above it, is a file.
    """
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise ValueError(f"{flag}={directory} is a file, not a directory")
    in_the_way = folder_in_the_way(os.path.dirname(os.path.abspath(directory)))
    if in_the_way:
        raise ValueError(f"{flag}={directory} cannot be made: {in_the_way} is a file, not a directory")
    foreign = foreign_entries(directory, allowed)
    if foreign:
        raise ForeignFilesError(f"{flag}={directory} holds files official-bert did not write ({_listed(foreign)}); "
                                f"it writes only into an empty directory or one of its own: pass another {flag}, or "
                                "move those files")


def _listed(names):
    """The first few of `names`, and how many more."""
    return ", ".join(names[:_SHOWN]) + (f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else "")


def _files_not_ours(directory, names):
    """The files in the recorded folders `names` of `directory` that official-bert does not write there (sorted
    paths relative to `directory`; `_FOLDER_CONTENTS`). Links are looked at by their name, never followed."""
    foreign = []
    for name in sorted(names):
        folder, patterns = os.path.join(directory, name), _FOLDER_CONTENTS.get(name)
        if patterns is None or os.path.islink(folder) or not os.path.isdir(folder):
            continue  # ours whole, or a file or link that is removed alone
        for root, folders, files in os.walk(folder):
            links = [entry for entry in folders if os.path.islink(os.path.join(root, entry))]
            for entry in files + links:
                path = os.path.relpath(os.path.join(root, entry), folder)
                if not any(fnmatch.fnmatchcase(path, pattern) for pattern in patterns):
                    foreign.append(os.path.join(name, path))
    return sorted(foreign)


def remove_entry(path):
    """Removes a file, a link (never what it points to) or a folder (whose links inside are removed, not
    followed)."""
    if os.path.islink(path) or not os.path.isdir(path):
        os.remove(path)
    else:
        shutil.rmtree(path)


def remove_ours(directory, keep=()):
    """Deletes the entries official-bert recorded in `directory`, except `keep`; returns their names.

    Everything official-bert did not record stays, and so does the record of what is kept.

    Raises:
        ForeignFilesError: a recorded folder holds a file official-bert does not write there (`_files_not_ours`);
            nothing is deleted.
    """
    names = recorded(directory)
    foreign = _files_not_ours(directory, names - set(keep))
    if foreign:
        raise ForeignFilesError(f"{directory} holds files official-bert did not write inside its own folders "
                                f"({_listed(foreign)}); nothing was deleted: move them out of {directory} and run "
                                "again")
    removed = []
    for name in sorted(names - set(keep)):
        path = os.path.join(directory, name)
        if os.path.lexists(path):
            remove_entry(path)
            removed.append(name)
    _write_record(directory, names & set(keep))
    return removed
