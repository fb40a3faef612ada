"""The reader of a user's CSV, TSV and JSON-lines files: columns by name with their defaults, labels as read,
one-line errors naming the file, line and column, and writing a file back with added columns."""

import json

import pytest

from official_bert.data.labeled_text_files import Columns, read_labeled_texts, write_with_columns


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_csv_with_its_own_columns_quotes_and_blank_lines(tmp_path):
    path = _write(tmp_path, "reviews.csv", 'verdict,review,id\ngood,"lovely, ""moving""\nfilm",1\n\nbad,dull,2\n')
    examples = read_labeled_texts(path, Columns(text="review", label="verdict"))
    assert examples.text_a == ['lovely, "moving"\nfilm', "dull"] and examples.text_b is None
    assert examples.labels == ["good", "bad"] and examples.lines == [2, 5]
    assert examples.header == ["verdict", "review", "id"] and examples.file_format == "csv"


@pytest.mark.parametrize("name, text, message", [
    ("a.csv", 'text,label\nx,y\n\nz,w\n', "a.csv:3: empty line; expected a row of 2 fields"),
    ("a.csv", '\ntext,label\nx,y\n', "a.csv:1: empty line; expected the header row"),
    ("a.tsv", 'text\tlabel\nx\ty\n\n', "a.tsv:3: empty line; expected a row of 2 fields"),
    ("a.jsonl", '{"text": "x", "label": "y"}\n  \n', "a.jsonl:2: empty line; expected one JSON object a line")])
def test_a_blank_line_is_an_error_naming_it_when_not_skipped(tmp_path, name, text, message):
    path = _write(tmp_path, name, text)
    assert len(read_labeled_texts(path)) == 1 + ("z,w" in text)  # skipped by default: every example keeps its line
    with pytest.raises(ValueError) as error:
        read_labeled_texts(path, skip_blank=False)
    assert str(error.value) == f"{tmp_path}/{message}"


def test_a_blank_line_inside_a_quoted_cell_is_text_not_a_blank_line(tmp_path):
    path = _write(tmp_path, "a.csv", 'text,label\n"first\n\nthird",y\nz,w\n')
    examples = read_labeled_texts(path, skip_blank=False)
    assert examples.text_a == ["first\n\nthird", "z"] and examples.lines == [2, 5]


def test_default_columns_and_pairs(tmp_path):
    tsv = _write(tmp_path, "pairs.tsv", 'sentence1\tsentence2\tlabel\tx\n"a\tb "c"\t1\tz\n')
    examples = read_labeled_texts(tsv)  # TSV: no quoting
    assert examples.text_a == ['"a'] and examples.text_b == ['b "c"'] and examples.labels == ["1"]
    assert read_labeled_texts(tsv, pair=False).text_b is None
    jsonl = _write(tmp_path, "a.jsonl", '{"text": "x", "label": 3}\n\n{"text": "y", "label": 2.5, "extra": 1}\n')
    examples = read_labeled_texts(jsonl)
    assert examples.text_a == ["x", "y"] and examples.labels == ["3", 2.5] and examples.lines == [1, 3]
    assert read_labeled_texts(jsonl, labeled=False).labels is None


def test_multi_label_cells_and_lists(tmp_path):
    csv_path = _write(tmp_path, "m.csv", "text,label\na, x ; y;x\nb,\n")
    assert read_labeled_texts(csv_path, multi_label=True).labels == [["x", "y"], []]
    jsonl = _write(tmp_path, "m.jsonl", '{"text": "a", "label": ["x", 2]}\n{"text": "b", "label": []}\n')
    assert read_labeled_texts(jsonl, multi_label=True).labels == [["x", "2"], []]


