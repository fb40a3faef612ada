"""benchmarks.resumable: a resumed benchmark run must be the same run, except for the flags it may change."""

import argparse

import pytest

from benchmarks.resumable import check_same_flags


def test_a_resumed_run_must_pass_the_same_flags_except_the_ignored_ones(tmp_path):
    check_same_flags(str(tmp_path), argparse.Namespace(out="a", seeds=3, tasks="MRPC"), ignore=("out",))
    check_same_flags(str(tmp_path), argparse.Namespace(out="b", seeds=3, tasks="MRPC"), ignore=("out",))
    with pytest.raises(ValueError, match="--tasks was 'MRPC' in the run being resumed, now 'SST-2'"):
        check_same_flags(str(tmp_path), argparse.Namespace(out="a", seeds=3, tasks="SST-2"), ignore=("out",))


def test_a_flag_ignored_now_is_not_compared_with_the_recorded_run(tmp_path):
    """A flag recorded by the first run but ignored by the resumed one (e.g. more seeds) does not stop it."""
    check_same_flags(str(tmp_path), argparse.Namespace(out="a", seeds=3, tasks="MRPC"), ignore=("out",))
    check_same_flags(str(tmp_path), argparse.Namespace(out="a", seeds=5, tasks="MRPC"), ignore=("out", "seeds"))
    with pytest.raises(ValueError, match="--seeds"):
        check_same_flags(str(tmp_path), argparse.Namespace(out="a", seeds=5, tasks="MRPC"), ignore=("out",))


def test_keep_checkpoints_may_change_between_a_run_and_its_resume(tmp_path):
    """--keep_checkpoints says what happens after the run, not what the run is."""
    check_same_flags(str(tmp_path), argparse.Namespace(out="a", keep_checkpoints=True, tasks="MRPC"))
    check_same_flags(str(tmp_path), argparse.Namespace(out="a", keep_checkpoints=False, tasks="MRPC"))
    with pytest.raises(ValueError, match="--tasks"):
        check_same_flags(str(tmp_path), argparse.Namespace(out="a", keep_checkpoints=False, tasks="SST-2"))
