"""tf.data input for pre-training: TFRecords in Google's format, or raw text with dynamic masking.

Both yield the same batches, a dict of

    input_word_ids, input_mask, input_type_ids   int32   (batch, max_seq_length)
    masked_lm_positions, masked_lm_ids           int32   (batch, max_predictions_per_seq)
    masked_lm_weights                            float32 (batch, max_predictions_per_seq)
    next_sentence_labels                         int32   (batch,)   1 = B is a random sentence

`pretraining_dataset` reads records written by `tasks.create_pretraining_data` or Google's original tool;
`dynamic_masking_dataset` (see `dynamic_masking.py`) reads the text files themselves and draws fresh masks
every epoch.
"""

import logging

import tensorflow as tf

from official_bert.data.dynamic_masking import dynamic_masking_dataset
from official_bert.data.epochs import repeat_shuffled
from official_bert.data.sentence_corpus import expand_file_patterns
from official_bert.data.pretraining_records import check_record_file, parse_batch

__all__ = ["dynamic_masking_dataset", "pretraining_dataset"]

logger = logging.getLogger(__name__)


def pretraining_dataset(file_patterns, batch_size, max_seq_length, max_predictions_per_seq, is_training, seed=0,
                        input_context=None, shuffle_buffer_size=10000, cycle_length=8):
    """Batches of pre-training records.

    Args:
        file_patterns: comma-separated globs or a list of them (e.g. "out/wiki-*.tfrecord").
        batch_size: the batch size of this dataset. Under `strategy.distribute_datasets_from_function`, pass
            the per-replica size, `input_context.get_per_replica_batch_size(global_batch_size)`.
        max_seq_length, max_predictions_per_seq: the records' shapes (checked on the first record of the first
            file when called eagerly: a mismatch is a ValueError naming the file and feature).
        is_training: shuffle the files and the records (with `seed`; a new order every epoch), repeat forever,
            and drop the last partial batch; otherwise read the files once, in order.
        seed: shuffle seed.
        input_context: a `tf.distribute.InputContext`; with several input pipelines, each reads its share of
            the files (or, with fewer files than pipelines, its share of the records).
        shuffle_buffer_size: records in the shuffle buffer.
        cycle_length: files read at once.

    Returns:
        A `tf.data.Dataset` of the batch dict above.
    """
    files = expand_file_patterns(file_patterns)
    if tf.executing_eagerly() and not check_record_file(files[0], max_seq_length, max_predictions_per_seq):
        logger.warning("%s holds no record", files[0])
    shard_records = False
    if input_context is not None and input_context.num_input_pipelines > 1:
        pipelines, index = input_context.num_input_pipelines, input_context.input_pipeline_id
        if len(files) >= pipelines:
            if len(files) % pipelines:
                logger.warning("%d files over %d input pipelines: some read one file more", len(files), pipelines)
            files = files[index::pipelines]  # this pipeline's share, as Dataset.shard(pipelines, index)
        else:
            shard_records = True
            logger.warning("%d files for %d input pipelines: sharding records instead (each pipeline reads all "
                           "files); write at least as many files (--num_output_shards)", len(files), pipelines)
    dataset = repeat_shuffled(files, seed) if is_training else tf.data.Dataset.from_tensor_slices(files)
    dataset = dataset.interleave(tf.data.TFRecordDataset, cycle_length=min(cycle_length, len(files)),
                                 num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    if shard_records:
        dataset = dataset.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    if is_training:
        dataset = dataset.shuffle(shuffle_buffer_size, seed=seed, reshuffle_each_iteration=False)  # one endless pass
    dataset = dataset.batch(batch_size, drop_remainder=is_training)
    parse = tf.autograph.experimental.do_not_convert(  # plain TF: no conversion cost at each start
        lambda serialized: parse_batch(serialized, max_seq_length, max_predictions_per_seq))
    dataset = dataset.map(parse, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return dataset.prefetch(tf.data.AUTOTUNE)
