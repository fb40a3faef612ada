"""FileClassificationTask's refusals, in-process and before anything is read or written: flags that do not go
together, a --do_train=false run without a trained classifier or with the wrong kind of one, and a classifier of
the user's files given to distillation or pruning (GLUE data only)."""

from types import SimpleNamespace

import pytest

from official_bert import model_dir as model_dirs
from official_bert.runner import RunConfig
from official_bert.tasks.classification import ClassificationTask
from official_bert.tasks.file_classification import FileClassificationTask


def _trained(path, **info):
    model_dirs.write_task_info(str(path), model_dirs.CLASSIFICATION, {
        "task": "reviews", "label_names": ["a", "b"], "is_regression": False, "num_classes": 2,
        "max_seq_length": 16, "do_lower_case": True, "text_features": ["text"], **info})
    return str(path)


@pytest.mark.parametrize("task,settings,message", [
    (FileClassificationTask(), {}, "--train_file is required to train"),
    (FileClassificationTask("t.csv", test_file="x.csv"), {}, "--do_predict writes predictions for --test_file"),
    (FileClassificationTask("t.csv", multi_label=True, tune_threshold=True), {},
     "--tune_threshold tunes on the evaluation file: pass --eval_file"),
    (FileClassificationTask(), {"do_train": False}, "--do_train=false: nothing to do; pass --eval_file"),
    (FileClassificationTask(eval_file="e.csv"), {"do_train": False}, "--model_dir=.* holds no trained classifier"),
])
def test_refused_settings(tmp_path, task, settings, message):
    with pytest.raises(ValueError, match=message):
        task.validate(RunConfig(model_dir=str(tmp_path / "run"), **settings))


def test_refused_flags_together():
    with pytest.raises(ValueError, match="--multi_label and --regression"):
        FileClassificationTask("t.csv", multi_label=True, regression=True)
    with pytest.raises(ValueError, match="--tune_threshold tunes a multi-label classifier's decision threshold"):
        FileClassificationTask("t.csv", tune_threshold=True)


def test_a_trained_model_dir_gives_the_labels(tmp_path):
    model_dir = _trained(tmp_path / "multi", multi_label=True, threshold=0.35, text_features=["text", "text_b"])
    task = FileClassificationTask(eval_file="e.jsonl", multi_label=True)
    task.validate(RunConfig(model_dir=model_dir, do_train=False))
    assert task.scheme.label_names == ("a", "b") and task.scheme.multi_label and task.threshold == 0.35 and task.pair
    assert task.task_info()["multi_label"] and task.run_settings() == {"text_features": ["text", "text_b"],
                                                                       "threshold": 0.35}
    with pytest.raises(ValueError, match=r"task.json: the model is multi-label; pass --multi_label"):
        FileClassificationTask(eval_file="e.jsonl").validate(RunConfig(model_dir=model_dir, do_train=False))
    single = _trained(tmp_path / "single")
    with pytest.raises(ValueError, match=r"task.json: the model is not multi-label; drop --multi_label"):
        FileClassificationTask(eval_file="e.jsonl", multi_label=True).validate(RunConfig(model_dir=single,
                                                                                         do_train=False))


def test_a_classifier_of_the_users_files_is_no_teacher():
    flags = SimpleNamespace(data_dir=None)
    with pytest.raises(ValueError, match=r"trained on task 'reviews' with labels \['a', 'b'\], not a GLUE task"):
        ClassificationTask.for_teacher({"task": "reviews", "label_names": ["a", "b"]}, flags)
    with pytest.raises(ValueError, match="not a GLUE task"):  # a file named mrpc.csv with its own labels
        ClassificationTask.for_teacher({"task": "mrpc", "label_names": ["no", "yes"]}, flags)
    assert ClassificationTask.for_teacher({"task": "MRPC", "label_names": ["0", "1"]}, flags).glue_task.name == "MRPC"
