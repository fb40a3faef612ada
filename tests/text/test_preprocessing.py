"""Preprocessor's count of the examples packing cuts, and the warning that names them."""

import logging

import pytest

from official_bert.text.preprocessing import report_truncated, text_preprocessor


@pytest.fixture(scope="module")
def preprocessor(shared_data):
    return text_preprocessor(str(shared_data / "bert-vocab" / "bert-base-uncased-vocab.txt"), True, 8)


def test_count_truncated_counts_the_examples_whose_pieces_exceed_the_length(preprocessor):
    texts = ["a cat", "one two three four five", "one two three four five six", ""]  # 8 = [CLS] 6 pieces [SEP]
    assert preprocessor.count_truncated([texts]) == 0
    assert preprocessor.count_truncated([texts + ["one two three four five six seven"]]) == 1
    # A pair keeps 5 pieces between [CLS], [SEP] and [SEP]; counted a batch at a time as in one.
    pairs = [["a b c", "a b", "a", "a b c d e f"], ["d e", "c d e f", "", "x"]]
    assert preprocessor.count_truncated(pairs) == preprocessor.count_truncated(pairs, batch_size=1) == 2


def test_report_truncated_warns_with_the_count_and_the_setting_only_when_some_are_cut(preprocessor, caplog):
    with caplog.at_level(logging.WARNING, logger="official_bert.text.preprocessing"):
        assert report_truncated(preprocessor, [["a cat"] * 3], "texts", "seq_length=8") == 0
        assert caplog.messages == []
        assert report_truncated(preprocessor, [["a cat", "one two three four five six seven"]], "texts",
                                "seq_length=8") == 1
    assert caplog.messages == ["1 of 2 texts (50.0%) do not fit seq_length=8 and are cut, the longest text first"]
