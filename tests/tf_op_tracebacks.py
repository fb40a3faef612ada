"""The tests' TensorFlow creates graph ops without recording the Python traceback of each.

For every op a `tf.function` trace creates, TensorFlow keeps the Python stack that created it (for the "defined at"
lines of a runtime error's message). Under pytest and Keras those stacks are deep, and the suite traces thousands of
train steps and export signatures: recording them costs about a tenth of its CPU (`tests/tasks/test_family_runs.py`
with `tests/models/test_real_token_training.py`: 64-68 s of CPU with them, 58-59 s without, one process). The
pytest workers and the children of the "project" fork server (the CLI runs) leave them out. The SavedModel consumers
(the "tensorflow" fork server's children), the plain subprocess run of each entry point, and users keep TensorFlow as
it is; no test reads an op's traceback.
"""

import inspect


def leave_out_op_tracebacks():
    """Makes TensorFlow create graph ops without recording their tracebacks (idempotent).

    Does nothing where TensorFlow's private `ops._create_c_op` has no `extract_traceback` argument (another
    TensorFlow version): the tests then run as before, only slower.
    """
    from tensorflow.python.framework import ops

    create = getattr(ops, "_create_c_op", None)
    if create is None or getattr(create, "leaves_out_tracebacks", False):
        return
    if "extract_traceback" not in inspect.signature(create).parameters:
        return

    def create_without_traceback(*args, **kwargs):
        kwargs["extract_traceback"] = False
        return create(*args, **kwargs)

    create_without_traceback.leaves_out_tracebacks = True
    ops._create_c_op = create_without_traceback
