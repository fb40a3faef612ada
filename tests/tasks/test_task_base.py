"""official_bert/tasks/base.py: what every task shares (prediction paths, training-split checks)."""

import numpy as np
import pytest

from official_bert import owned_files
from official_bert.tasks.base import check_training_examples, checked_steps_per_loop, predictions_path


def test_a_predictions_path_is_recorded_as_ours_before_its_folder_is_made(tmp_path):
    results_dir = tmp_path / "out"

    path = predictions_path(str(results_dir), "test.tsv")

    assert path == str(results_dir / "predictions" / "test.tsv")
    assert (results_dir / "predictions").is_dir()
    assert owned_files.recorded(str(results_dir)) == {"predictions"}
    assert predictions_path(str(results_dir), "dev.tsv") == str(results_dir / "predictions" / "dev.tsv")


def test_a_predictions_folder_beside_a_users_files_leaves_them_alone(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")

    predictions_path(str(tmp_path), "test.tsv")

    assert (tmp_path / "notes.txt").read_text() == "mine"
    owned_files.remove_ours(str(tmp_path))
    assert not (tmp_path / "predictions").exists() and (tmp_path / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize("usable, read, message", [
    (0, 0, "no training examples"), (0, 10, "only 0 of 10 training examples"), (4, 10, "only 4 of 10")])
def test_a_training_split_with_little_to_train_on_is_refused_naming_the_source(usable, read, message):
    with pytest.raises(ValueError, match=message) as error:
        check_training_examples("train.csv", usable, read)
    assert str(error.value).startswith("train.csv: ")


def test_half_the_examples_usable_is_enough():
    check_training_examples("train.csv", 5, 10)


def test_steps_per_loop_below_one_is_refused_naming_the_flag():
    assert checked_steps_per_loop(3) == 3
    with pytest.raises(ValueError, match="--steps_per_loop must be at least 1, got 0"):
        checked_steps_per_loop(0)


def _two_label_classifier():
    import keras

    from official_bert import BertClassifier, BertConfig, BertEncoder

    keras.utils.set_random_seed(0)
    config = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=16)
    inputs = {"input_word_ids": np.array([[1, 5, 7, 2]], np.int32), "input_mask": np.ones((1, 4), np.int32),
              "input_type_ids": np.zeros((1, 4), np.int32)}
    return BertClassifier(BertEncoder(config), num_classes=2, dropout_rate=0.0), inputs


def test_a_loaded_heads_labels_follow_this_tasks_order(caplog):
    """A checkpoint whose id2label is (pos, neg), for a task whose labels are sorted (neg, pos): the head's outputs
    are swapped, so each label keeps its logit (a classifier that always said "pos" says "pos")."""
    from official_bert.tasks.base import _follow_label_names

    model, inputs = _two_label_classifier()
    before = model(inputs).numpy()
    with caplog.at_level("INFO", logger="official_bert.tasks.base"):
        _follow_label_names(model, ["pos", "neg"], ["neg", "pos"], "ck/pos_neg")
    np.testing.assert_allclose(model(inputs).numpy(), before[:, ::-1], rtol=1e-6)
    assert "ck/pos_neg: its head's labels are in the order pos, neg; reordered to this task's neg, pos" in caplog.text


def test_a_loaded_head_of_other_label_names_is_kept_and_said(caplog):
    from official_bert.tasks.base import _follow_label_names

    model, inputs = _two_label_classifier()
    before = model(inputs).numpy()
    with caplog.at_level("WARNING", logger="official_bert.tasks.base"):
        _follow_label_names(model, ["negative", "positive"], ["0", "1"], "ck/sst2")
        _follow_label_names(model, None, ["0", "1"], "ck/unnamed")  # transformers' default names: nothing to say
    np.testing.assert_array_equal(model(inputs).numpy(), before)
    assert caplog.messages == ["ck/sst2: its head was trained for the labels negative, positive; this task's are 0, "
                               "1: its outputs are read in this task's order"]
