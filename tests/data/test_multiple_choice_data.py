"""Multiple-choice readers (SWAG CSV, SWAG JSON lines, generic JSON lines, TFDS HellaSwag records) and the in-graph
packing: the real SWAG sample, bad rows named by file, line and field, test files without labels, questions without
a context, pairs packed as transformers' tokenizer packs them, missing choices as all-zero rows."""

import csv
import json

import numpy as np
import pytest
import tensorflow as tf

from official_bert.data.multiple_choice import (examples_from_tfds, load_tfds_multiple_choice, read_jsonl,
                                                read_multiple_choice, read_swag_csv)
from official_bert.data.multiple_choice_dataset import multiple_choice_dataset, pack_choices, padded_choices

SWAG_HEADER = ["", "video-id", "fold-ind", "startphrase", "sent1", "sent2", "gold-source", "ending0", "ending1",
               "ending2", "ending3", "label"]


@pytest.fixture(scope="module")
def sample_rows(shared_data):
    return [json.loads(line) for line in (shared_data / "swag" / "sample.jsonl").read_text().splitlines()]


def _write_swag_csv(path, rows, labeled=True):
    """SWAG's CSV layout (rowanz/swagaf's train.csv / val.csv; test.csv has no label column)."""
    header = SWAG_HEADER if labeled else SWAG_HEADER[:-1]
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        for i, row in enumerate(rows):
            values = {"": str(100 + i), "video-id": f"anetv_{i}", "fold-ind": str(i), "gold-source": "gold",
                      "startphrase": f"{row['sent1']} {row['sent2']}", **{k: str(v) for k, v in row.items()}}
            writer.writerow([values[name] for name in header])
    return path


def test_the_real_swag_sample_reads_as_run_swag_py_builds_it(shared_data, sample_rows):
    examples = read_multiple_choice(str(shared_data / "swag" / "sample.jsonl"))
    assert len(examples) == 10 and examples.max_choices == 4 and examples.chance_accuracy() == 0.25
    assert examples.labels.tolist() == [row["label"] for row in sample_rows]
    for i, row in enumerate(sample_rows):
        assert examples.contexts[i] == row["sent1"]
        assert examples.choices[i] == [f"{row['sent2']} {row[f'ending{k}']}" for k in range(4)]
    assert examples.choices[0][0] == "A drum line passes by walking down the street playing their instruments."


def test_swag_csv_with_and_without_labels(tmp_path, sample_rows):
    rows = [dict(sample_rows[0], sent1='He said, "Stop, now."'), *sample_rows[1:3]]  # quoted commas in a field
    train = read_swag_csv(str(_write_swag_csv(tmp_path / "train.csv", rows)))
    assert len(train) == 3 and train.labels.tolist() == [row["label"] for row in rows]
    assert train.contexts[0] == 'He said, "Stop, now."' and train.ids == ["100", "101", "102"]
    assert train.choices[2][1] == f"{rows[2]['sent2']} {rows[2]['ending1']}"
    test = read_multiple_choice(str(_write_swag_csv(tmp_path / "test.csv", rows, labeled=False)))
    assert test.labels is None and test.choices == train.choices


def test_generic_json_lines_with_any_number_of_choices(tmp_path):
    path = tmp_path / "generic.jsonl"
    rows = [{"context": "The cat sat on the mat.", "question": "Where is the cat?",
             "choices": ["on the mat", "in the tree"], "label": 0, "id": "q1"},
            {"context": "It rained all day.", "choices": ["We stayed in.", "We went out.", "We slept.", "Snow."],
             "label": 3},
            {"context": "One choice only.", "choices": ["Yes."], "label": 0}]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n", encoding="utf-8")  # a blank line is no row
    examples = read_jsonl(str(path))
    assert examples.choices == [["Where is the cat? on the mat", "Where is the cat? in the tree"],
                                ["We stayed in.", "We went out.", "We slept.", "Snow."], ["Yes."]]
    assert examples.labels.tolist() == [0, 3, 0] and examples.ids == ["q1", "1", "2"]
    assert examples.max_choices == 4 and examples.chance_accuracy() == pytest.approx((1 / 2 + 1 / 4 + 1) / 3)
    assert padded_choices(examples.choices).tolist()[2] == ["Yes.", "", "", ""]


