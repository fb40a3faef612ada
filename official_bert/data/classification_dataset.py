"""tf.data pipelines that turn (text_a, text_b, label) examples into packed BERT batches, in-graph."""

import numpy as np
import tensorflow as tf

from official_bert.data.epochs import repeat_shuffled
from official_bert.data.padding import XLA_LENGTH_MULTIPLE, trim_batch_padding


def classification_dataset(text_a, text_b, labels, preprocessor, batch_size, is_training, seed=0,
                           length_multiple=XLA_LENGTH_MULTIPLE):
    """Builds a batched dataset of `(inputs, labels)` (or `inputs` alone when `labels` is None).

    Args:
        text_a: list of first texts.
        text_b: list of second texts, or None.
        labels: class indices (int) or scores (float), or None for unlabeled prediction data.
        preprocessor: an `official_bert.text.Preprocessor` (tokenizes and packs, in-graph).
        batch_size: batch size.
        is_training: shuffle with `seed` (a fresh order every epoch, the same orders on every run), repeat
            forever, drop the last partial batch, and cut each batch to its longest pair rounded up to
            `length_multiple` pieces (`padding.trim_batch_padding`; the [CLS] output and loss do not change, the
            step gets cheaper).
        seed: shuffle seed.
        length_multiple: see `is_training` (`padding.training_length_multiple`).
    """
    columns = {"text_a": np.asarray(text_a, dtype=object)}
    if text_b is not None:
        columns["text_b"] = np.asarray(text_b, dtype=object)
    if labels is not None:
        labels = np.asarray(labels)
        columns["label"] = labels.astype("float32" if labels.dtype.kind == "f" else "int32")
    dataset = repeat_shuffled(columns, seed) if is_training else tf.data.Dataset.from_tensor_slices(columns)
    dataset = dataset.batch(batch_size, drop_remainder=is_training)

    @tf.autograph.experimental.do_not_convert  # plain TF: no conversion cost at each start
    def pack(batch):
        texts = [batch["text_a"]] + ([batch["text_b"]] if "text_b" in batch else [])
        inputs, _ = preprocessor.pack(texts)
        return (inputs, batch["label"]) if "label" in batch else inputs

    dataset = dataset.map(pack, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    if is_training:
        dataset = trim_batch_padding(dataset, length_multiple)
    return dataset.prefetch(tf.data.AUTOTUNE)
