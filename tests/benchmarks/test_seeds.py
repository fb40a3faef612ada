"""benchmarks.seeds: the statistics against scipy's t-tests (Welch for the means, paired for the seeds), the
per-seed runs (skipped once they have results, started over when a killed run left no results), and the table."""

import argparse
import math
import os

import numpy as np
import pytest
from scipy import stats

from benchmarks.resumable import write_results
from benchmarks.seeds import add_seed_flags, over_seeds, print_over_seeds, spread


def test_spread_matches_scipy_t_statistics():
    rng = np.random.default_rng(0)
    ours, theirs = rng.normal(31, 2, size=5), rng.normal(37, 1, size=5)
    s = spread(ours, theirs)
    assert s["ours_mean"] == pytest.approx(ours.mean()) and s["theirs_std"] == pytest.approx(np.std(theirs, ddof=1))
    welch = stats.ttest_ind(ours, theirs, equal_var=False)
    assert s["difference"] / s["difference_se"] == pytest.approx(welch.statistic)
    paired = stats.ttest_rel(ours, theirs)
    assert s["paired_difference"] / s["paired_se"] == pytest.approx(paired.statistic)


def test_spread_of_one_seed_has_no_error_bars():
    s = spread([30.0], [35.0])
    assert s["difference"] == -5.0 and math.isnan(s["difference_se"]) and math.isnan(s["paired_se"])


def _args(*argv):
    parser = argparse.ArgumentParser()
    add_seed_flags(parser)
    return parser.parse_args(list(argv))


def _fake_run(calls):
    def run_seed(args, work):  # one side scores seed / 100, the other 0.5
        calls.append((args.seed, work))
        os.makedirs(work, exist_ok=True)
        write_results(work, {"f1": args.seed / 100}, {"f1": 0.5}, 10.0, 5.0)
    return run_seed


def test_over_seeds_runs_each_seed_once_in_its_own_directory(tmp_path, capsys):
    args = _args("--seed=3")
    assert args.seeds == 3  # several seeds by default
    calls = []
    results = over_seeds(args, str(tmp_path), _fake_run(calls))
    assert [seed for seed, _ in results] == [3, 4, 5]
    assert calls == [(s, str(tmp_path / f"seed-{s}")) for s in (3, 4, 5)]
    (tmp_path / "seed-4" / "results.json").unlink()
    (tmp_path / "seed-4" / "partial").write_text("left by a killed run")
    calls.clear()
    again = over_seeds(args, str(tmp_path), _fake_run(calls))
    assert calls == [(4, str(tmp_path / "seed-4"))] and again == results
    assert not (tmp_path / "seed-4" / "partial").exists()  # a run that cannot resume starts over

    print_over_seeds(results, ["f1", "absent"], scale=100.0)
    table = capsys.readouterr().out
    assert "Over 3 seeds (3, 4, 5)" in table and "absent" not in table
    f1 = next(line for line in table.splitlines() if line.startswith("f1"))
    assert "4.00 ± 1.00" in f1 and "50.00 ± 0.00" in f1 and "-46.00 ± 0.58" in f1 and "3.00/50.00" in f1
    assert "beyond 2 SE" in f1


def test_one_seed_runs_in_the_work_directory_and_prints_no_summary(tmp_path, capsys):
    calls = []
    results = over_seeds(_args("--seeds=1"), str(tmp_path), _fake_run(calls))
    assert calls == [(42, str(tmp_path))] and results[0][1]["ours"] == {"f1": 0.42}
    print_over_seeds(results, ["f1"])
    assert capsys.readouterr().out == ""


def test_a_seeds_table_has_each_metric_its_difference_and_the_rates(capsys):
    from benchmarks.seeds import print_seed_table

    print_seed_table([("dev f1", 0.5, 0.25)], (30.0, 20.0), (10.0, 12.5), unit="windows", digits=2)
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split() == ["dev", "f1", "0.50", "0.25", "+0.25"]
    assert lines[2].split() == ["train", "windows/s", "(steady)", "30.0", "20.0", "1.50x"]
    assert lines[3].split() == ["train", "wall", "seconds", "10.0", "12.5"]
