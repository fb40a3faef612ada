"""Two exports to one export_dir at once: the one that renames second gets a clear error and leaves nothing behind."""

import os
import shutil
import tempfile

import pytest

import export.warmup
from export.saved_model import build_module, save
from export.warmup import WARMUP_FILE, read_warmup_file
from official_bert.owned_files import RECORD_FILE


@pytest.fixture(scope="module")
def module(classifier_dir):
    with tempfile.TemporaryDirectory() as staging_dir:
        yield build_module(str(classifier_dir), staging_dir)


def test_the_loser_of_a_race_for_a_version_says_so_and_cleans_up(module, tmp_path, monkeypatch):
    base = tmp_path / "mrpc"
    target = str(base / "1")
    write_warmup_file = export.warmup.write_warmup_file

    def other_export_finishes_first(path, requests):
        """This export has chosen version 1 and staged it; before it renames, another export (with the same
        files) renames its own staged version 1 into place."""
        write_warmup_file(path, requests)
        staging = os.path.dirname(os.path.dirname(path))
        shutil.copytree(staging, str(base / ".tmp-1-other"))
        os.rename(str(base / ".tmp-1-other"), target)

    monkeypatch.setattr(export.warmup, "write_warmup_file", other_export_finishes_first)
    with pytest.raises(FileExistsError) as error:
        save(module, str(base))
    assert str(error.value) == (f"{target} was written by another export while this one ran (versions are never "
                                "overwritten); this export was discarded: run it again to export the next version")
    assert [n for n in os.listdir(base) if n != RECORD_FILE] == ["1"]  # no temporary directory left behind
    # The winner's export is whole.
    assert (base / "1" / "saved_model.pb").is_file() and (base / "1" / "variables" / "variables.index").is_file()
    assert sorted(os.listdir(base / "1" / "assets")) == ["labels.txt", "vocab.txt"]
    assert len(read_warmup_file(base / "1" / "assets.extra" / WARMUP_FILE)) == 3


def test_an_interrupted_export_leaves_no_temporary_directory(module, tmp_path, monkeypatch):
    def interrupted(path, requests):
        raise KeyboardInterrupt

    base = tmp_path / "mrpc"
    monkeypatch.setattr(export.warmup, "write_warmup_file", interrupted)
    with pytest.raises(KeyboardInterrupt):
        save(module, str(base))
    assert [n for n in os.listdir(base) if n != RECORD_FILE] == []
