"""PredictProgress: log lines while a long prediction runs (items done / total, items/s, time left)."""

import logging
import time

import keras
import numpy as np

logger = logging.getLogger(__name__)


class PredictProgress(keras.callbacks.Callback):
    """A `model.predict` callback that logs `<verb> done/total <noun>, N <noun>/s, ~M min left` every `every_seconds`
    over one or more `predict` calls (groups of rows), and `finish` logs the last line: progress for evaluations
    whose output goes to a file, as `training.ProgressLog` gives for training steps.

    Rows are the model's input rows (e.g. windows), counted in the order the groups are predicted; items are what
    the user counts (e.g. sentences, each one or more rows).

    Args:
        items_after: int (rows + 1,): items complete once the first k rows are predicted.
        work_after: (rows + 1,): the compute of the first k rows (e.g. their pieces), for the time left.
        verb, noun: the line's words ("tagged", "sentences").
        every_seconds: seconds between lines.
    """

    def __init__(self, items_after, work_after, verb, noun, every_seconds=10.0):
        super().__init__()
        self.items_after = np.asarray(items_after)
        self.work_after = np.asarray(work_after, np.float64)
        self.verb, self.noun = verb, noun
        self.every_seconds = every_seconds
        self.rows_done = 0
        self._group = (0, 0, 1)  # (first row, rows, batch size) of the current predict call
        self._start = self._last = time.perf_counter()

    def group(self, rows, batch_size):
        """This callback for the next `predict` call, over the next `rows` rows in batches of `batch_size`."""
        self._group = (self.rows_done, rows, batch_size)
        return self

    def on_predict_batch_end(self, batch, logs=None):
        first, rows, batch_size = self._group
        self.rows_done = first + min((batch + 1) * batch_size, rows)
        now = time.perf_counter()
        if now - self._last >= self.every_seconds:
            self._last = now
            self._log(now)

    def finish(self):
        """Logs the last line (all rows done)."""
        self.rows_done = len(self.items_after) - 1
        self._log(time.perf_counter())

    def _log(self, now):
        done, total = int(self.items_after[self.rows_done]), int(self.items_after[-1])
        elapsed = max(now - self._start, 1e-9)
        work_done = self.work_after[self.rows_done]
        left = elapsed * (self.work_after[-1] - work_done) / work_done if 0 < work_done < self.work_after[-1] else 0
        left = f", ~{left:.0f} s left" if 0 < left < 60 else f", ~{left / 60:.1f} min left" if left else ""
        logger.info("%s %d/%d %s, %.1f %s/s%s", self.verb, done, total, self.noun, done / elapsed, self.noun, left)
