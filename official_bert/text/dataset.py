"""Tokenizing whole corpora fast: batched, parallel tf.data around BertTokenizer."""

import tensorflow as tf


def tokenize_dataset(tokenizer, texts, batch_size=1024, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True):
    """Streams a corpus through the tokenizer in large batches, several batches at once.

    The tokenizer kernels cost little per call but have a fixed overhead, so batching is what makes
    this fast; `num_parallel_calls` spreads the batches over the CPU cores.

    Args:
        tokenizer: a `BertTokenizer`.
        texts: a list of str, a 1-D string Tensor, or a `tf.data.Dataset` of scalar strings.
        batch_size: texts per tokenizer call.
        num_parallel_calls: batches tokenized concurrently (default: tf.data autotune).
        deterministic: keep the input order (set False for a little more speed).

    Returns:
        A `tf.data.Dataset` of int32 RaggedTensors [batch, (tokens)], in input order by default.

    Examples:

    >>> for ids in tokenize_dataset(tokenizer, ["hello world", "good morning"]):
    ...     print(ids.to_list())
    [[7592, 2088], [2204, 2851]]
    """
    dataset = texts if isinstance(texts, tf.data.Dataset) else tf.data.Dataset.from_tensor_slices(
        tf.constant(texts, tf.string) if isinstance(texts, (list, tuple)) else texts)
    return (dataset.batch(batch_size)
            .map(tokenizer, num_parallel_calls=num_parallel_calls, deterministic=deterministic)
            .prefetch(tf.data.AUTOTUNE))


def tokenize_corpus(tokenizer, texts, batch_size=1024):
    """Tokenizes a list of strings to a list of id lists (the eager convenience over `tokenize_dataset`).

    Args:
        tokenizer: a `BertTokenizer`.
        texts: a list of str.
        batch_size: texts per tokenizer call.

    Returns:
        list of lists of int, one per text.
    """
    ids = []
    for batch in tokenize_dataset(tokenizer, texts, batch_size):
        ids += batch.to_list()
    return ids
