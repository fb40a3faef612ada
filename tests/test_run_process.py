"""A run's process set-up: the strategies it builds by name."""

import pytest

from official_bert.run_process import STRATEGIES, get_strategy


def test_an_unknown_strategy_is_an_error_naming_the_known_ones():
    with pytest.raises(ValueError, match="distribution_strategy must be one of " + ", ".join(STRATEGIES)):
        get_strategy("horovod")


def test_one_device_runs_on_one_replica():
    assert get_strategy("one_device").num_replicas_in_sync == 1
