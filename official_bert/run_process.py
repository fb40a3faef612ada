"""A run's process: seed, determinism, precision and `tf.distribute` strategy, which process writes, and the
training stream each worker reads under that strategy."""

import glob
import logging
import os
import shutil
import tempfile

logger = logging.getLogger(__name__)

# The `tf.distribute` strategies a run can use (`--distribution_strategy`).
STRATEGIES = ("one_device", "mirrored", "multi_worker_mirrored", "tpu")


def get_strategy(name="one_device", tpu_address=None):
    """Returns the `tf.distribute` strategy called `name`.

    Args:
        name: one of `STRATEGIES`. "one_device" uses the first GPU if there is one; on a machine without one it is
            TensorFlow's default strategy, whose datasets and steps run undistributed (a `OneDeviceStrategy` on
            the CPU would add a per-device iterator and a replica context to every step: about 10% of a tiny
            run's CPU, 30 more traced functions).
        tpu_address: the TPU to connect to, for "tpu" ("" or None for a local TPU VM).
    """
    import tensorflow as tf

    if name == "one_device":
        gpus = tf.config.list_logical_devices("GPU")
        return tf.distribute.OneDeviceStrategy(gpus[0].name) if gpus else tf.distribute.get_strategy()
    if name == "mirrored":
        return tf.distribute.MirroredStrategy()
    if name == "multi_worker_mirrored":
        return tf.distribute.MultiWorkerMirroredStrategy()
    if name == "tpu":
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu_address or "")
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        return tf.distribute.TPUStrategy(resolver)
    raise ValueError(f"distribution_strategy must be one of {', '.join(STRATEGIES)}, got {name!r}")


def is_chief(strategy, strategy_name):
    """Whether this process writes the run's files: always, except the non-chief workers of a multi-worker job."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not resolver.task_type or strategy_name != "multi_worker_mirrored":
        return True
    if resolver.task_type == "chief":
        return True
    return (resolver.task_type == "worker" and resolver.task_id == 0
            and "chief" not in resolver.cluster_spec().as_dict())


def start_process(config):
    """Seeds, sets determinism and the precision policy, and builds the strategy; returns `(strategy, is_chief,
    out_dir)`.

    `out_dir` is where this process writes: the model_dir on the chief, a temporary directory of its own on the
    other workers of a multi-worker job (as TF recommends; the caller removes it).
    """
    import keras
    import tensorflow as tf

    from official_bert import training

    keras.utils.set_random_seed(config.seed)
    if config.deterministic:
        tf.config.experimental.enable_op_determinism()
    training.set_mixed_precision(config.mixed_precision)
    strategy = get_strategy(config.distribution_strategy, config.tpu)
    chief = is_chief(strategy, config.distribution_strategy)
    return strategy, chief, config.model_dir if chief else scratch_dir("worker")


def resumable_stream(make_batches, strategy, config):
    """`make_dataset(skip_batches)` for `training.fit_resumable` from a task's `make_batches(batch_size)`.

    Under `multi_worker_mirrored` each worker builds the same stream with the per-replica batch size and keeps
    every n-th batch (n workers, one device each): a global step trains on the same examples as one device with
    the global batch, and each worker hands Keras its share, as `distribute_datasets_from_function` expects.
    """
    if config.distribution_strategy != "multi_worker_mirrored":
        return lambda skip_batches: make_batches(config.train_batch_size).skip(skip_batches)
    replicas = strategy.num_replicas_in_sync
    if config.train_batch_size % replicas:
        raise ValueError(f"--train_batch_size={config.train_batch_size} is not divisible by the {replicas} replicas")

    def per_worker(skip_batches, context):
        if context.num_input_pipelines != replicas:
            raise ValueError("multi_worker_mirrored fine-tuning runs one device per worker; this job has "
                             f"{replicas} replicas on {context.num_input_pipelines} workers")
        stream = make_batches(config.train_batch_size // replicas).skip(skip_batches * replicas)
        return stream.shard(replicas, context.input_pipeline_id)

    return lambda skip_batches: strategy.distribute_datasets_from_function(
        lambda context: per_worker(skip_batches, context))


def scratch_dir(purpose):
    """A new temporary folder of this process, `official_bert_<purpose>_<pid>_*`, for the caller to delete; first
    deletes those that processes no longer running left (a run killed with SIGKILL cannot delete its own).

    Args:
        purpose: a word naming what the folder holds ("run": a run's vocab files; "worker": a non-chief worker's
            checkpoints).
    """
    prefix = f"official_bert_{purpose}_"
    for path in glob.glob(os.path.join(tempfile.gettempdir(), f"{prefix}*_*")):
        pid = os.path.basename(path)[len(prefix):].split("_")[0]
        if pid.isdigit() and not _running(int(pid)):
            shutil.rmtree(path, ignore_errors=True)
            logger.info("Deleted %s, left by a run that was killed", path)
    return tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}_")


def _running(pid):
    """Whether a process `pid` exists (one of another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