def test_questions_without_a_context_are_the_first_segment(tmp_path):
    """CommonsenseQA's shape (a question and its choices, no context): the question is packed where a context would
    be, and each choice alone."""
    path = tmp_path / "commonsense_qa.jsonl"
    rows = [{"id": "075e483d", "question": "The sanctions against the school were a punishing blow. What did they "
             "ignore?", "choices": ["ignore", "enforce", "authoritarian", "yell at", "avoid"], "label": 0},
            {"question": "Where do fish live?", "context": "", "choices": ["water", "desert"], "label": 0},
            {"question": "Where?", "context": None, "choices": ["here", "there"], "label": 1},
            {"context": "The cat sat on the mat.", "question": "Where is the cat?", "choices": ["on the mat", "away"],
             "label": 0}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    examples = read_multiple_choice(str(path))
    assert examples.contexts == [rows[0]["question"], "Where do fish live?", "Where?", "The cat sat on the mat."]
    assert examples.choices == [rows[0]["choices"], ["water", "desert"], ["here", "there"],
                                ["Where is the cat? on the mat", "Where is the cat? away"]]
    assert examples.labels.tolist() == [0, 0, 1, 0] and examples.ids[0] == "075e483d"


@pytest.mark.parametrize("row, message", [
    ({"sent1": "A man walks.", "sent2": "He", "ending0": "runs.", "ending1": "sits.", "ending2": "eats.",
      "label": 0}, "2: field 'ending3' missing"),
    ({"sent1": "A man walks.", "sent2": "He", "ending0": "runs.", "ending1": " ", "ending2": "eats.",
      "ending3": "jumps.", "label": 0}, "2: field 'ending1' is empty"),
    ({"sent1": "A man walks.", "sent2": "He", "ending0": "runs.", "ending1": "sits.", "ending2": "eats.",
      "ending3": "jumps.", "label": 4}, r"2: field 'label' must be a choice index 0..3, got 4"),
    ({"context": "A.", "choices": ["x", ""], "label": 0}, r"2: field 'choices' \[1\] must be a non-empty string"),
    ({"context": "A.", "choices": "x y", "label": 0}, "2: field 'choices' must be a non-empty list"),
    ({"context": "A.", "choices": ["x", "y"], "label": "first"}, "2: field 'label' must be a choice index"),
    ({"context": 3, "choices": ["x", "y"], "label": 0}, "2: field 'context' must be a string"),
    ({"sent1": "A.", "sent2": "B", "ending0": "c", "ending1": "d", "ending2": "e", "ending3": "f"},
     "2: field 'label' is missing, but the file's first row has one"),
    ({"text": "no known fields"}, "2: field 'choices' missing"),
    ({"choices": ["x", "y"], "label": 0}, "2: fields 'context' and 'question' are both missing or empty"),
    ({"context": " ", "question": "", "choices": ["x", "y"], "label": 0},
     "2: fields 'context' and 'question' are both missing or empty"),
    ({"question": ["Why?"], "choices": ["x", "y"], "label": 0}, "2: field 'question' must be a string"),
    (["a list"], "2: expected a JSON object"),
])
def test_a_bad_json_row_names_the_file_line_and_field(tmp_path, sample_rows, row, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(sample_rows[0]) + "\n" + json.dumps(row) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=f"{path}:{message}"):
        read_multiple_choice(str(path))


def test_a_line_that_is_not_json_is_named_with_the_column_within_the_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"context": "A.", "choices": ["x"], "label": 0}\n{"context": \n', encoding="utf-8")
    with pytest.raises(ValueError, match=f"{path}:2: not valid JSON"):
        read_jsonl(str(path))
    path.write_text('{"context": "A.", "choices": ["x"]\n', encoding="utf-8")  # the newline is no part of the line
    with pytest.raises(ValueError, match=f"{path}:1: not valid JSON \\(Expecting ',' delimiter at column 35\\)"):
        read_jsonl(str(path))


def test_blank_lines_are_skipped_unless_asked_to_be_errors(tmp_path, sample_rows):
    jsonl = tmp_path / "rows.jsonl"
    jsonl.write_text(json.dumps(sample_rows[0]) + "\n\n" + json.dumps(sample_rows[1]) + "\n", encoding="utf-8")
    assert len(read_multiple_choice(str(jsonl))) == 2
    with pytest.raises(ValueError, match=f"^{jsonl}:2: empty line; expected one JSON object a line$"):
        read_multiple_choice(str(jsonl), skip_blank=False)
    quoted = _write_swag_csv(tmp_path / "quoted.csv", [dict(sample_rows[0], sent1="A\n\nB.")] + sample_rows[1:3])
    assert read_multiple_choice(str(quoted), skip_blank=False).contexts[0] == "A\n\nB."  # a quoted cell's blank line
    swag = _write_swag_csv(tmp_path / "val.csv", sample_rows[:3])
    lines = swag.read_text(encoding="utf-8").split("\n")
    swag.write_text("\n".join(lines[:2] + [""] + lines[2:]), encoding="utf-8")  # line 3 blank
    examples = read_multiple_choice(str(swag))
    assert len(examples) == 3 and examples.ids == ["100", "101", "102"]
    with pytest.raises(ValueError, match=f"^{swag}:3: empty line; expected a row of 12 comma-separated fields$"):
        read_multiple_choice(str(swag), skip_blank=False)
    lines = swag.read_text(encoding="utf-8").split("\n")
    swag.write_text("\n".join(lines[:3] + [lines[3].rsplit(",", 2)[0]] + lines[4:]), encoding="utf-8")
    with pytest.raises(ValueError, match=f"^{swag}:4: expected 12 comma-separated fields .* got 1[01]$"):
        read_multiple_choice(str(swag))  # the line after a skipped blank line is named as it is


def test_a_bad_csv_row_or_header_is_named(tmp_path, sample_rows):
    path = _write_swag_csv(tmp_path / "val.csv", sample_rows[:3])
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join(lines[:3] + [lines[3].rsplit(",", 2)[0]]) + "\n", encoding="utf-8")  # 2 fields short
    with pytest.raises(ValueError, match=f"{path}:4: expected 12 comma-separated fields .* got 10"):
        read_swag_csv(str(path))
    bad_label = _write_swag_csv(tmp_path / "label.csv", [dict(sample_rows[0], label="x")])
    with pytest.raises(ValueError, match=f"{bad_label}:2: field 'label' must be a choice index 0..3, got 'x'"):
        read_swag_csv(str(bad_label))
    no_ending = tmp_path / "header.csv"
    no_ending.write_text("sent1,sent2,ending0,ending1,ending2,label\nA.,B,c,d,e,0\n", encoding="utf-8")
    with pytest.raises(ValueError, match=f"{no_ending}:1: the header has no field 'ending3'"):
        read_swag_csv(str(no_ending))
    with pytest.raises(FileNotFoundError, match="no such file"):
        read_multiple_choice(str(tmp_path / "missing.csv"))


