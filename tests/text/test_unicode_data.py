"""The shipped code-point tables equal a fresh measurement, and the compiled normalizer applies them."""

import pytest
import tensorflow as tf
import tensorflow_text as tf_text

from official_bert.text import normalizer_model, unicode_data
import regenerate_unicode_data


@pytest.mark.slow
def test_shipped_tables_equal_fresh_measurement():
    pytest.importorskip("tokenizers")
    assert regenerate_unicode_data.measure() == unicode_data.load_raw()


@pytest.mark.slow
@pytest.mark.parametrize("lower_case", [True, False])
def test_compiled_normalizer_maps_every_code_point(tokenizer, lower_case):
    mapping, unfixable = unicode_data.normalizer_table(lower_case, tokenizer.get_vocab())
    assert unfixable == []
    normalizer = tf_text.FastBertNormalizer(model_buffer=normalizer_model.build_normalizer_model(mapping))
    code_points = regenerate_unicode_data.ALL_CODE_POINTS
    out = normalizer.normalize(tf.constant(["<" + chr(cp) + ">" for cp in code_points])).numpy()
    wrong = [cp for cp, text in zip(code_points, out) if text.decode() != "<" + mapping.get(cp, chr(cp)) + ">"]
    assert wrong == []


def test_double_array_lookup_of_arbitrary_keys():
    mapping = {0x41: "a", 0xE9: "e", 0x4E2D: " 中 ", 0x1F600: "", 0: "", 0x10FFFF: "xyz"}
    normalizer = tf_text.FastBertNormalizer(model_buffer=normalizer_model.build_normalizer_model(mapping))
    text = "A\u00e9\u4e2d\U0001F600\x00\U0010FFFFB"
    assert normalizer.normalize(tf.constant([text])).numpy()[0].decode() == "ae 中 xyzB"
