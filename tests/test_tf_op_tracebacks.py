"""The tests' TensorFlow traces without op tracebacks (`tf_op_tracebacks`): this TensorFlow still takes the private
argument it sets, so the suite runs at the speed CONTRIBUTING.md gives."""

import tensorflow as tf
from tensorflow.python.framework import ops


def test_ops_traced_in_a_test_have_no_traceback():
    assert getattr(ops._create_c_op, "leaves_out_tracebacks", False), \
        "tests/tf_op_tracebacks.py found no `extract_traceback` argument in this TensorFlow's ops._create_c_op"
    graph = tf.function(lambda x: tf.nn.relu(x * 2.0)).get_concrete_function(tf.TensorSpec([2])).graph
    operations = graph.get_operations()
    assert len(operations) >= 3 and all(not op.traceback for op in operations)
