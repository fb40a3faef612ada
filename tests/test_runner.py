"""The runner runs a task in-process, from a RunConfig, with no flags."""

import dataclasses
import json

import pytest

from official_bert.runner import RunConfig, run
from official_bert.tasks.classification import ClassificationTask

pytestmark = pytest.mark.slow


def test_a_task_runs_in_process_and_writes_its_model_dir(shared_data, tiny_checkpoint, tmp_path):
    config = RunConfig(model_dir=str(tmp_path / "mrpc"), init_checkpoint=str(tiny_checkpoint), max_seq_length=32,
                       train_batch_size=8, eval_batch_size=128, num_train_steps=2, checkpoint_steps=1)
    results = run(ClassificationTask("MRPC", data_dir=str(shared_data / "glue" / "MRPC")), config)
    assert results == json.loads((tmp_path / "mrpc" / "eval_results.json").read_text())
    assert results["num_examples"] == 408 and 0.0 <= results["accuracy"] <= 1.0
    task = json.loads((tmp_path / "mrpc" / "task.json").read_text())
    assert (task["kind"], task["task"], task["max_seq_length"]) == ("classification", "MRPC", 32)
    assert json.loads((tmp_path / "mrpc" / "train_results.json").read_text())["steps"] == 2
    # The same run again finds its training complete and evaluates the saved model: the same figures.
    assert run(ClassificationTask("MRPC", data_dir=str(shared_data / "glue" / "MRPC")), config) == results


def test_train_on_real_tokens_false_trains_on_the_padded_batch(shared_data, tiny_checkpoint, tmp_path, monkeypatch):
    from official_bert.models.encoder import BertEncoder

    encode_packed = BertEncoder.encode_packed
    training_calls = []

    def counted(self, inputs, training=False):
        training_calls.append(training)
        return encode_packed(self, inputs, training=training)

    monkeypatch.setattr(BertEncoder, "encode_packed", counted)
    for real_tokens in (True, False):
        config = RunConfig(model_dir=str(tmp_path / str(real_tokens)), init_checkpoint=str(tiny_checkpoint),
                           max_seq_length=32, train_batch_size=8, num_train_steps=2, do_eval=False,
                           train_on_real_tokens=real_tokens)
        training_calls.clear()
        run(ClassificationTask("MRPC", data_dir=str(shared_data / "glue" / "MRPC")), config)
        assert (True in training_calls) == real_tokens  # traced once into the training step when it is used


def test_a_mixed_precision_run_leaves_the_global_dtype_policy_as_it_found_it(shared_data, tiny_checkpoint, tmp_path,
                                                                            monkeypatch):
    import keras

    from official_bert import model_dir as model_dirs

    before = keras.mixed_precision.global_policy().name
    config = RunConfig(model_dir=str(tmp_path / "bf16"), init_checkpoint=str(tiny_checkpoint), max_seq_length=32,
                       train_batch_size=8, num_train_steps=1, do_eval=False, mixed_precision="bfloat16")
    seen = []
    build = model_dirs.build_task_model
    monkeypatch.setattr(model_dirs, "build_task_model",
                        lambda *args, **kwargs: seen.append(keras.mixed_precision.global_policy().name) or
                        build(*args, **kwargs))
    run(ClassificationTask("MRPC", data_dir=str(shared_data / "glue" / "MRPC")), config)
    assert seen == ["mixed_bfloat16"]  # the run's own policy, while it ran
    assert keras.mixed_precision.global_policy().name == before

    def fails(*args, **kwargs):
        raise RuntimeError("a failing build")

    monkeypatch.setattr(model_dirs, "build_task_model", fails)
    config = dataclasses.replace(config, model_dir=str(tmp_path / "fails"))
    with pytest.raises(RuntimeError, match="a failing build"):
        run(ClassificationTask("MRPC", data_dir=str(shared_data / "glue" / "MRPC")), config)
    assert keras.mixed_precision.global_policy().name == before  # also when the run raises
