"""The padding-free inference path: `RealTokens` packs and unpacks, and the encoder and classifier run on the real
tokens only give what the padded model gives at them, for every family and for int8 models."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from official_bert import BertClassifier, BertConfig, BertEncoder
from official_bert.layers.real_tokens import ATTENTION_GROUPS, TRAINING_ROW_MULTIPLE, RealTokens
from tiny_families import FAMILIES, padded_inputs

def test_pack_and_unpack_round_trip_with_zeros_at_the_padding():
    mask = np.array([[1, 1, 1, 0], [1, 0, 0, 0], [1, 1, 1, 1]], "int32")
    values = np.arange(3 * 4 * 2, dtype="float32").reshape(3, 4, 2) + 1
    real = RealTokens(mask)
    rows = keras.ops.convert_to_numpy(real.pack(values))
    np.testing.assert_array_equal(rows, values[mask == 1][None])  # one row of the real tokens, batch-major
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(real.unpack(rows)), values * mask[..., None])


def test_unpack_for_attention_puts_each_token_back_and_a_real_token_at_the_padding():
    mask = np.array([[1, 1, 1, 0], [1, 0, 0, 0], [1, 1, 1, 1]], "int32")
    values = np.arange(3 * 4 * 2, dtype="float32").reshape(3, 4, 2) + 1
    real = RealTokens(mask)
    (spread,) = (keras.ops.convert_to_numpy(layout) for layout in real.unpack_for_attention(real.pack(values)))
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(real.attention_masks[0]), mask)
    np.testing.assert_array_equal(spread[mask == 1], values[mask == 1])
    # at the padding, a copy of the last real token before it (finite, and masked out of the attention)
    np.testing.assert_array_equal(spread[0, 3], values[0, 2])
    np.testing.assert_array_equal(spread[1, 1:], np.repeat(values[1, :1], 3, axis=0))


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_encoder_on_real_tokens_equals_the_padded_encoder_there(family):
    keras.utils.set_random_seed(0)
    encoder = BertEncoder(BertConfig.from_dict(FAMILIES[family]))
    inputs = padded_inputs([12, 5, 1, 9])
    padded = encoder(inputs, training=False)
    unpadded = encoder(inputs, training=False, real_tokens=True)
    mask = inputs["input_mask"][..., None].astype(bool)
    sequence = keras.ops.convert_to_numpy(unpadded["sequence_output"])
    np.testing.assert_allclose(sequence * mask, keras.ops.convert_to_numpy(padded["sequence_output"]) * mask,
                               atol=2e-5, rtol=1e-5)
    assert not sequence[~mask[..., 0]].any()  # zeros at the padding
    np.testing.assert_allclose(keras.ops.convert_to_numpy(unpadded["pooled_output"]),
                               keras.ops.convert_to_numpy(padded["pooled_output"]), atol=2e-5, rtol=1e-5)


def test_token_classifier_on_real_tokens_gives_the_same_logits_at_them():
    from official_bert.models import BertTokenClassifier

    keras.utils.set_random_seed(2)
    model = BertTokenClassifier(BertEncoder(BertConfig.from_dict(FAMILIES["bert"])), num_labels=5)
    inputs = padded_inputs([4, 12, 7], seed=2)
    real = inputs["input_mask"] == 1
    expected = keras.ops.convert_to_numpy(model(inputs, training=False))  # (3, 12, 5)
    got = tf.function(lambda x: model(x, real_tokens=True))({k: tf.constant(v) for k, v in inputs.items()}).numpy()
    np.testing.assert_allclose(got[real], expected[real], atol=2e-5, rtol=1e-5)
    assert not got[~real].any()  # zeros at the padding


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_classifier_on_real_tokens_gives_the_same_logits_in_a_graph(family):
    keras.utils.set_random_seed(1)
    model = BertClassifier(BertEncoder(BertConfig.from_dict(FAMILIES[family])), num_classes=3)
    inputs = padded_inputs([4, 12, 7], seed=1)
    expected = keras.ops.convert_to_numpy(model(inputs, training=False))
    got = tf.function(lambda x: model(x, real_tokens=True))({k: tf.constant(v) for k, v in inputs.items()}).numpy()
    np.testing.assert_allclose(got, expected, atol=2e-5, rtol=1e-5)


@pytest.mark.slow
def test_an_int8_classifier_on_real_tokens_gives_the_int8_models_logits():
    keras.utils.set_random_seed(2)
    model = BertClassifier(BertEncoder(BertConfig.from_dict(FAMILIES["bert"])), num_classes=2)
    model.quantize("int8")  # (Keras collects garbage once per kernel it replaces: tests/conftest.py froze the heap)
    inputs = padded_inputs([12, 3, 8], seed=2)
    expected = keras.ops.convert_to_numpy(model(inputs, training=False))
    got = keras.ops.convert_to_numpy(model(inputs, real_tokens=True))
    # Activations are quantized per call over the tensor they see: packed tokens vs padded ones differ in range.
    np.testing.assert_allclose(got, expected, atol=0.05)


def _gradient(fn, values, upstream):
    values = tf.constant(values)
    with tf.GradientTape() as tape:
        tape.watch(values)
        out = fn(values)
    return tape.gradient(out, values, output_gradients=tf.constant(upstream)).numpy()


def test_training_gradient_of_pack_is_autodiffs():
    """`for_training=True` (a gather, no scatter-add; zero rows up to `TRAINING_ROW_MULTIPLE`): `pack`'s gradient is
    autodiff's, and `unpack` puts the tokens back."""
    mask = np.array([[1, 1, 1, 0], [1, 0, 0, 0], [1, 1, 1, 1]], "int32")
    tokens = int(mask.sum())
    rng = np.random.default_rng(3)
    values = rng.standard_normal((3, 4, 2)).astype("float32")
    plain, for_training = RealTokens(mask), RealTokens(mask, for_training=True)
    rows = for_training.pack(values).numpy()
    assert rows.shape == (1, TRAINING_ROW_MULTIPLE, 2)
    np.testing.assert_array_equal(rows[:, :tokens], plain.pack(values).numpy())
    assert not rows[:, tokens:].any()
    upstream_rows = rng.standard_normal((1, TRAINING_ROW_MULTIPLE, 2)).astype("float32")
    np.testing.assert_array_equal(_gradient(for_training.pack, values, upstream_rows),
                                  _gradient(plain.pack, values, upstream_rows[:, :tokens]))
    np.testing.assert_array_equal(for_training.unpack(rows), values * mask[..., None])


