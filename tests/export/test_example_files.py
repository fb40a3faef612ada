"""`export.example_files`: the examples of an `export.predict --input_file`, in every format, with their lines."""

import json

import pytest

from export.example_files import read_examples

PAIR = ["text", "text_b"]
EXAMPLES = [["The cat sat.", "A cat was sitting."], ["It rained all day, in Paris.", "Paris was dry."],
            ["Caf\u00e9 au \"lait\".", "\u00c9t\u00e9."]]


def _read(tmp_path, name, text, order=PAIR, columns=None):
    (tmp_path / name).write_text(text, encoding="utf-8")
    return read_examples(str(tmp_path / name), order, columns)


def _quoted(text):
    return '"' + text.replace('"', '""') + '"'


@pytest.mark.parametrize("name, text", [
    ("pairs.csv", "id,text,text_b\n" + "".join(f"{i},{_quoted(a)},{b}\n" for i, (a, b) in enumerate(EXAMPLES))),
    ("pairs.tsv", "text_b\ttext\n" + "".join(f"{b}\t{a}\n" for a, b in EXAMPLES)),
    ("pairs.txt", "".join(f"{a} ||| {b}\n" for a, b in EXAMPLES)),
    ("pairs.jsonl", json.dumps({"id": 1, "text_b": EXAMPLES[0][1], "text": EXAMPLES[0][0]}) + "\n"
     + "".join(json.dumps(texts) + "\n" for texts in EXAMPLES[1:]))])
def test_each_format_gives_the_texts_in_the_inputs_order_with_their_lines(tmp_path, name, text):
    """The formats the training and feature commands read; other columns and fields are ignored."""
    examples = _read(tmp_path, name, text)
    assert [texts for _, texts in examples] == EXAMPLES
    assert [line for line, _ in examples] == ([2, 3, 4] if name.endswith("sv") else [1, 2, 3])


def test_columns_name_the_inputs_in_order(tmp_path):
    mrpc = "Quality\t#1 String\t#2 String\n" + "".join(f"1\t{a}\t{b}\n" for a, b in EXAMPLES)  # MRPC's columns
    assert [t for _, t in _read(tmp_path, "dev.tsv", mrpc, columns=["#1 String", "#2 String"])] == EXAMPLES
    fields = "".join(json.dumps({"b": b, "a": a}) + "\n" for a, b in EXAMPLES)
    assert [t for _, t in _read(tmp_path, "pairs.jsonl", fields, columns=["a", "b"])] == EXAMPLES
    assert [t for _, t in _read(tmp_path, "pairs.jsonl", fields, columns=[" a", "b "])] == EXAMPLES  # --columns="a, b"
    assert [t for _, t in _read(tmp_path, "dev.tsv", mrpc, columns=["#1 String", " #2 String "])] == EXAMPLES
    with pytest.raises(ValueError, match=r"1 column\(s\) \(a\) for the model's 2 input\(s\) \(text, text_b\)"):
        _read(tmp_path, "pairs.jsonl", fields, columns=["a"])
    with pytest.raises(ValueError, match=r"--columns names the columns of a .csv, .tsv or .jsonl file; .*pairs.txt "
                                         r"is a .txt file"):
        _read(tmp_path, "pairs.txt", "a ||| b\n", columns=["a", "b"])


