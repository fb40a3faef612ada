"""Training core: strategies, mixed precision, exact resume after an interruption, progress logging."""

import dataclasses
import json
import logging

import keras
import numpy as np
import pytest
import tensorflow as tf

from official_bert import BertEncoder
from official_bert.models.classifier import BertClassifier
from official_bert.optimization import create_optimizer
from official_bert.training import fit_resumable, set_mixed_precision

pytestmark = pytest.mark.slow


def test_unknown_settings_are_rejected():
    with pytest.raises(ValueError, match="mixed_precision"):
        set_mixed_precision("int8")


def _run(tiny_config, model_dir, total_steps, verbose=0, loss_scale=None, steps_per_execution=1, summary_steps=100,
         jit_compile=True):
    """A tiny classifier (`tiny_config` with 1 layer: a resume does not depend on depth) trained to `total_steps`,
    resumed from `model_dir`; `loss_scale`: float16 with a loss-scale optimizer starting at that scale."""
    rng = np.random.default_rng(0)
    ids = rng.integers(1, tiny_config.vocab_size, (48, 10)).astype("int32")
    labels = rng.integers(0, 2, 48).astype("int32")

    def make_dataset(skip):
        features = {"input_word_ids": ids, "input_mask": np.ones_like(ids), "input_type_ids": np.zeros_like(ids)}
        dataset = tf.data.Dataset.from_tensor_slices((features, labels))
        return dataset.shuffle(48, seed=1).repeat().batch(8, drop_remainder=True).skip(skip)

    keras.utils.set_random_seed(3)
    optimizer = create_optimizer(1e-3, 10, 2)
    if loss_scale:
        set_mixed_precision("float16")
        optimizer = keras.optimizers.LossScaleOptimizer(optimizer, initial_scale=loss_scale)
    try:
        model = BertClassifier(BertEncoder(dataclasses.replace(tiny_config, num_hidden_layers=1)), 2)
    finally:
        set_mixed_precision(None)
    model.compile(optimizer=optimizer, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  jit_compile=jit_compile, steps_per_execution=steps_per_execution)
    fit_resumable(model, make_dataset, total_steps, str(model_dir), 8, checkpoint_steps=3, verbose=verbose,
                  summary_steps=summary_steps)
    return model


def test_interrupted_run_resumes_to_the_same_weights_and_progress_is_logged_as_lines(tiny_config, tmp_path, caplog):
    """One unbroken run (its progress lines checked too) against the same run stopped after step 5 and resumed."""
    with caplog.at_level(logging.INFO, logger="official_bert.training"):
        unbroken = _run(tiny_config, tmp_path / "unbroken", 25, verbose=1)  # pytest's captured stdout: no terminal
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("step ")]
    assert [line.split()[1] for line in lines] == ["20/25", "25/25"]
    assert all("loss" in line for line in lines)

    _run(tiny_config, tmp_path / "resumed", 5)  # stopped after step 5 (checkpoints at 3 and 5)
    resumed = _run(tiny_config, tmp_path / "resumed", 25)  # a fresh process would rebuild the same way
    assert int(resumed.optimizer.iterations.numpy()) == 25
    for a, b in zip(unbroken.weights, resumed.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=a.path)
    # A finished run restarted does nothing more.
    again = _run(tiny_config, tmp_path / "resumed", 25)
    assert int(again.optimizer.iterations.numpy()) == 25


