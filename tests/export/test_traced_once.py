"""TracedOnce: one trace for inputs of every batch size and length, another only for other names, ranks or dtypes."""

import numpy as np
import tensorflow as tf

from export.traced_once import TracedOnce


def test_one_trace_serves_every_shape_and_answers_as_the_call():
    traces = []

    def call(inputs):
        traces.append({name: tensor.shape.as_list() for name, tensor in inputs.items()})
        return inputs["ids"] * 2 + inputs["mask"]

    traced = TracedOnce(call)

    @tf.function
    def signature(ids, mask):  # as an export's signature calls it: inside another function's graph
        return traced({"ids": ids, "mask": mask})

    for shape in ((2, 3), (1, 7), (4, 3)):
        ids, mask = np.arange(np.prod(shape), dtype=np.int32).reshape(shape), np.ones(shape, np.int32)
        np.testing.assert_array_equal(signature(ids, mask).numpy(), ids * 2 + 1)
    assert traces == [{"ids": [None, None], "mask": [None, None]}]
    traced({"ids": tf.zeros([2, 3, 4], tf.int32), "mask": tf.zeros([2, 3, 4], tf.int32)})  # another rank
    assert len(traces) == 2