@pytest.mark.parametrize("name,text,kwargs,message", [
    ("a.csv", "review,label\nx,y\n", {}, "a.csv:1: no column 'text' or 'sentence' or 'sentence1' (columns: review, "
     "label); name the text column with --text_column"),
    ("a.csv", "text,label\nx,y\n", {"columns": Columns(label="verdict")},
     "a.csv:1: no column 'verdict' (columns: text, label)"),
    ("a.csv", "text,label\nx,y\nhello, world,z\n", {},
     "a.csv:3: 3 fields, but the header has 2 (a field with a comma must be in double quotes)"),
    ("a.csv", 'text,label\n"x"y,z\n', {}, "a.csv:2: not valid CSV ("),
    ("a.csv", "text,label\nx, \n", {}, "a.csv:2: column 'label' is empty; every example needs a label"),
    ("a.csv", "text,label\nx,y\n", {"pair": True}, "a.csv:1: no column 'text_pair' or 'sentence2'"),
    ("a.csv", "", {}, "a.csv: the file is empty; expected a header row"),
    ("a.csv", "text,label,text\nx,y,z\n", {}, "a.csv:1: the header names the column 'text' twice"),
    ("a.jsonl", '{"text": "x", "label": "y"}\n{"text": "x", "label": "y"\n', {},
     "a.jsonl:2: not valid JSON (Expecting ',' delimiter at column 27); expected one JSON object a line"),
    ("a.jsonl", '{"text":"a","label":"b"\n', {},
     "a.jsonl:1: not valid JSON (Expecting ',' delimiter at column 24); expected one JSON object a line"),
    ("a.jsonl", '{"text":"a","label":"b"\r\n', {}, "a.jsonl:1: not valid JSON (Expecting ',' delimiter at column 24)"),
    ("a.jsonl", '["x", "y"]\n', {}, 'a.jsonl:1: expected a JSON object ({"text": ..., "label": ...}), got a list'),
    ("a.jsonl", '{"text": "x", "label": "y"}\n{"label": "y"}\n', {}, "a.jsonl:2: no field 'text' (fields: label)"),
    ("a.jsonl", '{"text": 7, "label": "y"}\n', {}, "a.jsonl:1: field 'text' is a number (7); expected a string"),
    ("a.jsonl", '{"text": "x", "label": true}\n', {}, "a.jsonl:1: field 'label' is a boolean; expected a label"),
    ("a.jsonl", '{"text": "x", "label": ["a"]}\n', {},
     "a.jsonl:1: field 'label' is a list; one label an example expected (several: pass --multi_label)"),
    ("a.jsonl", '{"text": "x", "label": "a"}\n', {"multi_label": True},
     "a.jsonl:1: field 'label' is a string; expected a list of labels (multi-label)"),
    ("a.txt", "x\n", {}, "a.txt: unknown format '.txt'; name the file .csv, .tsv or .jsonl (JSON lines)"),
])
def test_bad_files_are_one_line_errors(tmp_path, name, text, kwargs, message):
    path = _write(tmp_path, name, text)
    with pytest.raises(ValueError) as error:
        read_labeled_texts(path, **kwargs)
    assert str(error.value).startswith(f"{tmp_path}/{message}") and "\n" not in str(error.value)


def test_not_utf8_and_missing_files(tmp_path):
    path = tmp_path / "a.csv"
    path.write_bytes("text,label\ncaf\u00e9,x\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"a.csv:2: not UTF-8 text \(byte 0xe9 at column 4\)"):
        read_labeled_texts(str(path))
    with pytest.raises(FileNotFoundError, match="no such file: .*missing.csv"):
        read_labeled_texts(str(tmp_path / "missing.csv"))


def test_written_back_with_added_columns(tmp_path):
    csv_path = _write(tmp_path, "t.csv", 'id,text\n1,"a, b"\n2,c\n')
    examples = read_labeled_texts(csv_path, labeled=False)
    out = tmp_path / "out.csv"
    write_with_columns(examples, out, {"predicted_labels": [["x", "y"], []], "probability": [0.25, 1.0]})
    assert out.read_text(encoding="utf-8") == 'id,text,predicted_labels,probability\n1,"a, b",x;y,0.250000\n2,c,,1.000000\n'

    jsonl = _write(tmp_path, "t.jsonl", '{"text": "\u00e9", "n": 1}\n')
    examples = read_labeled_texts(jsonl, labeled=False)
    write_with_columns(examples, tmp_path / "out.jsonl", {"predicted_label": ["x"]})
    assert json.loads((tmp_path / "out.jsonl").read_text(encoding="utf-8")) == {"text": "\u00e9", "n": 1,
                                                                                "predicted_label": "x"}
    with pytest.raises(ValueError, match="t.jsonl: already has a field 'n', which the predictions would replace"):
        write_with_columns(examples, tmp_path / "again.jsonl", {"n": [2]})
    assert not (tmp_path / "again.jsonl").exists()
