"""The model_dir contract: task.json's schema, and a model_dir read back into its model."""

import json

import numpy as np
import pytest

from official_bert import model_dir as model_dirs


def _write(path, info):
    path.mkdir(parents=True, exist_ok=True)
    (path / "task.json").write_text(json.dumps(info), encoding="utf-8")


@pytest.mark.parametrize("task,kind", [("MRPC", "classification"), ("ner", "tagging"), ("squad", "squad"),
                                       ("pretraining", "pretraining")])
def test_schema_1_files_get_their_kind_from_the_task(tmp_path, task, kind):
    _write(tmp_path, {"task": task, "max_seq_length": 32, "do_lower_case": True, "label_names": ["0", "1"]})
    info = model_dirs.read_task_info(str(tmp_path))
    assert info["kind"] == kind and info["schema_version"] == model_dirs.SCHEMA_VERSION


def test_a_newer_schema_unknown_kind_or_missing_field_is_an_error_naming_it(tmp_path):
    base = {"task": "MRPC", "max_seq_length": 32, "do_lower_case": True, "label_names": ["0", "1"]}
    _write(tmp_path, {**base, "schema_version": model_dirs.SCHEMA_VERSION + 1})
    with pytest.raises(ValueError, match="written by a newer official-bert"):
        model_dirs.read_task_info(str(tmp_path))
    _write(tmp_path, {**base, "kind": "summarization"})
    with pytest.raises(ValueError, match="field 'kind' is 'summarization'"):
        model_dirs.read_task_info(str(tmp_path))
    _write(tmp_path, {"task": "ner", "max_seq_length": 32, "do_lower_case": True})
    with pytest.raises(ValueError, match="task.json: field 'label_names' missing"):
        model_dirs.read_task_info(str(tmp_path))


def test_written_task_info_reads_back_and_another_run_is_refused(tmp_path):
    info = {"task": "ner", "label_names": ["O", "B-PER"], "max_seq_length": 32, "do_lower_case": False}
    model_dirs.write_task_info(str(tmp_path), model_dirs.TAGGING, info)
    assert model_dirs.read_task_info(str(tmp_path)) == {**info, "kind": "tagging", "schema_version": 2}
    model_dirs.check_same_run(str(tmp_path), model_dirs.TAGGING, info)
    with pytest.raises(ValueError, match="field 'max_seq_length' is 32 from an earlier run, but this run has 64"):
        model_dirs.check_same_run(str(tmp_path), model_dirs.TAGGING, {**info, "max_seq_length": 64})


def test_load_model_dir_gives_the_trained_model_back(tmp_path, tiny_config):
    import keras

    from official_bert.checkpoints.vocab import write_vocab_file

    info = {"task": "ner", "label_names": ["O", "B-PER", "I-PER"], "max_seq_length": 16, "do_lower_case": True}
    keras.utils.set_random_seed(0)
    model = model_dirs.build_task_model(model_dirs.TAGGING, tiny_config, info)
    inputs = {"input_word_ids": np.arange(16, dtype=np.int32)[None] % 100, "input_mask": np.ones((1, 16), np.int32),
              "input_type_ids": np.zeros((1, 16), np.int32)}
    expected = model(inputs, training=False).numpy()
    model_dirs.write_task_info(str(tmp_path), model_dirs.TAGGING, info)
    model_dirs.write_json(str(tmp_path / "bert_config.json"), tiny_config.to_dict())
    write_vocab_file([f"t{i}" for i in range(100)], str(tmp_path / "vocab.txt"))
    with pytest.raises(FileNotFoundError, match="no model.weights.h5; use a model_dir whose training finished"):
        model_dirs.load_model_dir(str(tmp_path))
    model.save_weights(str(tmp_path / "model.weights.h5"))
    loaded = model_dirs.load_model_dir(str(tmp_path))
    assert (loaded.kind, loaded.max_seq_length, loaded.lower_case) == ("tagging", 16, True)
    np.testing.assert_array_equal(loaded.model(inputs, training=False).numpy(), expected)
