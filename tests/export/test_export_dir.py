"""An export writes only into an export base directory of its own (or one holding numbered versions), and removes
what a killed export left there."""

import os
import socket
import subprocess
import sys

import pytest

from export import saved_model
from official_bert import owned_files
from official_bert.owned_files import ForeignFilesError


def test_an_export_dir_holding_a_users_files_is_refused_before_any_work(tmp_path):
    (tmp_path / "thesis.txt").write_text("mine")
    (tmp_path / "3").mkdir()  # another exporter's version: a serving base path may hold those
    with pytest.raises(ForeignFilesError, match=r"--export_dir=.* holds files official-bert did not write "
                                                r"\(thesis.txt\)"):
        saved_model.export(str(tmp_path / "no_such_model_dir"), str(tmp_path))
    assert sorted(os.listdir(tmp_path)) == ["3", "thesis.txt"]


def test_a_killed_exports_staging_folder_is_removed_and_a_live_ones_kept(tmp_path, capsys):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True).stdout.strip()
    host = socket.gethostname()
    killed = owned_files.claim(str(tmp_path), f".tmp-2-{host}-{dead}-abcd1234")
    os.makedirs(os.path.join(killed, "variables"))
    running = owned_files.claim(str(tmp_path), f".tmp-3-{host}-{os.getpid()}-abcd1234")
    os.makedirs(running)
    assert saved_model.remove_dead_staging(str(tmp_path)) == [os.path.basename(killed)]
    assert not os.path.exists(killed) and os.path.isdir(running)
    assert f"removed {killed}, left by an export that was killed (process {dead})" in capsys.readouterr().err
