"""CoNLL reader: real CoNLL-2003 counts, IOB1 -> IOB2, label set, and errors naming file and line."""

from collections import Counter

import pytest

from official_bert.data.conll import conll_file_path, iob1_to_iob2, label_names, read_conll
from official_bert.metrics.tagging import get_entities

LABELS = ["O", "B-LOC", "B-MISC", "B-ORG", "B-PER", "I-LOC", "I-MISC", "I-ORG", "I-PER"]


def _entity_counts(tags):
    return dict(Counter(entity[0] for sentence in tags for entity in get_entities(sentence)))


@pytest.mark.parametrize("split,sentences,words,entities", [
    ("train", 14041, 203621, {"PER": 6600, "ORG": 6321, "LOC": 7140, "MISC": 3438}),
    ("test", 3453, 46435, {"PER": 1617, "ORG": 1661, "LOC": 1668, "MISC": 702}),
])
def test_conll2003_counts_match_sources_and_iob1_converts_to_the_iob2_files(shared_data, split, sentences, words,
                                                                            entities):
    iob2 = read_conll(conll_file_path(str(shared_data / "conll2003" / "hf-iob2"), split))
    iob1 = read_conll(conll_file_path(str(shared_data / "conll2003" / "original-iob1"), split), tag_scheme="iob1")
    assert len(iob2) == sentences and sum(map(len, iob2.words)) == words
    assert _entity_counts(iob2.tags) == entities
    assert iob1.words == iob2.words and iob1.tags == iob2.tags
    assert label_names(iob2.tags) == LABELS
    assert iob2.words[0][:3] == (["EU", "rejects", "German"] if split == "train" else ["SOCCER", "-", "JAPAN"])


def test_layout_docstart_columns_and_line_numbers(tmp_path):
    path = tmp_path / "x.txt"
    path.write_text("-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\nrejects O\n\n\n-DOCSTART- -X- O\n"
                    "Peter B-PER\nBlackburn\tI-PER  \n")
    examples = read_conll(str(path))
    assert examples.words == [["EU", "rejects"], ["Peter", "Blackburn"]]
    assert examples.tags == [["B-ORG", "O"], ["B-PER", "I-PER"]]
    assert examples.lines == [[3, 4], [8, 9]]


def test_iob1_to_iob2():
    assert iob1_to_iob2(["I-PER", "I-PER", "O", "I-LOC", "B-LOC", "I-LOC", "I-ORG"]) == [
        "B-PER", "I-PER", "O", "B-LOC", "B-LOC", "I-LOC", "B-ORG"]
    assert iob1_to_iob2(["B-PER", "I-PER"]) == ["B-PER", "I-PER"]


def test_label_names_put_o_first():
    assert label_names([["I-PER", "B-PER"], ["O", "B-LOC"]]) == ["O", "B-LOC", "B-PER", "I-PER"]


def test_missing_tag_names_file_and_line(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_text("EU B-ORG\n\nrejects\n")
    with pytest.raises(ValueError, match=rf"{path}:3: no tag after the word 'rejects'"):
        read_conll(str(path))


def test_malformed_tag_names_file_and_line(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_text("EU ORG\n")
    with pytest.raises(ValueError, match=rf"{path}:1: tag 'ORG' is not O, B-<type> or I-<type>"):
        read_conll(str(path))


def test_tag_outside_the_label_set_names_file_and_line(tmp_path):
    path = tmp_path / "test.txt"
    path.write_text("EU B-ORG\n\nPeter B-PER\nParis I-GPE\n")
    assert len(read_conll(str(path))) == 2  # no label set: any well-formed tag
    with pytest.raises(ValueError, match=rf"{path}:4: tag 'I-GPE' is not in the label set"):
        read_conll(str(path), label_set=LABELS)
    # IOB1 input is checked after conversion: "I-GPE" there is "B-GPE"
    with pytest.raises(ValueError, match=rf"{path}:4: tag 'B-GPE' is not in the label set"):
        read_conll(str(path), tag_scheme="iob1", label_set=LABELS)


def test_split_files_and_errors(tmp_path):
    (tmp_path / "eng.testa").write_text("a O\n")
    assert conll_file_path(str(tmp_path), "valid").endswith("eng.testa")
    with pytest.raises(FileNotFoundError, match="CoNLL test: none of test.txt, eng.testb"):
        conll_file_path(str(tmp_path), "test")
    with pytest.raises(ValueError, match="split must be one of"):
        conll_file_path(str(tmp_path), "dev2")
    with pytest.raises(ValueError, match="tag_scheme must be one of"):
        read_conll(str(tmp_path / "eng.testa"), tag_scheme="bioes")


def test_iob1_files_read_as_iob2_are_refused_naming_the_file(shared_data, tmp_path):
    path = tmp_path / "eng.train"
    path.write_text("EU I-ORG\nrejects O\nGerman I-MISC\n\nPeter I-PER\nBlackburn I-PER\n")
    with pytest.raises(ValueError, match=rf"{path}: the tags are IOB1, not IOB2: I-<type> opens 3 entities \(first "
                                         r"at line 1: 'I-ORG' at a sentence start\) and B-<type> none; pass "
                                         r"--tag_scheme=iob1"):
        read_conll(str(path))
    assert read_conll(str(path), tag_scheme="iob1").tags == [["B-ORG", "O", "B-MISC"], ["B-PER", "I-PER"]]
    # The original CoNLL-2003 files are IOB1 with a few B- tags (between adjacent entities of one type): refused too.
    original = conll_file_path(str(shared_data / "conll2003" / "original-iob1"), "test")
    with pytest.raises(ValueError, match=rf"{original}: the tags are IOB1, not IOB2: I-<type> opens 5628 entities "
                                         r"\(first at line 3: 'I-LOC' after 'O'\) and B-<type> none"):
        read_conll(original)


def test_iob2_files_with_some_entities_opened_by_i_are_read_with_a_warning(shared_data, tmp_path, caplog):
    path = tmp_path / "train.txt"
    path.write_text("EU B-ORG\nrejects O\nGerman I-MISC\n\nPeter I-PER\nBlackburn I-PER\nParis I-LOC\n")
    with caplog.at_level("WARNING", logger="official_bert.data.conll"):
        examples = read_conll(str(path))
    assert examples.tags[0] == ["B-ORG", "O", "I-MISC"]  # read as they are
    assert [r.getMessage() for r in caplog.records] == [
        f"{path}: I-<type> opens 3 entities (first at line 3: 'I-MISC' after 'O') in an IOB2 file (B-<type> opens 1); "
        "they are read as they are (--tag_scheme=iob1 would read each such I-<type> as B-<type>)"]
    caplog.clear()
    with caplog.at_level("WARNING", logger="official_bert.data.conll"):
        read_conll(str(path), tag_scheme="iob1")
        read_conll(conll_file_path(str(shared_data / "conll2003" / "hf-iob2"), "test"))  # the IOB2 copy is clean
    assert not caplog.records
