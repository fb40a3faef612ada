"""What the models need to know of tf.distribute (on the TensorFlow backend only)."""

import keras
from keras import ops


def tf_distribute():
    """`tf.distribute` when Keras runs on TensorFlow, else None: on the JAX and torch backends a model has one
    replica here (their data parallelism shards the batch outside the loss)."""
    if keras.backend.backend() != "tensorflow":
        return None
    import tensorflow as tf
    return tf.distribute


def multi_worker():
    """Whether the current strategy is a MultiWorkerMirroredStrategy over more than one worker."""
    distribute = tf_distribute()
    if distribute is None:
        return False
    strategy = distribute.get_strategy()
    if not isinstance(strategy, distribute.MultiWorkerMirroredStrategy):
        return False
    spec = strategy.cluster_resolver.cluster_spec().as_dict()
    return sum(len(spec.get(job, ())) for job in ("chief", "worker")) > 1


def reducible_across_workers(results):
    """A step's metric results in the shape Keras can reduce across workers.

    Keras (3.15) reduces step outputs across workers with `strategy.reduce("MEAN", v, axis=0)`, which fails on
    scalars (tensorflow/tensorflow#72388): under a multi-worker strategy each value gets the axis it reduces.

    Args:
        results: metric name -> scalar.
    """
    if not multi_worker():
        return results
    return {name: ops.reshape(value, (1,)) for name, value in results.items()}
