"""Users' text files read as UTF-8: a file that is not UTF-8 is one error naming the file, the line and the column,
from the helper and from every reader of a user's file (GLUE TSV, CoNLL, SQuAD JSON, multiple-choice JSON lines and
CSV, feature-extraction input, pre-training corpora, WordPiece vocab, TFLite representative texts)."""

import json

import pytest

from official_bert.text_files import holds_text, read_lines, read_text

LATIN1 = "café".encode("latin-1")  # b"caf\xe9": what Windows-1252 / Latin-1 editors save


def _expected(path, line, column):
    return f"{path}:{line}: not UTF-8 text (byte 0xe9 at column {column}); save the file as UTF-8"


def test_read_lines_numbers_lines_keeps_their_ends_and_drops_a_byte_order_mark(tmp_path):
    path = tmp_path / "a.txt"
    path.write_bytes(b"\xef\xbb\xbffirst\r\nsec\rond\n\nlast")  # a lone "\r" ends a line, as in Python's open()
    assert list(read_lines(str(path))) == [(1, "first\r\n"), (2, "sec\r"), (3, "ond\n"), (4, "\n"), (5, "last")]
    assert [line for _, line in read_lines(str(path))] == open(path, encoding="utf-8-sig", newline="").readlines()


@pytest.mark.parametrize("content", [b"one\rtwo\rthree\r", b"\xef\xbb\xbfone\rtwo\rthree", b"one\r\rtwo\r\nthree\n",
                                     b"one\r\ntwo\r\nthree\r\n", b"one\ntwo\r\r\nthree\r\r"])
def test_old_mac_line_ends_are_line_ends_as_pythons_universal_newlines(tmp_path, content):
    """A file saved with "\\r" line ends (old Mac) is not read as one line; "\\r\\n" stays one line end."""
    path = tmp_path / "cr.txt"
    path.write_bytes(content)
    lines = list(read_lines(str(path)))
    expected = open(path, encoding="utf-8-sig", newline="").readlines()
    assert [line for _, line in lines] == expected and [n for n, _ in lines] == list(range(1, len(expected) + 1))
    assert [line.strip() for line in expected if line.strip()] == ["one", "two", "three"]


def test_old_mac_line_ends_are_counted_in_errors_and_by_the_readers(tmp_path):
    from official_bert.data.labeled_text_files import read_labeled_texts
    from official_bert.data.text_lines import read_text_lines

    path = tmp_path / "input.txt"
    path.write_bytes(b"one\rtwo ||| 2\rthree\r")  # extract_features' input: three examples, not one
    assert list(read_text_lines(str(path))) == [("one", None), ("two", "2"), ("three", None)]
    path.write_bytes(b"fine\r\nok\r" + LATIN1 + b"\r")
    with pytest.raises(ValueError) as error:
        list(read_lines(str(path)))
    assert str(error.value) == _expected(path, 3, 4)
    json_path = tmp_path / "a.json"
    json_path.write_bytes(b'{"a":\r "' + LATIN1 + b'"}\r')
    with pytest.raises(ValueError) as error:
        read_text(str(json_path))
    assert str(error.value) == _expected(json_path, 2, 6)
    csv_path = tmp_path / "train.csv"  # a quoted cell keeps its "\r" as text, as Python's csv module reads it
    csv_path.write_bytes(b'text,label\rgood,1\r"two\rlines",0\rbad,0\r')
    table = read_labeled_texts(str(csv_path))
    assert table.text_a == ["good", "two\rlines", "bad"] and table.labels == ["1", "0", "0"]
    assert table.lines == [2, 3, 5]


def test_a_line_that_is_not_utf8_is_named_with_its_line_and_column_in_characters(tmp_path):
    path = tmp_path / "a.txt"
    path.write_bytes(b"fine\n" + "Zürich ".encode() + LATIN1 + b"\n")  # ü is one character of two bytes
    lines = read_lines(str(path))
    assert next(lines) == (1, "fine\n")  # lazily: the good lines come first
    with pytest.raises(ValueError) as error:
        next(lines)
    assert str(error.value) == _expected(path, 2, 11)


def test_read_text_names_the_line_and_column_of_a_whole_file(tmp_path):
    path = tmp_path / "a.json"
    path.write_bytes(b'\xef\xbb\xbf{"a":\n "' + LATIN1 + b'"}\n')
    with pytest.raises(ValueError) as error:
        read_text(str(path))
    assert str(error.value) == _expected(path, 2, 6)
    path.write_bytes(LATIN1)  # on the first line, after a byte-order mark or not
    with pytest.raises(ValueError, match=r"a\.json:1: not UTF-8 text \(byte 0xe9 at column 4\)"):
        read_text(str(path))
    path.write_bytes(b'\xef\xbb\xbf{"a": "\xc3\xa9"}')
    assert json.loads(read_text(str(path))) == {"a": "é"}