# Six sequences of lengths 3, 1, 4, 2, 4, 1 (seq 5): sorted by length into ATTENTION_GROUPS groups of 2, the last
# one two empty sequences; a layout has at least 2 positions.
_GROUPED_LENGTHS = [3, 1, 4, 2, 4, 1]
_GROUPS = [([2, 4], 4), ([0, 3], 3), ([1, 5], 2), ([], 2)]  # (members, the layout's length)


def _grouped():
    mask = (np.arange(5)[None] < np.array(_GROUPED_LENGTHS)[:, None]).astype("int32")  # (6, 5)
    values = np.random.default_rng(5).standard_normal((6, 5, 3)).astype("float32")
    real_tokens = RealTokens(mask, for_training=True)
    return mask, values, real_tokens, real_tokens.pack(values).numpy()


def _expected_layout(mask, values, members, length):
    """A group's (2, length, ...) layout: its members' values, zeros at the padding and in empty sequences."""
    layout = np.zeros((2, length) + values.shape[2:], values.dtype)
    layout[:len(members)] = (values * mask[..., None])[members, :length]
    return layout


def test_training_attention_layouts_are_length_groups_cut_to_their_longest():
    assert ATTENTION_GROUPS == len(_GROUPS)
    mask, values, real_tokens, rows = _grouped()
    layouts = real_tokens.unpack_for_attention(rows)
    assert len(layouts) == len(real_tokens.attention_masks) == ATTENTION_GROUPS
    for layout, group_mask, (members, length) in zip(layouts, real_tokens.attention_masks, _GROUPS):
        np.testing.assert_array_equal(group_mask.numpy(), _expected_layout(mask, mask[..., None], members,
                                                                           length)[..., 0])
        np.testing.assert_array_equal(layout.numpy(), _expected_layout(mask, values, members, length))
    packed = real_tokens.pack_attention_output(layouts).numpy()
    np.testing.assert_array_equal(packed, rows)  # the real tokens back in their rows, zero rows after them


def test_training_length_groups_of_one_position_sequences_stay_in_their_rows():
    mask = np.array([[1], [1], [0], [1], [1]], "int32")  # seq 1: no layout longer than the input
    values = np.arange(5, dtype="float32").reshape(5, 1, 1) + 1
    real_tokens = RealTokens(mask, for_training=True)
    rows = real_tokens.pack(values)
    layouts = real_tokens.unpack_for_attention(rows)
    assert [tuple(layout.shape) for layout in layouts] == [(2, 1, 1)] * ATTENTION_GROUPS
    np.testing.assert_array_equal(real_tokens.pack_attention_output(layouts).numpy(), rows.numpy())


def test_training_gradients_of_the_length_groups_are_autodiffs():
    """`unpack_for_attention`'s gradient is autodiff's for upstream gradients that are zero at the padding, as the
    attention's are; `pack_attention_output`'s is autodiff's (zeros at the padding)."""
    mask, values, real_tokens, rows = _grouped()
    tokens = int(mask.sum())
    rng = np.random.default_rng(6)
    upstreams = [_expected_layout(mask, rng.standard_normal(values.shape).astype("float32"), members, length)
                 for members, length in _GROUPS]
    rows_tensor = tf.constant(rows)
    with tf.GradientTape() as tape:
        tape.watch(rows_tensor)
        layouts = real_tokens.unpack_for_attention(rows_tensor)
    gradient = tape.gradient(layouts, rows_tensor, output_gradients=[tf.constant(u) for u in upstreams]).numpy()
    # autodiff's: each real token's row gets its own position's upstream gradient
    expected = np.zeros_like(rows)
    position_of = {}  # sequence -> (group, index in it)
    for group, (members, _) in enumerate(_GROUPS):
        position_of.update({member: (group, index) for index, member in enumerate(members)})
    row = 0
    for sequence, length in enumerate(_GROUPED_LENGTHS):
        group, index = position_of[sequence]
        expected[0, row:row + length] = upstreams[group][index, :length]
        row += length
    assert row == tokens
    np.testing.assert_array_equal(gradient, expected)

    layouts = [tf.constant(_expected_layout(mask, values, members, length)) for members, length in _GROUPS]
    upstream_rows = rng.standard_normal(rows.shape).astype("float32")
    with tf.GradientTape() as tape:
        tape.watch(layouts)
        packed = real_tokens.pack_attention_output(layouts)
    gradients = tape.gradient(packed, layouts, output_gradients=tf.constant(upstream_rows))
    padded_upstream = RealTokens(mask).unpack(upstream_rows[:, :tokens])  # (6, 5, 3) zeros at the padding
    for got, (members, length) in zip(gradients, _GROUPS):
        np.testing.assert_array_equal(got.numpy(), _expected_layout(mask, np.asarray(padded_upstream), members,
                                                                    length))
