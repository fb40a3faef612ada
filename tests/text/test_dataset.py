"""tokenize_dataset / tokenize_corpus: the batched, parallel tf.data path gives the eager ids, in order."""

import tensorflow as tf

from official_bert.text.dataset import tokenize_corpus, tokenize_dataset
import text_corpora as corpora


def test_corpus_path_equals_direct_calls_in_order(tokenizer, shared_data):
    texts = corpora.cola(shared_data)[:2500]
    assert tokenize_corpus(tokenizer, texts, batch_size=256) == tokenizer(tf.constant(texts)).to_list()


def test_dataset_of_strings_is_batched(tokenizer):
    dataset = tf.data.Dataset.from_tensor_slices(["hello world", "good morning", "hi"])
    batches = list(tokenize_dataset(tokenizer, dataset, batch_size=2))
    assert [b.to_list() for b in batches] == [[[7592, 2088], [2204, 2851]], [[7632]]]
    assert batches[0].dtype == tf.int32
