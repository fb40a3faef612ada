"""The table of task kinds: every entry names what exists and agrees with it, and task.json files of older
official-bert versions get the fields their kind added since."""

import json

import pytest

from official_bert import model_dir as model_dirs
from official_bert.task_kinds import KINDS, TASK_KINDS, kind_of_model, resolve, task_kind

INFO = {"task": "x", "label_names": ["O", "B-PER", "I-PER"], "max_seq_length": 16, "do_lower_case": True}


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_builds_its_model_names_its_head_and_its_task_and_serving_module(kind, tiny_config):
    from export.serving_module import ServingModule
    from official_bert.checkpoints.heads import head_specs

    spec = task_kind(kind)
    model = model_dirs.build_task_model(kind, tiny_config, INFO)
    assert isinstance(model, spec.model_class()) and kind_of_model(model) is spec
    assert [s.hf_name for s in head_specs(model)] == [s.hf_name for s in resolve(spec.head_specs)(model)] != []
    assert resolve(spec.task_class).kind == kind
    assert issubclass(resolve(spec.serving_module), ServingModule)


def test_an_unknown_kind_is_an_error_listing_the_kinds():
    with pytest.raises(ValueError, match="kind must be one of .*'classification'.*got 'summarization'"):
        task_kind("summarization")
    assert kind_of_model(object()) is None and set(KINDS) == set(TASK_KINDS)


@pytest.mark.parametrize("task,features,regression", [("MRPC", ["text", "text_b"], False), ("SST-2", ["text"], False),
                                                      ("STS-B", ["text", "text_b"], True)])
def test_a_glue_classification_task_json_without_text_features_gets_them_from_the_glue_table(
        tmp_path, task, features, regression):
    (tmp_path / "task.json").write_text(json.dumps({"task": task, "label_names": [], "max_seq_length": 32,
                                                    "do_lower_case": True}), encoding="utf-8")
    info = model_dirs.read_task_info(str(tmp_path))
    assert info["text_features"] == features and info["is_regression"] is regression


def test_recorded_text_features_are_kept_and_another_task_without_them_still_loads(tmp_path):
    base = {"task": "REVIEWS", "label_names": ["bad", "good"], "is_regression": False, "max_seq_length": 32,
            "do_lower_case": True}
    model_dirs.write_task_info(str(tmp_path), model_dirs.CLASSIFICATION, {**base, "text_features": ["review"]})
    assert model_dirs.read_task_info(str(tmp_path))["text_features"] == ["review"]
    model_dirs.write_task_info(str(tmp_path), model_dirs.CLASSIFICATION, base)
    assert "text_features" not in model_dirs.read_task_info(str(tmp_path))  # export names the missing field
