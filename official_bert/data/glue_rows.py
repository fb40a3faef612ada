"""One line of a GLUE TSV file: the header (or the layout's column positions), the column count, the index, the
texts and the label, each checked; a malformed row is a `BadRow` naming the file and line, a label outside the
task's label set an error."""

import logging
import math
from typing import List

from official_bert.data.glue_tasks import GlueTask, TsvLayout

logger = logging.getLogger(__name__)

STSB_SCORE_RANGE = (0.0, 5.0)


class BadRow:
    """A malformed row: what was wrong, already prefixed with `file:line:`."""

    def __init__(self, message: str):
        self.message = message


class RowReader:
    """Turns the fields of one line into (index, text_a, text_b, label), a `BadRow`, or None for a header."""

    def __init__(self, task: GlueTask, layout: TsvLayout, path: str, split: str):
        self.task, self.layout, self.path, self.split = task, layout, path, split
        self.positions = None  # column name -> position, once the first line is seen
        self.header = None  # the header's column names, when the file has one
        self.num_columns = layout.num_columns

    def _where(self, lineno: int) -> str:
        return f"{self.path}:{lineno}"

    def parse(self, lineno: int, fields: List[str]):
        if self.positions is None:
            if self._read_header(lineno, fields):
                return None
        layout = self.layout
        if self.num_columns is not None and len(fields) != self.num_columns:
            return BadRow(f"{self._where(lineno)}: expected {self.num_columns} tab-separated columns "
                           f"({self._column_names()}) in a {self.task.name} {self.split} row, got {len(fields)}")
        if self.num_columns is None and len(fields) < layout.min_columns:
            return BadRow(f"{self._where(lineno)}: expected at least {layout.min_columns} tab-separated "
                           f"columns in a {self.task.name} {self.split} row, got {len(fields)}")
        index = None
        if layout.index is not None:
            raw = fields[self.positions[layout.index.name]].strip()
            try:
                index = int(raw)
            except ValueError:
                return BadRow(f"{self._where(lineno)}: the {layout.index.name!r} column must be an integer, "
                               f"got {raw!r}")
        texts = []
        for column in (layout.text_a, layout.text_b):
            if column is None:
                texts.append(None)
                continue
            text = fields[self.positions[column.name]]
            if not text.strip():
                return BadRow(f"{self._where(lineno)}: empty text in column {column.name!r}")
            texts.append(text)
        label = None
        if layout.label is not None:
            raw_label = fields[self.positions[layout.label.name]]
            if not raw_label.strip():  # a missing label is a malformed row; a wrong one is always an error
                return BadRow(f"{self._where(lineno)}: empty label in column {layout.label.name!r}")
            label = self._parse_label(lineno, raw_label)
        return index, texts[0], texts[1], label

    def _column_names(self) -> str:
        if self.header is not None:
            return ", ".join(self.header)
        return ", ".join(f"{c.name} at {c.position}" for c in sorted(self.layout.columns, key=lambda c: c.position))

    def _read_header(self, lineno: int, fields: List[str]) -> bool:
        """Sets the column positions from a header line (True) or from the layout's fallback (False)."""
        layout = self.layout
        if layout.has_header and layout.text_a.name in fields:
            missing = [c.name for c in layout.columns if c.name not in fields]
            if missing:
                raise ValueError(f"{self._where(lineno)}: the header has no column "
                                 f"{', '.join(repr(m) for m in missing)} that a {self.task.name} {self.split} "
                                 f"file needs; header: {fields}")
            self.positions = {c.name: fields.index(c.name) for c in layout.columns}
            self.num_columns = len(fields)
            self.header = fields
            return True
        if layout.has_header:
            logger.warning("%s: no %s header row; reading columns by position", self.path, self.task.name)
        self.positions = {c.name: c.position for c in layout.columns}
        return False

    def _parse_label(self, lineno: int, raw: str):
        value = raw.strip()
        if self.task.is_regression:
            low, high = STSB_SCORE_RANGE
            try:
                score = float(value)
            except ValueError:
                score = math.nan
            if not low <= score <= high:  # also rejects NaN
                raise ValueError(f"{self._where(lineno)}: {self.task.name} score {raw!r} is not a number "
                                 f"in [{low:g}, {high:g}]")
            return score
        if value not in self.task.label_names:
            allowed = ", ".join(repr(n) for n in self.task.label_names)
            raise ValueError(f"{self._where(lineno)}: label {raw!r} is not a {self.task.name} label; "
                             f"allowed: {allowed}")
        return self.task.label_names.index(value)