def test_tfds_hellaswag_records_an_unprepared_set_and_an_unknown_builder(tmp_path):
    records = [{"context": b"A man is sitting on a roof.", "endings": [b"he starts pulling up roofing.", b"he eats."],
                "label": 1},
               {"context": "Two women talk.", "endings": ["one laughs.", "one leaves."], "label": 0}]
    examples = examples_from_tfds("hellaswag", "train", records)
    assert examples.contexts[0] == "A man is sitting on a roof." and examples.labels.tolist() == [1, 0]
    assert examples.choices[0] == ["he starts pulling up roofing.", "he eats."]
    test = examples_from_tfds("hellaswag", "test", [dict(r, label=-1) for r in records])
    assert test.labels is None
    with pytest.raises(ValueError, match="TFDS has no 'swag'"):
        load_tfds_multiple_choice("swag", "train")
    with pytest.raises(FileNotFoundError, match="not prepared in .*`tfds build hellaswag"):
        load_tfds_multiple_choice("hellaswag", "dev", data_dir=str(tmp_path), download=False)


def test_pairs_pack_as_transformers_tokenizer_packs_them_and_missing_choices_are_zero_rows(shared_data, sample_rows):
    transformers = pytest.importorskip("transformers")
    from official_bert.text import text_preprocessor

    minilm = shared_data / "all-MiniLM-L6-v2"
    examples = read_jsonl(str(shared_data / "swag" / "sample.jsonl"))
    choices = padded_choices(examples.choices)
    choices[1, 2:] = ""  # question 1 has two choices
    preprocessor = text_preprocessor(str(shared_data / "bert-vocab" / "bert-base-uncased-vocab.txt"), True, 24)
    inputs, truncated = pack_choices(preprocessor, tf.constant(examples.contexts), tf.constant(choices))
    assert inputs["input_word_ids"].shape == (10, 4, 24) and truncated.shape == (10, 4)
    tokenizer = transformers.BertTokenizerFast.from_pretrained(str(minilm))
    expected = tokenizer([c for c in examples.contexts for _ in range(4)], [c for q in examples.choices for c in q],
                         truncation="longest_first", max_length=24, padding="max_length", return_tensors="np")
    present = (choices != "").reshape(-1)
    for ours, theirs in (("input_word_ids", "input_ids"), ("input_mask", "attention_mask"),
                         ("input_type_ids", "token_type_ids")):
        flat = inputs[ours].numpy().reshape(40, 24)
        np.testing.assert_array_equal(flat[present], expected[theirs][present], err_msg=ours)
        assert not flat[~present].any(), ours  # a missing choice is an all-zero row
    cut = np.array([len(tokenizer(a, b)["input_ids"]) > 24 for a, b in zip(
        [c for c in examples.contexts for _ in range(4)], [c for q in examples.choices for c in q])]) & present
    assert cut.any() and not cut.all()
    np.testing.assert_array_equal(truncated.numpy().reshape(-1), cut)  # flagged where a pair did not fit