def test_a_multiple_choice_model_reads_what_run_multiple_choice_reads(tmp_path, shared_data):
    from official_bert.data.multiple_choice import read_multiple_choice

    swag = str(shared_data / "swag" / "sample.jsonl")  # SWAG's rows, with labels (ignored)
    expected = read_multiple_choice(swag)
    examples = read_examples(swag, ["context", "choices"], choices=True)
    assert [texts for _, texts in examples] == [[c, *cs] for c, cs in zip(expected.contexts, expected.choices)]
    (tmp_path / "mine.jsonl").write_text(json.dumps({"context": "A drum line", "choices": ["passes by.", "sings."]})
                                         + "\n" + json.dumps({"question": "Which flies?", "choices": ["a", "b", "c"]}))
    assert [t for _, t in read_examples(str(tmp_path / "mine.jsonl"), ["context", "choices"], choices=True)] == [
        ["A drum line", "passes by.", "sings."], ["Which flies?", "a", "b", "c"]]
    csv_file = tmp_path / "swag.csv"  # a quoted field over two lines: the next row's line is 4
    csv_file.write_text('sent1,sent2,ending0,ending1,ending2,ending3\n"A drum\nline",goes,by.,home.,on.,off.\n'
                        'A cat,sits,down.,up.,in.,out.\n')
    assert [line for line, _ in read_examples(str(csv_file), ["context", "choices"], choices=True)] == [2, 4]
    (tmp_path / "swag.txt").write_text("A ||| B\n")
    with pytest.raises(ValueError, match=r"swag.txt: a multiple-choice model reads SWAG's .csv or .jsonl"):
        read_examples(str(tmp_path / "swag.txt"), ["context", "choices"], choices=True)


@pytest.mark.parametrize("name, text, message", [
    ("empty.txt", "A ||| B\n\nC ||| D\n", r"empty.txt:2: empty line"),
    ("columns.csv", "text,label\nA,1\n",
     r"columns.csv:1: no column 'text_b' \(columns: text, label\); name the columns for text, text_b with --columns"),
    ("fields.jsonl", '["A", "B"]\n{"text": "A", "id": 3}\n',
     r"fields.jsonl:2: no field text_b \(fields: text, id\); name the columns for text, text_b with --columns"),
    ("broken.jsonl", '["A", "B"\n', r"broken.jsonl:1: not valid JSON"),
    ("column.jsonl", '{"text":"a","text_b":"b"\n', r"column.jsonl:1: not valid JSON \(Expecting ',' delimiter at "
     r"column 25\)"),  # the column within the line, not column 1 of the next
    ("numbers.jsonl", "[1, 2]\n", r"numbers.jsonl:1: expected an object with the fields text, text_b, or an array"),
    ("fields.csv", "text,text_b\nA,B,C\n", r"fields.csv:2: 3 fields, but the header has 2"),
    ("pairs.xlsx", "", r"pairs.xlsx: unknown format '.xlsx'; name the file .txt")])
def test_a_malformed_file_is_an_error_that_names_its_line(tmp_path, name, text, message):
    with pytest.raises(ValueError, match=message):
        _read(tmp_path, name, text)


@pytest.mark.parametrize("name, text, message", [
    ("blank.csv", "text,text_b\na,b\n\nc,d\n", r"blank.csv:3: empty line; expected a row of 2 fields$"),
    ("blank.tsv", "text\ttext_b\na\tb\n\n", r"blank.tsv:3: empty line; expected a row of 2 fields$"),
    ("blank.jsonl", '["a", "b"]\n \n["c", "d"]\n', r"blank.jsonl:2: empty line; expected an object with the "
     r"fields text, text_b, or an array of strings$")])
def test_a_blank_line_is_an_error_in_every_format_so_that_answers_match_the_rows(tmp_path, name, text, message):
    with pytest.raises(ValueError, match=message):
        _read(tmp_path, name, text)


def test_a_blank_line_in_a_quoted_csv_cell_is_text(tmp_path):
    examples = _read(tmp_path, "quoted.csv", 'text,text_b\n"a\n\nb",c\nd,e\n')
    assert examples == [(2, ["a\n\nb", "c"]), (5, ["d", "e"])]


def test_a_blank_line_in_a_multiple_choice_file_is_an_error(tmp_path):
    row = json.dumps({"context": "A drum line", "choices": ["passes by.", "sings."]})
    (tmp_path / "mine.jsonl").write_text(row + "\n\n" + row + "\n")
    with pytest.raises(ValueError, match=r"mine.jsonl:2: empty line"):
        read_examples(str(tmp_path / "mine.jsonl"), ["context", "choices"], choices=True)


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such input file: .*nowhere.csv"):
        read_examples(str(tmp_path / "nowhere.csv"), PAIR)
