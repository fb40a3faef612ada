"""A run's process set-up: the strategies it builds by name."""

import pytest

from official_bert.run_process import STRATEGIES, get_strategy


def test_an_unknown_strategy_is_an_error_naming_the_known_ones():
    with pytest.raises(ValueError, match="distribution_strategy must be one of " + ", ".join(STRATEGIES)):
        get_strategy("horovod")


def test_one_device_runs_on_one_replica():
    assert get_strategy("one_device").num_replicas_in_sync == 1


def test_one_device_without_a_gpu_is_the_default_strategy():
    """On the CPU alone a `OneDeviceStrategy` only adds a per-device iterator and a replica context to each step."""
    import tensorflow as tf

    if tf.config.list_logical_devices("GPU"):
        pytest.skip("this machine has a GPU: one_device is a OneDeviceStrategy on it")
    assert get_strategy("one_device") is tf.distribute.get_strategy()
