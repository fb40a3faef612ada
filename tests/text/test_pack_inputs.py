"""BertPackInputs: identical to `tokenizers` pair/single encoding with longest_first truncation + padding."""

import numpy as np
import pytest
import tensorflow as tf

from official_bert.text import BertPackInputs
from official_bert.text.pack_inputs import truncate_longest_first
import text_corpora as corpora

SPECIAL = {"start_of_sequence_id": 101, "end_of_segment_id": 102, "padding_id": 0}


def _reference(tokenizer_json, seq_length):
    tokenizers = pytest.importorskip("tokenizers")
    reference = tokenizers.Tokenizer.from_file(str(tokenizer_json))
    reference.enable_truncation(max_length=seq_length, strategy="longest_first")
    reference.enable_padding(length=seq_length, pad_id=0, pad_token="[PAD]")
    return reference


@pytest.mark.parametrize("seq_length", [8, 25, 64, 128])
def test_pairs_equal_reference(tokenizer, tokenizer_json, shared_data, seq_length):
    pairs = corpora.mrpc_pairs(shared_data, "dev")
    first, second = (tf.constant([p[i] for p in pairs]) for i in (0, 1))
    packed = BertPackInputs(seq_length, tokenizer.get_special_tokens_dict())([tokenizer(first), tokenizer(second)])
    expected = _reference(tokenizer_json, seq_length).encode_batch(pairs)
    np.testing.assert_array_equal(packed["input_word_ids"].numpy(), [e.ids for e in expected])
    np.testing.assert_array_equal(packed["input_mask"].numpy(), [e.attention_mask for e in expected])
    np.testing.assert_array_equal(packed["input_type_ids"].numpy(), [e.type_ids for e in expected])


@pytest.mark.parametrize("seq_length", [2, 3, 16, 128])
def test_single_segments_equal_reference(tokenizer, tokenizer_json, shared_data, seq_length):
    texts = corpora.cola(shared_data)[:500] + ["", "a " * 200]
    packed = BertPackInputs(seq_length, tokenizer.get_special_tokens_dict())(tokenizer(tf.constant(texts)))
    expected = _reference(tokenizer_json, seq_length).encode_batch(texts)
    np.testing.assert_array_equal(packed["input_word_ids"].numpy(), [e.ids for e in expected])
    np.testing.assert_array_equal(packed["input_mask"].numpy(), [e.attention_mask for e in expected])
    np.testing.assert_array_equal(packed["input_type_ids"].numpy(), [e.type_ids for e in expected])


@pytest.mark.slow
def test_truncation_equals_reference_on_all_small_lengths(tokenizer_json):
    """Every (len_a, len_b) up to 20 and every budget up to 20, against tokenizers itself."""
    lengths = [(a, b) for a in range(21) for b in range(21)]
    texts = [(" ".join("a" * a), " ".join("b" * b)) for a, b in lengths]
    for seq_length in range(3, 24):
        expected = [(e.tokens.count("a"), e.tokens.count("b"))
                    for e in _reference(tokenizer_json, seq_length).encode_batch(texts)]
        kept = truncate_longest_first(tf.constant(lengths, tf.int32), seq_length - 3).numpy()
        assert [tuple(k) for k in kept] == expected, seq_length


def test_three_segments_trim_longest_first():
    kept = truncate_longest_first(tf.constant([[10, 2, 10], [5, 5, 5], [1, 9, 4], [0, 0, 0]]), 10).numpy()
    np.testing.assert_array_equal(kept, [[4, 2, 4], [3, 3, 4], [1, 5, 4], [0, 0, 0]])


def test_three_segment_layout():
    segments = [tf.ragged.constant([[11, 12], [21]]), tf.ragged.constant([[13], []]),
                tf.ragged.constant([[14, 15, 16], [22, 23]])]
    packed = BertPackInputs(10, SPECIAL)(segments)
    np.testing.assert_array_equal(packed["input_word_ids"].numpy(),
                                  [[101, 11, 12, 102, 13, 102, 14, 15, 16, 102],
                                   [101, 21, 102, 102, 22, 23, 102, 0, 0, 0]])
    np.testing.assert_array_equal(packed["input_type_ids"].numpy(),
                                  [[0, 0, 0, 0, 1, 1, 2, 2, 2, 2], [0, 0, 0, 1, 2, 2, 2, 0, 0, 0]])
    np.testing.assert_array_equal(packed["input_mask"].numpy(),
                                  [[1] * 10, [1] * 7 + [0] * 3])
    assert all(v.dtype == tf.int32 and v.shape == (2, 10) for v in packed.values())


def test_errors():
    with pytest.raises(ValueError, match="padding_id"):
        BertPackInputs(8, {"start_of_sequence_id": 1, "end_of_segment_id": 2})
    with pytest.raises(ValueError, match="no room"):
        BertPackInputs(2, SPECIAL)([tf.ragged.constant([[1]]), tf.ragged.constant([[2]])])
    with pytest.raises(ValueError, match="RaggedTensor"):
        BertPackInputs(8, SPECIAL)([tf.constant([[1, 2]])])


def test_config_round_trip():
    layer = BertPackInputs(12, SPECIAL, name="packer")
    clone = BertPackInputs.from_config(layer.get_config())
    assert (clone.seq_length, clone.special_tokens_dict, clone.name) == (12, SPECIAL, "packer")