def test_holds_text_reads_the_whole_file_in_chunks_split_inside_characters(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("\n\n  \nZürich 東京\n", encoding="utf-8")
    assert all(holds_text(path, chunk_bytes=size) for size in (1, 2, 3, 1 << 24))  # a chunk ends inside 東
    path.write_bytes(b"\xef\xbb\xbf\n \t\n")
    assert not holds_text(path, chunk_bytes=2)
    path.write_bytes("ok\n\nZürich\nno caf\u00e9 here\n".encode("utf-8")[:-1] + "\u00e9\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"corpus.txt:4: not UTF-8 text \(byte 0xe9 at column 13\)"):
        holds_text(path, chunk_bytes=4)


def test_a_utf16_file_is_named_as_such(tmp_path):
    path = tmp_path / "notepad.txt"
    path.write_bytes("a line\n".encode("utf-16"))
    message = f"{path}:1: not UTF-8 text (a UTF-16 byte-order mark); save the file as UTF-8"
    with pytest.raises(ValueError) as error:
        list(read_lines(str(path)))
    assert str(error.value) == message
    with pytest.raises(ValueError) as error:
        read_text(str(path))
    assert str(error.value) == message


def _glue(path):
    from official_bert.data.glue import read_glue_tsv

    return read_glue_tsv("SST-2", str(path), "train")


def _conll(path):
    from official_bert.data.conll import read_conll

    return read_conll(str(path))


def _squad(path):
    from official_bert.data.squad_examples import read_squad_json

    return read_squad_json(str(path))


def _multiple_choice(path):
    from official_bert.data.multiple_choice import read_multiple_choice

    return read_multiple_choice(str(path))


def _text_lines(path):
    from official_bert.data.text_lines import read_text_lines

    return list(read_text_lines(str(path)))


def _corpus(path):
    from official_bert.data.sentence_corpus import read_documents

    return list(read_documents([str(path)]))


def _vocab(path):
    from official_bert.text.vocab import load_vocab

    return load_vocab(str(path))


def _representative(path):
    from export.tflite import read_representative_file

    return read_representative_file(str(path))


_SQUAD_HEAD = b'{"version": "1.1", "data": [{"title": "t", "paragraphs": [\n'

# reader, file name, the file's bytes (line 2 holds "café" in Latin-1), the column of its é.
READERS = [
    (_glue, "train.tsv", b"sentence\tlabel\n" + LATIN1 + b" is good\t1\n", 4),
    (_conll, "train.txt", b"EU B-ORG\n" + LATIN1 + b" O\n", 4),
    (_squad, "dev.json", _SQUAD_HEAD + b'{"context": "' + LATIN1 + b'", "qas": []}]}]}\n', 17),
    (_multiple_choice, "train.jsonl", b'{"context": "A.", "choices": ["x"], "label": 0}\n'
                                      b'{"context": "' + LATIN1 + b'", "choices": ["x"], "label": 0}\n', 17),
    (_multiple_choice, "train.csv", b"sent1,sent2,ending0,ending1,ending2,ending3,label\n"
                                    b"A.," + LATIN1 + b",a,b,c,d,0\n", 7),
    (_text_lines, "input.txt", b"Who was Jim Henson ?\n" + LATIN1 + b" ||| latte\n", 4),
    (_corpus, "corpus.txt", b"A sentence.\n" + LATIN1 + b" is here.\n", 4),
    (_vocab, "vocab.txt", b"[PAD]\n" + LATIN1 + b"\n", 4),
    (_representative, "texts.txt", b"A sentence.\tAnother.\n" + LATIN1 + b"\tlatte\n", 4),
]


@pytest.mark.parametrize("reader, name, content, column", READERS,
                         ids=[f"{reader.__name__[1:]}-{name}" for reader, name, _, _ in READERS])
def test_every_reader_of_a_users_file_names_the_file_line_and_column(tmp_path, reader, name, content, column):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(ValueError) as error:
        reader(path)
    assert str(error.value) == _expected(path, 2, column)
    # The same file in UTF-8 reads.
    path.write_bytes(content.replace(LATIN1, "café".encode()))
    reader(path)