def test_training_batches_are_shuffled_trimmed_and_labeled(shared_data):
    from official_bert.text import text_preprocessor

    examples = read_jsonl(str(shared_data / "swag" / "sample.jsonl"))
    preprocessor = text_preprocessor(str(shared_data / "bert-vocab" / "bert-base-uncased-vocab.txt"), True, 128)
    dataset = multiple_choice_dataset(examples.contexts, examples.choices, examples.labels, preprocessor, 4,
                                      is_training=True, seed=1)
    batches = list(dataset.take(5).as_numpy_iterator())  # past one epoch (10 questions): it repeats
    for inputs, labels in batches:
        assert inputs["input_word_ids"].shape[:2] == (4, 4) and labels.shape == (4,)
        assert inputs["input_mask"].shape[2] in (32, 64, 96, 128)  # cut to the batch's longest, a multiple of 32
        assert inputs["input_mask"][:, :, -32:].any()
    again = list(multiple_choice_dataset(examples.contexts, examples.choices, examples.labels, preprocessor, 4,
                                         is_training=True, seed=1).take(5).as_numpy_iterator())
    assert all((a[1] == b[1]).all() for a, b in zip(batches, again))  # the same seeded order
    unlabeled = next(iter(multiple_choice_dataset(examples.contexts, examples.choices, None, preprocessor, 8,
                                                  is_training=False)))
    assert unlabeled["input_word_ids"].shape == (8, 4, 128)