def test_several_steps_per_call_train_as_one_per_call_and_stop_at_the_runs_end(tiny_config, tmp_path, caplog):
    """4 steps per call: a run of 5 steps (one short call) resumed to 25 ends at step 25 with the weights of one
    step per call; checkpoints (every 3), progress lines (every 20) and TensorBoard points (every 4) come after the
    calls that reach a multiple, at the run's step (a resumed run continues its curves)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    one_per_call = _run(tiny_config, tmp_path / "one", 25, jit_compile=False)
    _run(tiny_config, tmp_path / "four", 5, steps_per_execution=4, summary_steps=4, jit_compile=False)
    assert [p.name for p in (tmp_path / "four" / "checkpoints").glob("*.index")] == ["ckpt-5.index"]
    with caplog.at_level(logging.INFO, logger="official_bert.training"):
        four_per_call = _run(tiny_config, tmp_path / "four", 25, verbose=1, steps_per_execution=4, summary_steps=4,
                             jit_compile=False)
    assert int(four_per_call.optimizer.iterations.numpy()) == 25
    for a, b in zip(one_per_call.weights, four_per_call.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=a.path)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("step ")]
    assert [line.split()[1] for line in lines] == ["21/25", "25/25"]  # calls end at 9, 13, 17, 21 and 25
    results = json.loads((tmp_path / "four" / "train_results.json").read_text())
    assert results["steps"] == 20 and results["steady_steps"] == 16  # the first call (4 steps) is left out
    assert (results["from_step"], results["total_steps"]) == (5, 25)  # this invocation's part of the run

    events = EventAccumulator(str(tmp_path / "four" / "logs" / "train"), size_guidance={"tensors": 0})
    events.Reload()
    assert set(events.Tags()["tensors"]) >= {"batch_loss", "batch_examples_per_second", "learning_rate"}
    assert [e.step for e in events.Tensors("batch_loss")] == [4, 5, 9, 13, 17, 21, 25]
    rates = [float(tf.make_ndarray(e.tensor_proto)) for e in events.Tensors("learning_rate")]
    np.testing.assert_allclose(rates, [1e-3 * 6 / 8, 1e-3 * 5 / 8, 1e-3 / 8, 0, 0, 0, 0])  # create_optimizer(1e-3, 10, 2)


def test_a_float16_run_resumes_past_the_steps_its_loss_scale_skipped(tiny_config, tmp_path):
    """The loss-scale optimizer does not count the steps it skips on overflow (a scale of 2**24 overflows the
    first four steps): the run still ends after its 12 steps, and a resume skips every batch consumed before."""
    unbroken = _run(tiny_config, tmp_path / "unbroken", 12, loss_scale=2.0 ** 24, jit_compile=False)
    assert 0 < int(unbroken.optimizer.iterations.numpy()) < 12  # some steps were skipped, not all
    _run(tiny_config, tmp_path / "resumed", 6, loss_scale=2.0 ** 24, jit_compile=False)
    resumed = _run(tiny_config, tmp_path / "resumed", 12, loss_scale=2.0 ** 24, jit_compile=False)
    for a, b in zip(unbroken.weights, resumed.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=a.path)
    assert sorted(p.name for p in (tmp_path / "resumed" / "checkpoints").iterdir())[-1] == "ckpt-12.index"
    assert fit_resumable(resumed, None, 12, str(tmp_path / "resumed"), 8) is None  # complete: nothing more runs


def test_a_killed_runs_checkpoint_temporaries_are_removed_and_named(tmp_path, caplog):
    from official_bert.training import remove_dead_checkpoint_temps

    checkpoints = tmp_path / "checkpoints"
    (checkpoints / "ckpt-8_temp").mkdir(parents=True)
    (checkpoints / "ckpt-8_temp" / "part-00000-of-00001.data-00000-of-00001").write_text("half")
    (checkpoints / "ckpt-4.index").write_text("kept")
    with caplog.at_level(logging.INFO, logger="official_bert.training"):
        assert remove_dead_checkpoint_temps(str(checkpoints)) == ["ckpt-8_temp"]
    assert [p.name for p in checkpoints.iterdir()] == ["ckpt-4.index"]
    assert "Removed ckpt-8_temp" in caplog.text and "killed while writing a checkpoint" in caplog.text


def test_ctrl_c_is_caught_only_while_training(tiny_config, tmp_path):
    import signal

    before = signal.getsignal(signal.SIGINT)

    class Fails(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            assert signal.getsignal(signal.SIGINT) is not before  # caught during training
            raise RuntimeError("a failing step")

    rng = np.random.default_rng(0)
    ids = rng.integers(1, tiny_config.vocab_size, (8, 10)).astype("int32")
    features = {"input_word_ids": ids, "input_mask": np.ones_like(ids), "input_type_ids": np.zeros_like(ids)}
    model = BertClassifier(BertEncoder(tiny_config), 2)
    model.compile(optimizer=create_optimizer(1e-3, 4, 1),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    dataset = tf.data.Dataset.from_tensor_slices((features, np.zeros(8, "int32"))).repeat().batch(4)
    with pytest.raises(RuntimeError, match="a failing step"):
        fit_resumable(model, lambda skip: dataset.skip(skip), 4, str(tmp_path), 4, callbacks=[Fails()], verbose=0)
    assert signal.getsignal(signal.SIGINT) is before  # restored although fit raised


def test_examples_per_second_is_measured_over_the_given_steps(monkeypatch):
    """A callback that logs every 5 steps passes `every=5`: each of its lines gets the rate of its own 5 steps
    (with the default 10, two lines in a row showed the same figure)."""
    from official_bert import training

    now = [0.0]
    monkeypatch.setattr(training.time, "perf_counter", lambda: now[0])
    throughput = training.ThroughputLogger(batch_size=4, steps=15, every=5)
    rates = []
    for batch, seconds in enumerate([1.0] * 5 + [0.5] * 5 + [0.25] * 5):
        throughput.on_train_batch_begin(batch)
        now[0] += seconds
        logs = {}
        throughput.on_train_batch_end(batch, logs)
        rates.append(logs.get("examples_per_second"))
    # 5 steps of 4 examples in 5 s, then in 2.5 s, then in 1.25 s
    assert rates == [None] * 4 + [4.0] * 5 + [8.0] * 5 + [16.0]
