"""What the tensorflow-datasets readers (GLUE, SQuAD, multiple choice) share: a record's text as a Python string."""

import numpy as np


def to_str(value) -> str:
    """A TFDS text feature (bytes, as `tfds.as_numpy` yields it, decoded as UTF-8) or any other value as a string."""
    if isinstance(value, (bytes, np.bytes_)):
        return value.decode("utf-8")
    return str(value)
