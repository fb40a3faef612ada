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


TAGGER_INFO = {"task": "ner", "label_names": ["O", "B-PER", "I-PER"], "max_seq_length": 16, "do_lower_case": True}


def _write_tagger_files(path, config):
    """A tagging model_dir's task.json, bert_config.json and a 100-piece vocab.txt in `path`, its weights left out."""
    from official_bert.checkpoints.vocab import write_vocab_file

    model_dirs.write_task_info(str(path), model_dirs.TAGGING, TAGGER_INFO)
    model_dirs.write_json(str(path / "bert_config.json"), config.to_dict())
    write_vocab_file([f"t{i}" for i in range(100)], str(path / "vocab.txt"))


def test_load_model_dir_gives_the_trained_model_back(tmp_path, tiny_config):
    import keras

    keras.utils.set_random_seed(0)
    model = model_dirs.build_task_model(model_dirs.TAGGING, tiny_config, TAGGER_INFO)
    inputs = {"input_word_ids": np.arange(16, dtype=np.int32)[None] % 100, "input_mask": np.ones((1, 16), np.int32),
              "input_type_ids": np.zeros((1, 16), np.int32)}
    expected = model(inputs, training=False).numpy()
    _write_tagger_files(tmp_path, tiny_config)
    with pytest.raises(FileNotFoundError, match="no model.weights.h5; use a model_dir whose training finished"):
        model_dirs.load_model_dir(str(tmp_path))
    model.save_weights(str(tmp_path / "model.weights.h5"))
    loaded = model_dirs.load_model_dir(str(tmp_path))
    assert (loaded.kind, loaded.max_seq_length, loaded.lower_case) == ("tagging", 16, True)
    np.testing.assert_array_equal(loaded.model(inputs, training=False).numpy(), expected)


def test_a_weights_file_of_another_model_is_refused_not_left_half_loaded(tmp_path, tiny_config):
    """A model_dir is built without BERT's draws (every weight comes from the file): a file that lacks some of the
    model's weights must be an error, never a model with zeros in it."""
    import keras

    _write_tagger_files(tmp_path, tiny_config)
    keras.utils.set_random_seed(0)
    encoder_only = model_dirs.build_task_model(model_dirs.TAGGING, tiny_config, TAGGER_INFO).encoder
    encoder_only.save_weights(str(tmp_path / "model.weights.h5"))
    with pytest.raises(ValueError,
                       match=r"model\.weights\.h5: the .* model's weights do not fit it: .*could not be loaded"):
        model_dirs.load_model_dir(str(tmp_path))


def test_weights_keras_would_leave_as_built_are_an_error(tmp_path):
    """Keras only warns when the group of a layer nested in a container of containers is missing from the file (it
    takes the file for one of an older Keras) and leaves that layer as built; `load_weights` refuses it."""
    import h5py
    import keras

    class Holder(keras.layers.Layer):
        def __init__(self):
            super().__init__(name="holder")
            self.parts = {"nested": [keras.layers.Dense(3)]}

        def build(self, shape):
            self.parts["nested"][0].build(shape)

        def call(self, x):
            return self.parts["nested"][0](x)

    keras.Sequential([keras.Input((4,)), Holder()]).save_weights(str(tmp_path / "model.weights.h5"))
    with h5py.File(tmp_path / "model.weights.h5", "a") as f:
        del f["layers/holder/parts/container"]
    model = keras.Sequential([keras.Input((4,)), Holder()], name="held")
    with pytest.raises(ValueError, match=r"model\.weights\.h5: the held model's weights are not all in it: Skipping "
                                         r"nested container at 'layers/holder/parts/container'"):
        model_dirs.load_weights(model, str(tmp_path))
