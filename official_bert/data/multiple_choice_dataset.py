"""Packing (context, choices) questions into BERT inputs with a choices axis, in-graph, and the tf.data pipeline.

`pack_choices` is the one packing of multiple-choice questions: the training pipeline here and the export's
signatures (`export.multiple_choice_module`) both call it, so serving packs as training did. It uses dense core ops
only (gather, reshape, comparisons): it runs in TF Serving and in TFLite.
"""

import numpy as np
import tensorflow as tf

from official_bert.data.epochs import repeat_shuffled
from official_bert.data.padding import XLA_LENGTH_MULTIPLE, trim_inputs


def pack_choices(preprocessor, contexts, choices):
    """Packs each (context, choice) pair as `[CLS] context [SEP] choice [SEP]`, truncated longest-first.

    Args:
        preprocessor: an `official_bert.text.Preprocessor`.
        contexts: [batch] string Tensor.
        choices: [batch, num_choices] string Tensor; "" marks a missing choice (a question with fewer choices).

    Returns:
        `(inputs, truncated)`: the encoder's dict of int32 [batch, num_choices, seq_length] Tensors, all zeros on
        a missing choice's row (so `BertMultipleChoice` masks it), and bool [batch, num_choices], True where a
        pair did not fit.
    """
    shape = tf.shape(choices)  # (2,): batch, num_choices
    rows = tf.zeros(shape, tf.int32) + tf.range(shape[0])[:, None]  # (batch, num_choices) the question of a pair
    flat_choices = tf.reshape(choices, [-1])  # (batch * num_choices,)
    flat_contexts = tf.gather(contexts, tf.reshape(rows, [-1]))  # (batch * num_choices,)
    inputs, truncated = preprocessor.pack([flat_contexts, flat_choices])  # (batch * num_choices, seq) each
    present = tf.not_equal(flat_choices, "")  # (batch * num_choices,)
    keep = tf.cast(present, tf.int32)[:, None]
    packed_shape = tf.concat([shape, [preprocessor.seq_length]], axis=0)
    inputs = {name: tf.reshape(value * keep, packed_shape) for name, value in inputs.items()}
    return inputs, tf.reshape(tf.logical_and(truncated, present), shape)


def trim_choice_padding(inputs, multiple=1):
    """`padding.trim_inputs` over a choices axis: (batch, choices, seq) inputs cut to the longest pair of the batch,
    rounded up to a multiple of `multiple` pieces."""
    shape = tf.shape(inputs["input_mask"])  # (3,)
    flat = {name: tf.reshape(value, [-1, shape[2]]) for name, value in inputs.items()}
    flat, length = trim_inputs(flat, multiple)
    return {name: tf.reshape(value, [shape[0], shape[1], length]) for name, value in flat.items()}


def padded_choices(choices, num_choices=None):
    """A [questions, num_choices] object array of the choice lists, "" where a question has fewer."""
    num_choices = num_choices or max((len(c) for c in choices), default=1)
    return np.array([list(c) + [""] * (num_choices - len(c)) for c in choices], dtype=object).reshape(
        len(choices), num_choices)


def multiple_choice_dataset(contexts, choices, labels, preprocessor, batch_size, is_training, seed=0,
                            length_multiple=XLA_LENGTH_MULTIPLE):
    """Builds a batched dataset of `(inputs, labels)` (or `inputs` alone when `labels` is None).

    Args:
        contexts: list of first segments, one per question.
        choices: list of choice lists (any lengths; padded with "" to the longest, which the model masks).
        labels: the right choices' indices, or None for unlabeled prediction data.
        preprocessor: an `official_bert.text.Preprocessor`.
        batch_size: questions per batch.
        is_training: shuffle with `seed` (a fresh order every epoch, the same orders on every run), repeat
            forever, drop the last partial batch, and cut each batch to its longest pair rounded up to
            `length_multiple` pieces (the pooled output and loss do not change; the step gets cheaper).
        seed: shuffle seed.
        length_multiple: see `is_training` (`padding.training_length_multiple`).

    Returns:
        a `tf.data.Dataset` of the encoder's dict of int32 (batch, num_choices, seq) inputs (and int32 labels).
    """
    columns = {"context": np.asarray(contexts, dtype=object), "choices": padded_choices(choices)}
    if labels is not None:
        columns["label"] = np.asarray(labels).astype("int32")
    dataset = repeat_shuffled(columns, seed) if is_training else tf.data.Dataset.from_tensor_slices(columns)
    dataset = dataset.batch(batch_size, drop_remainder=is_training)

    @tf.autograph.experimental.do_not_convert  # plain TF: no conversion cost at each start
    def pack(batch):
        inputs, _ = pack_choices(preprocessor, batch["context"], batch["choices"])
        if is_training:
            inputs = trim_choice_padding(inputs, length_multiple)
        return (inputs, batch["label"]) if "label" in batch else inputs

    return dataset.map(pack, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True).prefetch(tf.data.AUTOTUNE)
