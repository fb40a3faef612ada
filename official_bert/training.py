"""The training core every task shares: precision, `Model.fit` with XLA, checkpoints and resume.

A run is a fixed number of optimizer steps over a deterministic, repeating `tf.data` stream. Every
`checkpoint_steps` steps the model, the optimizer (with its step counter) and the dropout seed state
are written to `<model_dir>/checkpoints/`. Restarting the same command restores the latest checkpoint,
skips the batches already consumed and trains the remaining steps, so a killed run ends at the same step
with the same weights as an unbroken one.
"""

import logging
import os
import re
import signal
import sys
import threading
import time

import keras
import tensorflow as tf

from official_bert import owned_files
from official_bert.model_dir import write_json

logger = logging.getLogger(__name__)


def default_jit_compile():
    """Whether XLA is the faster default here: yes on GPUs and TPUs, no on CPU-only machines.

    Measured on CPU (benchmarks/run.py, issue 8): TF's XLA CPU backend is slower than the oneDNN graph
    kernels for BERT, both for inference and for training steps.
    """
    return bool(tf.config.list_logical_devices("GPU") or tf.config.list_logical_devices("TPU"))


def set_mixed_precision(policy=None):
    """Sets the global Keras dtype policy.

    Args:
        policy: None / "float32", "float16" (mixed_float16, with loss scaling) or "bfloat16" (mixed_bfloat16).
    """
    names = {None: "float32", "": "float32", "float32": "float32", "float16": "mixed_float16",
             "bfloat16": "mixed_bfloat16"}
    if policy not in names:
        raise ValueError(f"mixed_precision must be float16, bfloat16 or empty, got {policy!r}")
    keras.mixed_precision.set_global_policy(names[policy])


def run_step(first_step, batch, total_steps):
    """The run's step after Keras' `batch` (the index of the call's last step in this `fit`; a short last call of
    several steps is numbered as a full one) in an invocation that started at `first_step`."""
    return min(first_step + batch + 1, total_steps)


class RunStepCallback(keras.callbacks.Callback):
    """A callback that follows the run's step through `fit`, one call (of one or several steps) at a time.

    Args:
        first_step: the step this invocation starts at (after a resume); total_steps: steps of the whole run.
    """

    def __init__(self, first_step, total_steps):
        super().__init__()
        self.first_step = first_step
        self.total_steps = total_steps
        self.step = first_step  # the run's step after the last call

    def advance(self, batch):
        """Moves `self.step` past the call that ended at Keras' `batch`; returns the step before the call."""
        previous, self.step = self.step, run_step(self.first_step, batch, self.total_steps)
        return previous

    def reached_multiple(self, previous, every):
        """Whether the last call's steps, after `previous`, reached a multiple of `every`."""
        return self.step // every > previous // every

    def due(self, previous, every):
        """Whether the last call's steps, after `previous`, reached a multiple of `every` or the run's last step."""
        return self.reached_multiple(previous, every) or self.step == self.total_steps


class ThroughputLogger(RunStepCallback):
    """Adds `examples_per_second` to the logs (so the progress bar and TensorBoard show it).

    Also keeps the whole run's figures, the first call (tracing and XLA compilation) left out:
    `steady_steps`, `steady_seconds`, `steady_examples_per_second`. A call may cover several steps (Keras'
    `steps_per_execution`): each counts the steps since the previous one.

    Args:
        batch_size: global batch size.
        steps: the steps `fit` runs.
        every: steps between measurements shown in the logs.
    """

    def __init__(self, batch_size, steps, every=10):
        super().__init__(0, steps)  # counts this `fit`'s steps
        self.batch_size = batch_size
        self.every = every
        self._window_start = None
        self._window_steps = 0
        self._run_start = None
        self.steady_steps = 0
        self.steady_seconds = 0.0
        self.examples_per_second = None

    def on_train_batch_begin(self, batch, logs=None):
        if self._window_start is None:
            self._window_start = time.perf_counter()
            self._window_steps = 0

    def on_train_batch_end(self, batch, logs=None):
        now = time.perf_counter()
        previous = self.advance(batch)
        steps = self.step - previous  # the call's
        if self._run_start is None:
            self._run_start = now  # after the first (compiling) call
        else:
            self.steady_steps += steps
            self.steady_seconds = now - self._run_start
        self._window_steps += steps
        if self._window_steps >= self.every:
            self.examples_per_second = self._window_steps * self.batch_size / (now - self._window_start)
            self._window_start = None
        if logs is not None and self.examples_per_second is not None:
            logs["examples_per_second"] = self.examples_per_second

    def summary(self) -> dict:
        rate = self.steady_steps * self.batch_size / self.steady_seconds if self.steady_seconds else None
        return {"steady_steps": self.steady_steps, "steady_seconds": self.steady_seconds,
                "steady_examples_per_second": rate}


