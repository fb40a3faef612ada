"""tasks.distill end to end on MRPC with a tiny teacher: a student model_dir that loads and exports. Its two
command lines run as children of one process (`forked_commands`): TensorFlow is imported once."""

import json

import pytest
from classifier_model_dirs import mrpc_task_info, write_classifier_model_dir
from tests.tasks.forked_commands import run_forked

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def teacher_dir(shared_data, tmp_path_factory):
    """A random 3-layer MRPC classifier written as `tasks.run_classifier` leaves it."""
    import keras

    from official_bert import BertConfig
    from official_bert import model_dir as model_dirs

    keras.utils.set_random_seed(5)
    path = tmp_path_factory.mktemp("teacher")
    config = BertConfig(hidden_size=32, num_hidden_layers=3, num_attention_heads=4, intermediate_size=64,
                        max_position_embeddings=64, initializer_range=0.5)
    info = mrpc_task_info()
    model = model_dirs.build_task_model(model_dirs.CLASSIFICATION, config, info)
    vocab = shared_data / "bert-vocab" / "bert-base-uncased-vocab.txt"
    return write_classifier_model_dir(path, model, info, vocab)


# The training pairs of the runs: MRPC's first 40, then its first 8 again (identical examples the teacher cache
# keeps once): 48 pairs, 6 batches of 8 an epoch.
DISTINCT_PAIRS, REPEATED_PAIRS = 40, 8


def _mrpc_with_repeats(shared_data, directory):
    """MRPC's dev split as it is, and a training split of `DISTINCT_PAIRS` pairs then `REPEATED_PAIRS` again."""
    directory.mkdir()
    mrpc = shared_data / "glue" / "MRPC"
    header, *rows = (mrpc / "train.tsv").read_text(encoding="utf-8-sig").splitlines()
    train = [header, *rows[:DISTINCT_PAIRS], *rows[:REPEATED_PAIRS]]
    (directory / "train.tsv").write_text("\n".join(train) + "\n", encoding="utf-8")
    (directory / "dev.tsv").write_text((mrpc / "dev.tsv").read_text(encoding="utf-8-sig"), encoding="utf-8")
    return directory


@pytest.fixture(scope="module")
def distilled(shared_data, teacher_dir, tmp_path_factory):
    """The two command lines: (root, [CompletedProcess]): a student with hidden and attention losses
    (`root/student`), and one with the teacher cached (`root/cached`)."""
    root = tmp_path_factory.mktemp("distill")
    data_dir = _mrpc_with_repeats(shared_data, root / "mrpc")
    common = [f"--teacher={teacher_dir}", "--student_layers=0,2", f"--data_dir={data_dir}",
              "--train_batch_size=8", "--eval_batch_size=128", "--num_train_steps=2"]
    commands = [[*common, f"--model_dir={root / 'student'}", "--hidden_weight=0.5", "--attention_weight=0.5"],
                [*common, f"--model_dir={root / 'cached'}", "--cache_teacher"]]
    (root / "out").mkdir()
    results = run_forked([("tasks.distill", args) for args in commands], root / "out")
    for result in results:
        assert result.returncode == 0, result.stderr[-3000:]
    return root, results


def test_distill_writes_a_student_model_dir_that_exports(distilled, teacher_dir, tmp_path):
    import numpy as np
    import tensorflow as tf

    from export.saved_model import export
    from official_bert.model_dir import load_model_dir

    root, (result, _) = distilled
    student_dir = root / "student"
    assert "eval results:" in result.stdout
    assert f"Model a student of {teacher_dir}: 2 layers" in result.stderr  # not the teacher's path alone
    assert json.loads((student_dir / "eval_results.json").read_text())["num_examples"] == 408
    settings = json.loads((student_dir / "run.json").read_text())["task"]["distillation"]
    assert settings["student_layers"] == [0, 2] and settings["alpha"] == 0.5
    assert settings["hidden_weight"] == settings["attention_weight"] == 0.5

    loaded = load_model_dir(str(student_dir))
    assert loaded.kind == "classification" and loaded.config.num_hidden_layers == 2 and loaded.max_seq_length == 32

    version = export(str(student_dir), str(tmp_path / "export"))
    served = tf.saved_model.load(version)
    outputs = served.signatures["serving_default"](text=tf.constant(["a cat"]), text_b=tf.constant(["a dog"]))
    expected = loaded.model(loaded_inputs(loaded, "a cat", "a dog"))
    np.testing.assert_allclose(outputs["logits"].numpy(), expected, atol=1e-4)


def test_distill_with_the_teacher_cached(distilled):
    """--cache_teacher: the teacher runs once over the first training epoch (48 pairs, 8 of them repeats) and keeps
    each distinct example once."""
    result = distilled[1][1]
    epoch = DISTINCT_PAIRS + REPEATED_PAIRS
    assert f"Teacher logits cached: batch {epoch // 8}/{epoch // 8}" in result.stderr
    assert f"Cached the teacher's logits of {DISTINCT_PAIRS} distinct examples ({epoch} in the epoch)" in result.stderr
    assert "eval results:" in result.stdout


def loaded_inputs(loaded, text, text_b):
    from official_bert.text.preprocessing import text_preprocessor

    import tensorflow as tf

    packer = text_preprocessor(loaded.vocab_file, loaded.lower_case, loaded.max_seq_length)
    return packer.pack([tf.constant([text]), tf.constant([text_b])])[0]


def test_bad_distillation_settings_are_refused_before_anything_runs(shared_data, teacher_dir, tmp_path):
    from official_bert.runner import RunConfig
    from official_bert.tasks.classification import ClassificationTask
    from official_bert.tasks.distillation import DistillationTask
    from official_bert.tasks.tagging import TaggingTask

    def mrpc():
        return ClassificationTask("MRPC", data_dir=str(shared_data / "glue" / "MRPC"))

    for kwargs, message in (({"student_layers": "0,3"}, "out of range"), ({}, "one of --student_layers"),
                            ({"student_layers": "0", "alpha": 1.5}, "--alpha"),
                            ({"student_layers": "0", "temperature": 0}, "--temperature"),
                            ({"student_layers": "0", "hidden_weight": 1.0, "cache_teacher": True}, "logits only")):
        with pytest.raises(ValueError, match=message):
            DistillationTask(mrpc(), str(teacher_dir), **kwargs)
    with pytest.raises(ValueError, match="tagging"):
        DistillationTask(TaggingTask(str(shared_data / "conll2003" / "hf-iob2")), str(teacher_dir), student_layers="0")
    with pytest.raises(FileNotFoundError, match="whose training finished"):
        DistillationTask(mrpc(), str(tmp_path), student_layers="0")
    sst2 = DistillationTask(ClassificationTask("SST-2", data_dir=str(shared_data / "glue" / "SST-2")),
                            str(teacher_dir), student_layers="0")
    with pytest.raises(ValueError, match="field 'task' is 'MRPC'"):
        sst2.read_data(RunConfig(model_dir=str(tmp_path / "x"), do_eval=False), None)
