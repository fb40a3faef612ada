"""SQuAD examples from JSON files and TFDS records: the real dev sets, each malformed field named by its JSON path,
TFDS records read like the JSON, and back to the metric's `data` list."""

import json

import numpy as np
import pytest

from official_bert.data.squad_examples import (SquadExample, examples_from_json, examples_from_tfds,
                                               examples_from_tfds_records, read_squad_json, squad_articles)


@pytest.fixture(scope="module")
def dev_v1(shared_data):
    return read_squad_json(str(shared_data / "squad" / "v1.1" / "dev-v1.1.json"))


def test_reads_v1_and_v2_files(shared_data, dev_v1):
    assert len(dev_v1) == 10570 and not any(e.is_impossible for e in dev_v1)
    first = dev_v1[0]
    assert first.qas_id == "56be4db0acb8001400a502ec" and first.context.startswith("Super Bowl 50 was")
    assert first.answers[0] == {"text": "Denver Broncos", "answer_start": 177}
    v2 = read_squad_json(str(shared_data / "squad" / "v2.0" / "cs224n-dev-half-v2.0.json"))
    assert len(v2) == 6078 and sum(e.is_impossible for e in v2) == 3168
    # plausible_answers of unanswerable questions are not gold answers
    assert all(e.answers == [] for e in v2 if e.is_impossible) and all(e.answers for e in v2 if not e.is_impossible)


def _squad(qas, context="The cat sat on the mat."):
    return {"version": "1.1", "data": [{"title": "t", "paragraphs": [{"context": "x", "qas": []},
                                                                     {"context": context, "qas": qas}]}]}


@pytest.mark.parametrize("qas, message", [
    ([{"id": "a", "question": "q", "answers": [{"text": "cat", "answer_start": "4"}]}],
     r"data\[0\]\.paragraphs\[1\]\.qas\[0\]\.answers\[0\]\.answer_start: expected an integer, got str \"4\""),
    ([{"id": "a", "question": "q", "answers": []}, {"id": "b", "answers": []}],
     r"data\[0\]\.paragraphs\[1\]\.qas\[1\]\.question: missing"),
    ([{"id": "a", "question": "q", "answers": [{"answer_start": 4}]}],
     r"data\[0\]\.paragraphs\[1\]\.qas\[0\]\.answers\[0\]\.text: missing"),
    ([{"id": "a", "question": "q", "is_impossible": "no", "answers": []}],
     r"data\[0\]\.paragraphs\[1\]\.qas\[0\]\.is_impossible: expected true or false"),
    ([{"id": "a", "question": "q", "answers": []}, {"id": "a", "question": "r", "answers": []}],
     r"data\[0\]\.paragraphs\[1\]\.qas\[1\]\.id: 'a' is already the id of data\[0\]\.paragraphs\[1\]\.qas\[0\]"),
    ("not a list", r"data\[0\]\.paragraphs\[1\]\.qas: expected a list, got str"),
])
def test_malformed_json_names_the_file_and_field(tmp_path, qas, message):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(_squad(qas)))
    with pytest.raises(ValueError, match=f"{path}: {message}"):
        read_squad_json(str(path))


def test_invalid_json_and_missing_data_name_the_file(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"data": [')
    with pytest.raises(ValueError, match=f"{path}: not valid JSON"):
        read_squad_json(str(path))
    with pytest.raises(ValueError, match=r"x.json: \(top level\).data: missing"):
        examples_from_json({"version": "1.1"}, source="x.json")


def test_tfds_records_convert_like_the_json_reader():
    records = [{"id": b"q1", "title": b"T", "context": "Caf\u00e9 au lait.".encode(), "question": b"What?",
                "answers": {"text": np.array([b"au lait", b"lait"]), "answer_start": np.array([5, 8], np.int32)}},
               {"id": b"q2", "title": b"T", "context": b"None here.", "question": b"Who?", "is_impossible": True,
                "answers": {"text": np.array([], object), "answer_start": np.array([], np.int32)},
                "plausible_answers": {"text": np.array([b"None"]), "answer_start": np.array([0], np.int32)}}]
    assert examples_from_tfds_records(records) == [
        SquadExample("q1", "What?", "Caf\u00e9 au lait.", [{"text": "au lait", "answer_start": 5},
                                                            {"text": "lait", "answer_start": 8}]),
        SquadExample("q2", "Who?", "None here.", [], is_impossible=True)]
    with pytest.raises(ValueError, match=r"src record 0: KeyError: 'question'"):
        examples_from_tfds_records([{"id": b"q", "context": b"c", "answers": {"text": [], "answer_start": []}}],
                                   source="src")


def test_tfds_dataset_built_offline_with_tfds_code_equals_the_json_file(shared_data, tmp_path):
    """A real `squad/v2.0` TFDS dataset, prepared by TFDS's own builder from two articles of the local file."""
    tfds = pytest.importorskip("tensorflow_datasets")
    from tensorflow_datasets.datasets.squad import squad_dataset_builder

    source = json.loads((shared_data / "squad" / "v2.0" / "cs224n-dev-half-v2.0.json").read_text())
    small = tmp_path / "dev.json"
    small.write_text(json.dumps({"version": "v2.0", "data": source["data"][:2]}))

    class LocalSquad(squad_dataset_builder.Builder, skip_registration=True):
        name = "squad"

        @classmethod
        def _get_pkg_dir_path(cls):
            return squad_dataset_builder.Builder._get_pkg_dir_path()

        def _split_generators(self, dl_manager):
            return [tfds.core.SplitGenerator(name="validation", gen_kwargs={"filepath": str(small)})]

    tfds.disable_progress_bar()
    LocalSquad(config="v2.0", data_dir=str(tmp_path / "tfds")).download_and_prepare()
    loaded = examples_from_tfds("squad/v2.0", "validation", data_dir=str(tmp_path / "tfds"))
    expected = read_squad_json(str(small))
    assert len(loaded) == len(expected) > 300
    assert sorted(loaded, key=lambda e: e.qas_id) == sorted(expected, key=lambda e: e.qas_id)
    with pytest.raises(FileNotFoundError, match="squad/v1.1 is not prepared in .*tfds build squad/v1.1"):
        examples_from_tfds("squad/v1.1", "validation", data_dir=str(tmp_path / "tfds"))


def test_squad_articles_holds_every_question(dev_v1):
    articles = squad_articles(dev_v1[:50])
    qas = [qa for article in articles for paragraph in article["paragraphs"] for qa in paragraph["qas"]]
    assert [qa["id"] for qa in qas] == [e.qas_id for e in dev_v1[:50]]
    assert qas[0]["answers"] == dev_v1[0].answers
