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


class ThroughputLogger(keras.callbacks.Callback):
    """Adds `examples_per_second` to the logs (so the progress bar and TensorBoard show it).

    Also keeps the whole run's figures, the first step (tracing and XLA compilation) left out:
    `steady_steps`, `steady_seconds`, `steady_examples_per_second`.

    Args:
        batch_size: global batch size.
        every: steps between measurements shown in the logs.
    """

    def __init__(self, batch_size, every=10):
        super().__init__()
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
        if self._run_start is None:
            self._run_start = now  # after the first (compiling) step
        else:
            self.steady_steps += 1
            self.steady_seconds = now - self._run_start
        self._window_steps += 1
        if self._window_steps >= self.every:
            self.examples_per_second = self._window_steps * self.batch_size / (now - self._window_start)
            self._window_start = None
        if logs is not None and self.examples_per_second is not None:
            logs["examples_per_second"] = self.examples_per_second

    def summary(self) -> dict:
        rate = self.steady_steps * self.batch_size / self.steady_seconds if self.steady_seconds else None
        return {"steady_steps": self.steady_steps, "steady_seconds": self.steady_seconds,
                "steady_examples_per_second": rate}


class ProgressLog(keras.callbacks.Callback):
    """Logs `step / total, loss, examples/s, time left` every `every` steps: progress for runs whose output
    goes to a file (where Keras' progress bar is one endless line).

    Args:
        total_steps: steps of the whole run; first_step: the step this invocation starts at (after a resume).
        throughput: the run's `ThroughputLogger`, for examples/s.
        every: steps between lines.
    """

    def __init__(self, total_steps, first_step, throughput, every=20):
        super().__init__()
        self.total_steps = total_steps
        self.step = first_step
        self.throughput = throughput
        self.every = every
        self._start = None

    def on_train_batch_end(self, batch, logs=None):
        self.step += 1
        now = time.perf_counter()
        self._start = self._start or now
        if self.step % self.every and self.step != self.total_steps:
            return
        rate = self.throughput.examples_per_second
        done_here = batch + 1
        left = (now - self._start) / max(done_here - 1, 1) * (self.total_steps - self.step) if done_here > 1 else None
        logger.info("step %d/%d loss %.4f%s%s", self.step, self.total_steps, (logs or {}).get("loss", float("nan")),
                    f", {rate:.1f} examples/s" if rate else "", f", ~{left / 60:.1f} min left" if left else "")


class StepCheckpoint(keras.callbacks.Callback):
    """Writes a `tf.train.Checkpoint` every `every` steps and at the end of training.

    Args:
        manager: a `tf.train.CheckpointManager` over the model and optimizer.
        optimizer: the optimizer, whose `iterations` is the global step.
        every: steps between checkpoints.
    """

    def __init__(self, manager, optimizer, every):
        super().__init__()
        self.manager = manager
        self.optimizer = optimizer
        self.every = every

    def _step(self):
        return int(self.optimizer.iterations.numpy())

    def on_train_batch_end(self, batch, logs=None):
        step = self._step()
        if step % self.every == 0:
            self.manager.save(checkpoint_number=step)

    def on_train_end(self, logs=None):
        step = self._step()
        if self.manager.latest_checkpoint is None or not self.manager.latest_checkpoint.endswith(f"-{step}"):
            self.manager.save(checkpoint_number=step)


class TrainingInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped training between two steps (after the step's checkpoint, if one was due); the message says
    where and how to resume."""


class StopOnInterrupt(keras.callbacks.Callback):
    """Turns Ctrl-C (SIGINT) into a stop between two steps, so it never lands inside a checkpoint write: the step
    running finishes (with its checkpoint, when one is due: put this callback after `StepCheckpoint`), then
    `TrainingInterrupted` is raised. A second Ctrl-C stops at once. Active only in the main thread.

    Args:
        manager: the run's `tf.train.CheckpointManager` (for the message).
        optimizer: the optimizer, whose `iterations` is the global step.
        total_steps: steps of the whole run.
    """

    def __init__(self, manager, optimizer, total_steps):
        super().__init__()
        self.manager = manager
        self.optimizer = optimizer
        self.total_steps = total_steps
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
        if not self._interrupted:
            return
        self.restore_handler()
        step = int(self.optimizer.iterations.numpy())
        latest = self.manager.latest_checkpoint
        raise TrainingInterrupted(f"interrupted at step {step} of {self.total_steps}; last checkpoint: "
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
                  max_checkpoints=1, callbacks=(), verbose=1, write_dir=None):
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
        write_dir: where this process writes checkpoints, logs and `train_results.json` (default: `model_dir`).
            Under `MultiWorkerMirroredStrategy` the non-chief workers pass a temporary directory of their own,
            as TF recommends; every worker still resumes from `<model_dir>/checkpoints`, the chief's.
    Returns: a dict of `steps` (this invocation), `seconds` (wall time of fit) and the `ThroughputLogger`
        summary; written to `<model_dir>/train_results.json` too. None when the run was already complete.
    """
    optimizer = model.optimizer
    with model.distribute_strategy.scope():  # optimizer slots and restored values live on the strategy's devices
        optimizer.build(model.trainable_variables)
        checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer, **_seed_states(model))
        write_dir = write_dir or model_dir
        remove_dead_checkpoint_temps(os.path.join(write_dir, "checkpoints"))
        manager = tf.train.CheckpointManager(checkpoint, owned_files.claim(write_dir, "checkpoints"),
                                             max_to_keep=max_checkpoints)
        latest = tf.train.latest_checkpoint(os.path.join(model_dir, "checkpoints"))
        if latest:
            checkpoint.restore(latest).assert_existing_objects_matched()
            logger.info("Resumed from %s (step %d)", latest, int(optimizer.iterations.numpy()))
    done = int(optimizer.iterations.numpy())
    if done >= total_steps:
        logger.info("Training already complete at step %d of %d", done, total_steps)
        return None
    throughput = ThroughputLogger(batch_size)
    to_terminal = sys.stdout.isatty()
    if verbose and not to_terminal:  # a log file: plain lines instead of Keras' carriage-return progress bar
        callbacks = [ProgressLog(total_steps, done, throughput), *callbacks]
    stop_on_interrupt = StopOnInterrupt(manager, optimizer, total_steps)
    all_callbacks = [throughput, StepCheckpoint(manager, optimizer, checkpoint_steps), stop_on_interrupt,
                     keras.callbacks.TensorBoard(owned_files.claim(write_dir, "logs"), update_freq=100), *callbacks]
    start = time.perf_counter()
    try:
        history = model.fit(make_dataset(done), epochs=1, steps_per_epoch=total_steps - done,
                            callbacks=all_callbacks, shuffle=False, verbose=verbose if to_terminal else 0)
    finally:  # Keras skips on_train_end when fit raises: Ctrl-C must not stay caught after this
        stop_on_interrupt.restore_handler()
    results = {"steps": total_steps - done, "seconds": time.perf_counter() - start, "batch_size": batch_size,
               "final_loss": float(history.history["loss"][-1]), **throughput.summary()}
    write_json(owned_files.claim(write_dir, "train_results.json"), results)
    return results

