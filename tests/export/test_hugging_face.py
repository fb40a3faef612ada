"""export.hugging_face: a model_dir of every kind becomes a directory transformers' Auto classes load with their
head, every weight used, giving our model's logits; its tokenizer loads in AutoTokenizer and splits as ours."""

import json

import numpy as np
import tensorflow as tf
import pytest

from export.hugging_face import export_hugging_face

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

# model_dir_of's kind -> transformers' Auto class that should load its export
AUTO_CLASSES = {"classifier": "AutoModelForSequenceClassification", "regression": "AutoModelForSequenceClassification",
                "tagger": "AutoModelForTokenClassification", "squad_v1": "AutoModelForQuestionAnswering",
                "multiple_choice": "AutoModelForMultipleChoice", "masked_lm": "AutoModelForPreTraining"}
PAIR = ("The cat sat on the mat.", "Where did the cat sit?")


def _our_outputs(model, kind, ids, types, mask):
    """Our model's logits on transformers' token ids (batch 1), as numpy, named as transformers' outputs."""
    inputs = {"input_word_ids": ids, "input_mask": mask, "input_type_ids": types}
    if kind == "multiple_choice":  # two choices: the pair and the pair again
        return {"logits": model({k: np.stack([v, v], axis=1) for k, v in inputs.items()}).numpy()}
    if kind == "masked_lm":
        positions = np.arange(ids.shape[1], dtype=np.int32)[None]
        outputs = model({**inputs, "masked_lm_positions": positions})
        return {"prediction_logits": outputs["mlm_logits"].numpy(), "seq_relationship_logits":
                outputs["nsp_logits"].numpy()}
    outputs = model(inputs)
    if kind == "squad_v1":
        return {"start_logits": outputs["start_logits"].numpy(), "end_logits": outputs["end_logits"].numpy()}
    return {"logits": outputs.numpy()}


@pytest.mark.slow  # loads six models in torch
@pytest.mark.parametrize("kind", list(AUTO_CLASSES))
def test_every_kind_loads_in_transformers_with_its_head_and_our_logits(kind, model_dir_of, tmp_path):
    from official_bert.model_dir import load_model_dir
    from official_bert.text import BertTokenizer

    model_dir = str(model_dir_of(kind))
    output_dir = export_hugging_face(model_dir, str(tmp_path / "hf"))
    loaded = load_model_dir(model_dir)
    reference, info = getattr(transformers, AUTO_CLASSES[kind]).from_pretrained(
        output_dir, attn_implementation="eager", output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"], info

    tokenizer = transformers.AutoTokenizer.from_pretrained(output_dir)
    encoded = tokenizer(*PAIR, return_tensors="np")
    ids, types, mask = (encoded[name].astype(np.int32) for name in ("input_ids", "token_type_ids", "attention_mask"))
    ours_split = BertTokenizer(vocab_file=loaded.vocab_file, lower_case=loaded.lower_case)(tf.constant(PAIR)).to_list()
    pieces_a, pieces_b = ids[0][types[0] == 0][1:-1], ids[0][types[0] == 1][:-1]  # [CLS] A [SEP] B [SEP]
    assert [pieces_a.tolist(), pieces_b.tolist()] == ours_split

    torch_inputs = {"input_ids": torch.tensor(ids, dtype=torch.long), "token_type_ids": torch.tensor(types),
                    "attention_mask": torch.tensor(mask)}
    if kind == "multiple_choice":
        torch_inputs = {k: torch.stack([v, v], dim=1) for k, v in torch_inputs.items()}
    with torch.no_grad():
        theirs = reference.eval()(**torch_inputs)
    for name, ours in _our_outputs(loaded.model, kind, ids, types, mask).items():
        np.testing.assert_allclose(ours, theirs[name].numpy(), atol=1e-4, rtol=1e-5, err_msg=name)


def test_labels_and_problem_type_go_to_the_config(model_dir_of, tmp_path):
    from official_bert.model_dir import read_task_info

    for kind, problem_type in (("classifier", None), ("regression", "regression"), ("tagger", None)):
        config = transformers.AutoConfig.from_pretrained(export_hugging_face(str(model_dir_of(kind)),
                                                                             str(tmp_path / kind)))
        names = read_task_info(str(model_dir_of(kind)))["label_names"] or ["LABEL_0"]
        assert [config.id2label[i] for i in range(len(names))] == names and config.num_labels == len(names)
        assert config.label2id == {name: i for i, name in enumerate(names)}
        assert config.problem_type == problem_type


def test_a_second_export_needs_overwrite_and_other_files_are_refused(model_dir_of, tmp_path):
    model_dir = str(model_dir_of("classifier"))
    output_dir = tmp_path / "hf"
    export_hugging_face(model_dir, str(output_dir))
    with pytest.raises(ValueError, match=r"already holds an export \(config.json, model.safetensors.*--overwrite"):
        export_hugging_face(model_dir, str(output_dir))
    export_hugging_face(model_dir, str(output_dir), overwrite=True)
    (output_dir / "README.md").write_text("my model card")
    with pytest.raises(ValueError, match=r"--output_dir=.* holds files official-bert did not write \(README.md\)"):
        export_hugging_face(model_dir, str(output_dir), overwrite=True)
    assert (output_dir / "README.md").read_text() == "my model card"
    assert json.loads((output_dir / "config.json").read_text())["architectures"] == ["BertForSequenceClassification"]


def test_a_time_series_model_dir_is_refused_before_anything_is_written(tmp_path):
    import keras

    from official_bert import model_dir as model_dirs
    from official_bert.models.feature_encoder import BertFeatureEncoder
    from official_bert.models.time_series_classifier import BertTimeSeriesClassifier
    from official_bert.task_kinds import TIME_SERIES
    from model_dirs import tiny_bert_config

    model_dir = tmp_path / "motions"
    model_dir.mkdir()
    keras.utils.set_random_seed(0)
    model = BertTimeSeriesClassifier(BertFeatureEncoder(tiny_bert_config(), input_channels=3), num_classes=2)
    model_dirs.write_task_info(str(model_dir), TIME_SERIES, {
        "task": "time_series", "label_names": ["a", "b"], "input_channels": 3, "max_seq_length": 16,
        "do_lower_case": False})
    model_dirs.write_json(str(model_dir / "bert_config.json"), model.encoder.config.to_dict())
    model.save_weights(str(model_dir / "model.weights.h5"))
    with pytest.raises(ValueError, match="transformers has no class for a time_series model; python -m "
                                         "export.saved_model exports it"):
        export_hugging_face(str(model_dir), str(tmp_path / "hf"))
    assert not (tmp_path / "hf").exists()


@pytest.mark.slow
def test_the_command_writes_the_export_and_names_a_missing_flag(model_dir_of, tmp_path):
    import pathlib
    import subprocess
    import sys

    root = pathlib.Path(__file__).resolve().parents[2]
    command = [sys.executable, "-m", "export.hugging_face", f"--model_dir={model_dir_of('tagger')}"]
    result = subprocess.run(command + [f"--output_dir={tmp_path / 'hf'}"], cwd=root, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0 and "as a Hugging Face directory to" in result.stdout, result.stderr[-2000:]
    assert transformers.AutoConfig.from_pretrained(tmp_path / "hf").architectures == ["BertForTokenClassification"]
    # a missing flag: one line, before TensorFlow loads (tests/tasks/test_cli_help.py)
    result = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=300)
    assert result.returncode == 2 and result.stderr.strip().endswith("error: --output_dir is required"), result.stderr
