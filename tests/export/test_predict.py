"""`export.predict`: strict JSON answers, the export directory it resolves, and its command line (the answers
are checked with each kind's export: the classifier, multiple-choice and SQuAD module tests; the reading of an
`--input_file` in test_example_files.py)."""

import json

import pytest

from export.predict import json_line, predict, resolve_version_dir


@pytest.mark.slow
def test_an_infinite_score_prints_as_null_in_strict_json(export_of):
    """SQuAD's score of an empty context is -inf in the signature; JSON has no -Infinity."""
    answer = predict(export_of("squad_v1"), [b"Who flew to Brussels?", b""])
    assert answer["score"] is None and answer["answer_text"] == ""
    assert json.loads(json_line(answer), parse_constant=lambda name: pytest.fail(f"{name} in the JSON")) == answer
    with pytest.raises(ValueError):
        json_line({"score": float("-inf")})  # never printed as -Infinity


def test_an_export_dir_that_is_no_export_says_what_it_is(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such export directory: .*nowhere"):
        resolve_version_dir(str(tmp_path / "nowhere"))
    (tmp_path / "ner").mkdir()
    (tmp_path / "ner" / "task.json").write_text("{}")
    with pytest.raises(FileNotFoundError, match=r"ner is a model_dir of a training run, not an export: export it "
                                                r"first \(python -m export.saved_model --model_dir=.*ner\)"):
        resolve_version_dir(str(tmp_path / "ner"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="empty: no saved_model.pb and no numeric version directory"):
        resolve_version_dir(str(tmp_path / "empty"))
    for version in ("1", "10", "9"):
        (tmp_path / "export" / version).mkdir(parents=True)
    (tmp_path / "export" / "10" / "saved_model.pb").write_bytes(b"")
    assert resolve_version_dir(str(tmp_path / "export")) == str(tmp_path / "export" / "10")  # numerically latest
    assert resolve_version_dir(str(tmp_path / "export" / "10")) == str(tmp_path / "export" / "10")


def test_the_command_line_gives_one_kind_of_input_and_columns_only_with_a_file():
    from absl import app

    from export.predict import check_inputs

    check_inputs(["a text"], None, None, None)
    check_inputs([], "in.csv", None, "review")
    with pytest.raises(app.UsageError, match="pass one of texts, --input_file and --features_file, not texts and "
                                             "--input_file"):
        check_inputs(["a text"], "in.csv", None, None)
    with pytest.raises(app.UsageError, match="--columns names the columns of an --input_file; pass one"):
        check_inputs(["a text"], None, None, "review")