class ProgressLog(RunStepCallback):
    """Logs `step / total, loss, examples/s, time left` every `every` steps (after the call that reaches a
    multiple) and at the last: progress for runs whose output goes to a file (where Keras' progress bar is one
    endless line).

    Args:
        total_steps: steps of the whole run; first_step: the step this invocation starts at (after a resume).
        throughput: the run's `ThroughputLogger`, for examples/s.
        every: steps between lines.
    """

    def __init__(self, total_steps, first_step, throughput, every=20):
        super().__init__(first_step, total_steps)
        self.throughput = throughput
        self.every = every
        self._start = None

    def on_train_batch_end(self, batch, logs=None):
        due = self.due(self.advance(batch), self.every)
        step = self.step
        now = time.perf_counter()
        self._start = self._start or now
        if not due:
            return
        rate = self.throughput.examples_per_second
        left = (now - self._start) / batch * (self.total_steps - step) if batch > 0 else None
        logger.info("step %d/%d loss %.4f%s%s", step, self.total_steps, (logs or {}).get("loss", float("nan")),
                    f", {rate:.1f} examples/s" if rate else "", f", ~{left / 60:.1f} min left" if left else "")


class StepSummaries(RunStepCallback):
    """TensorBoard scalars in `<log_dir>/train` every `every` steps (after the call that reaches a multiple) and at
    the last, at the run's global step (a resumed run continues its curves): `batch_<name>` for each of the step's
    logs, and `learning_rate`.

    The steps in between run no TensorFlow op. (Keras' TensorBoard callback with an integer `update_freq` runs
    about five eager ops and flushes its writer after every step, and counts steps from 0 in each invocation.)

    Args:
        log_dir: the TensorBoard directory.
        first_step: the global step this invocation starts at; total_steps: steps of the whole run.
        every: steps between points.
    """

    def __init__(self, log_dir, first_step, total_steps, every=100):
        super().__init__(first_step, total_steps)
        self.log_dir = log_dir
        self.every = every
        self._writer = None

    def on_train_begin(self, logs=None):
        self._writer = tf.summary.create_file_writer(os.path.join(self.log_dir, "train"))

    def on_train_batch_end(self, batch, logs=None):
        if not self.due(self.advance(batch), self.every):
            return
        step = self.step
        scalars = {f"batch_{name}": value for name, value in (logs or {}).items() if _is_scalar(value)}
        scalars["learning_rate"] = keras.ops.convert_to_numpy(self.model.optimizer.learning_rate)
        with self._writer.as_default(step=step):
            for name, value in scalars.items():
                tf.summary.scalar(name, float(value))
        self._writer.flush()

    def on_train_end(self, logs=None):
        self._writer.close()


def _is_scalar(value):
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


class StepCheckpoint(RunStepCallback):
    """Writes a `tf.train.Checkpoint` every `every` steps and at the end of training, numbered by the run's step.

    Args:
        manager: a `tf.train.CheckpointManager` over the model, the optimizer and `steps_done`.
        steps_done: the checkpoint's int64 variable of steps run, which a resume skips (the optimizer's
            `iterations` can be fewer: a float16 loss-scale optimizer does not count the steps it skips).
        every: steps between checkpoints (with several steps per call: after the call that reaches a multiple).
        first_step: the step this invocation starts at; total_steps: steps of the whole run.
    """

    def __init__(self, manager, steps_done, every, first_step, total_steps):
        super().__init__(first_step, total_steps)
        self.manager = manager
        self.steps_done = steps_done
        self.every = every

    def _save(self):
        self.steps_done.assign(self.step)
        self.manager.save(checkpoint_number=self.step)

    def on_train_batch_end(self, batch, logs=None):
        if self.reached_multiple(self.advance(batch), self.every):
            self._save()

    def on_train_end(self, logs=None):
        latest = self.manager.latest_checkpoint
        if latest is None or not latest.endswith(f"-{self.step}"):
            self._save()


class TrainingInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped training between two steps (after the step's checkpoint, if one was due); the message says
    where and how to resume."""


class StopOnInterrupt(RunStepCallback):
    """Turns Ctrl-C (SIGINT) into a stop between two steps, so it never lands inside a checkpoint write: the step
    running finishes (with its checkpoint, when one is due: put this callback after `StepCheckpoint`), then
    `TrainingInterrupted` is raised. A second Ctrl-C stops at once. Active only in the main thread.

    Args:
        manager: the run's `tf.train.CheckpointManager` (for the message).
        first_step: the step this invocation starts at; total_steps: steps of the whole run.
    """

    def __init__(self, manager, first_step, total_steps):
        super().__init__(first_step, total_steps)
        self.manager = manager
        self._interrupted = False
        self._previous_handler = None

    def _handle(self, signum, frame):
        if self._interrupted:  # a second Ctrl-C: stop now
            raise KeyboardInterrupt
        self._interrupted = True

    def on_train_begin(self, logs=None):
        if threading.current_thread() is threading.main_thread():
            self._previous_handler = signal.signal(signal.SIGINT, self._handle)

    def on_train_end(self, logs=None):
        self.restore_handler()

    def restore_handler(self):
        """Puts the SIGINT handler in place before training back (idempotent)."""
        if self._previous_handler is not None:
            signal.signal(signal.SIGINT, self._previous_handler)
            self._previous_handler = None

    def on_train_batch_end(self, batch, logs=None):
        self.advance(batch)
        if not self._interrupted:
            return
        self.restore_handler()
        latest = self.manager.latest_checkpoint
        raise TrainingInterrupted(f"interrupted at step {self.step} of {self.total_steps}; last checkpoint: "
                                  f"{latest or 'none (the run starts over)'}; run the same command to resume")


# TensorFlow writes a checkpoint's shards into `ckpt-<n>_temp` (and names like it) and renames them when complete.
_CHECKPOINT_TEMP = re.compile(r"_temp")


def remove_dead_checkpoint_temps(checkpoint_dir):
    """Removes what a killed run left of a checkpoint it was writing (`ckpt-<n>_temp`...), and says so. Call it
    only where no other run writes (under the model_dir's lock)."""
    if not os.path.isdir(checkpoint_dir):
        return []
    removed = sorted(name for name in os.listdir(checkpoint_dir) if _CHECKPOINT_TEMP.search(name))
    for name in removed:
        owned_files.remove_entry(os.path.join(checkpoint_dir, name))
    if removed:
        logger.info("Removed %s in %s, left by a run that was killed while writing a checkpoint", ", ".join(removed),
                    checkpoint_dir)
    return removed


def _seed_states(model):
    """The dropout seed-generator states, so dropout masks continue exactly after a resume."""
    return {f"seed_{i}": v for i, v in enumerate(v for v in model.variables if "seed_generator" in v.path)}


def fit_resumable(model, make_dataset, total_steps, model_dir, batch_size, checkpoint_steps=1000,
                  max_checkpoints=1, callbacks=(), verbose=1, write_dir=None, summary_steps=100, throughput_steps=10):
    """Trains `model` (already compiled) for `total_steps` steps, resuming from `<model_dir>/checkpoints/`.

    Args:
        model: a compiled Keras model.
        make_dataset: `f(skip_batches) -> tf.data.Dataset` of training batches, an infinite deterministic stream
            that starts after `skip_batches` batches.
        total_steps: optimizer steps of the whole run.
        model_dir: run directory; checkpoints go to `<model_dir>/checkpoints`, TensorBoard logs to `<model_dir>/logs`.
        batch_size: global batch size (for examples/second).
        checkpoint_steps: steps between checkpoints.
        max_checkpoints: how many recent checkpoints to keep (the resume point is the last).
        callbacks: extra Keras callbacks.
        verbose: 1 = progress: Keras' bar on a terminal, a `ProgressLog` line every 20 steps otherwise; 0 = none.
        summary_steps: steps between TensorBoard points (`StepSummaries`).
        throughput_steps: steps over which each `examples_per_second` in the logs is measured (a callback that logs
            every n steps passes n, so each of its lines has its own).
        write_dir: where this process writes checkpoints, logs and `train_results.json` (default: `model_dir`).
            Under `MultiWorkerMirroredStrategy` the non-chief workers pass a temporary directory of their own,
            as TF recommends; every worker still resumes from `<model_dir>/checkpoints`, the chief's.
    Returns: a dict of `steps` (this invocation's: a resumed run's last part), `from_step` (where it started: 0, or
        the step it resumed at), `total_steps`, `seconds` (wall time of fit) and the `ThroughputLogger` summary;
        written to `<model_dir>/train_results.json` too. None when the run was already complete.
    """
    optimizer = model.optimizer
    steps_done = tf.Variable(0, dtype=tf.int64, trainable=False, name="steps_done")  # host-side, set when saving
    with model.distribute_strategy.scope():  # optimizer slots and restored values live on the strategy's devices
        if not optimizer.built:  # a loss-scale optimizer built twice makes new scale variables
            optimizer.build(model.trainable_variables)
        checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer, steps_done=steps_done,
                                         **_seed_states(model))
        write_dir = write_dir or model_dir
        remove_dead_checkpoint_temps(os.path.join(write_dir, "checkpoints"))
        manager = tf.train.CheckpointManager(checkpoint, owned_files.claim(write_dir, "checkpoints"),
                                             max_to_keep=max_checkpoints)
        latest = tf.train.latest_checkpoint(os.path.join(model_dir, "checkpoints"))
        if latest:
            checkpoint.restore(latest).assert_existing_objects_matched()
    # Checkpoints written before `steps_done` existed hold only the optimizer's count.
    done = int(steps_done.numpy()) or int(optimizer.iterations.numpy())
    if latest:
        logger.info("Resumed from %s (step %d)", latest, done)
    if done >= total_steps:
        logger.info("Training already complete at step %d of %d", done, total_steps)
        return None
    throughput = ThroughputLogger(batch_size, total_steps - done, every=throughput_steps)
    to_terminal = sys.stdout.isatty()
    if verbose and not to_terminal:  # a log file: plain lines instead of Keras' carriage-return progress bar
        callbacks = [ProgressLog(total_steps, done, throughput), *callbacks]
    stop_on_interrupt = StopOnInterrupt(manager, done, total_steps)
    all_callbacks = [throughput, StepCheckpoint(manager, steps_done, checkpoint_steps, done, total_steps),
                     stop_on_interrupt,
                     StepSummaries(owned_files.claim(write_dir, "logs"), done, total_steps, summary_steps), *callbacks]
    dataset = make_dataset(done)
    if isinstance(dataset, tf.data.Dataset):  # the last call of several steps stops where the run ends
        dataset = dataset.take(total_steps - done)
    elif (total_steps - done) % model.steps_per_execution:
        raise ValueError(f"{total_steps - done} steps to run are not a multiple of the {model.steps_per_execution} "
                         "steps per call over a distributed dataset: the last call would run past the end")
    start = time.perf_counter()
    try:
        history = model.fit(dataset, epochs=1, steps_per_epoch=total_steps - done,
                            callbacks=all_callbacks, shuffle=False, verbose=verbose if to_terminal else 0)
    finally:  # Keras skips on_train_end when fit raises: Ctrl-C must not stay caught after this
        stop_on_interrupt.restore_handler()
    results = {"steps": total_steps - done, "from_step": done, "total_steps": total_steps,
               "seconds": time.perf_counter() - start, "batch_size": batch_size,
               "final_loss": float(history.history["loss"][-1]), **throughput.summary()}
    write_json(owned_files.claim(write_dir, "train_results.json"), results)
    return results

