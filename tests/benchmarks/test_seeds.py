"""benchmarks.seed_spread's statistics against scipy's t-tests (Welch for the means, paired for the seeds)."""

import math

import numpy as np
import pytest
from scipy import stats

from benchmarks.seed_spread import spread


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
