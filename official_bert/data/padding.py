"""Cuts the padding columns a batch does not need, so short sentences do not pay for --max_seq_length."""

import tensorflow as tf


# A training batch's length is rounded up to a multiple of this many pieces under XLA, which compiles a program
# per input shape: at most seq_length / 32 of them.
XLA_LENGTH_MULTIPLE = 32


def training_length_multiple(jit_compile):
    """What a training batch's length is rounded up to: `XLA_LENGTH_MULTIPLE` pieces under XLA; 1 (its longest
    sequence) without, where Keras traces its train step with `reduce_retracing` (a few traces, then one for any
    length) and a step's cost follows the length (MRPC, batch 32: 97.3 pieces a batch on average rounded to 32,
    79.9 exact)."""
    return XLA_LENGTH_MULTIPLE if jit_compile else 1


def trim_inputs(inputs, multiple=1):
    """Cuts one batch of encoder inputs to its longest sequence, rounded up to a multiple of `multiple` pieces.

    Args:
        inputs: the encoder's dict of (batch, seq) int tensors; `input_mask` is 1 on a prefix of each row.
        multiple: the cut length is a multiple of this (or the full length, if shorter).

    Returns:
        `(inputs, length)`: the dict of (batch, length) tensors and the scalar int32 length (at least 1).
    """
    full = tf.shape(inputs["input_mask"])[1]
    longest = tf.reduce_max(tf.reduce_sum(tf.cast(inputs["input_mask"] > 0, tf.int32), axis=1))
    if multiple > 1:  # (a FloorMod, not a FloorDiv: serving graphs keep to export/ops.py's allow-list)
        longest = longest + tf.math.floormod(-longest, multiple)
    length = tf.clip_by_value(longest, 1, full)  # an empty batch: 1
    return {name: values[:, :length] for name, values in inputs.items()}, length


def zeros_after(values, seq_length):
    """Pads outputs of a trimmed batch back to the packed length: (batch, length, ...) -> (batch, seq_length, ...),
    zeros after `length` (with core ops only: no Pad op, which export/ops.py's allow-list leaves out)."""
    shape = tf.shape(values)
    zeros = tf.zeros(tf.concat([shape[:1], [seq_length - shape[1]], shape[2:]], axis=0), values.dtype)
    padded = tf.concat([values, zeros], axis=1)
    padded.set_shape([values.shape[0], seq_length] + values.shape[2:].as_list())  # static, as the untrimmed output
    return padded


def trim_batch_padding(dataset: tf.data.Dataset, multiple: int = XLA_LENGTH_MULTIPLE,
                       sequence_labels: bool = False) -> tf.data.Dataset:
    """Shortens every batch to its longest sequence, rounded up to a multiple of `multiple` pieces.

    A padded position is masked out of attention and carries no label, so a model's outputs at the real pieces,
    a [CLS]-pooled output, and a loss over labeled pieces do not change (up to float rounding); the compute
    falls with the length. Rounding up keeps the number of distinct shapes (XLA compilations) at
    `seq_length / multiple` (`training_length_multiple` chooses). Not for losses that take a softmax over all
    positions, padding included (the SQuAD span loss, as Hugging Face's): there the padding changes the loss.

    Args:
        dataset: batches of `inputs` or `(inputs, labels)`; `inputs` is the encoder's dict of (batch, seq) int32
            tensors whose `input_mask` is 1 on a prefix of each row.
        multiple: the trimmed length is a multiple of this (or the full length, if shorter).
        sequence_labels: labels are (batch, seq) per-piece labels, trimmed alike; otherwise left as they are.
    """
    if multiple < 1:
        raise ValueError(f"multiple must be a positive number of pieces, got {multiple}")

    @tf.autograph.experimental.do_not_convert  # plain TF: no conversion cost at each start
    def trim(inputs, labels=None):
        inputs, length = trim_inputs(inputs, multiple)  # (batch, length) each
        if labels is None:
            return inputs
        return inputs, (labels[:, :length] if sequence_labels else labels)

    return dataset.map(trim, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
