"""official_bert/tasks/base.py: what every task shares (prediction paths, training-split checks)."""

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
