"""Writes task models as Hugging Face directories that transformers loads with their heads.

Examples:

>>> save_task_model(classifier, "out/hf/sst2", vocab_file="vocab.txt")  # its labels as `id2label`
>>> # PyTorch: transformers.AutoModelForSequenceClassification.from_pretrained("out/hf/mrpc")
"""

from official_bert.checkpoints.heads import head_specs, hf_class_name, hf_head
from official_bert.checkpoints.loading import write_hf_directory
from official_bert.checkpoints.weight_map import encoder_specs


def save_task_model(model, path, vocab_file=None, config_extras=None, overwrite=False):
    """Writes a task model as the directory of its transformers class (`heads.hf_head`): the encoder's weights
    under the family's base prefix ("bert.", "roberta.", ...; the pooler only where the class has one), the head's
    under its transformers names, `config.json` (the family's, its `architectures` the class, the labels of a
    classifier or tagger as `hf_label_fields` of its `task_fields()`, then `config_extras`) and the vocab file.

    Args:
        model: a `BertClassifier`, `BertTokenClassifier`, `BertSpanLabeler`, `BertMultipleChoice` or
            `BertPretrainer`.
        path: output directory (created).
        vocab_file: copied in (see `loading.write_hf_directory`).
        config_extras: more `config.json` keys, over those (`hf_label_fields` of a model_dir's task.json).
        overwrite: replace an existing `model.safetensors` there; otherwise that is an error.
    Returns: `path`.
    Raises:
        TypeError: a model transformers has no class for (the time-series classifier).
    """
    with_pooler = hf_head(model).pooler
    tensors = {f"{model.encoder.config.family.hf_base_prefix}{spec.hf_name}": spec.to_stored_value("hf")
               for spec in encoder_specs(model.encoder) if with_pooler or not spec.hf_name.startswith("pooler.")}
    tensors.update({spec.hf_name: spec.to_stored_value("hf") for spec in head_specs(model)})
    labels = hf_label_fields(model.task_fields()) if getattr(model, "label_count_argument", None) else {}
    config = {**model.encoder.config.to_hf_dict(), "architectures": [hf_class_name(model)], **labels,
              **(config_extras or {})}
    return write_hf_directory(path, tensors, config, vocab_file, overwrite)


def hf_label_fields(info) -> dict:
    """The `config.json` label keys transformers reads (`id2label`, `label2id`, `problem_type`) of a task.json's
    fields: the label names of a classifier or tagger, one output of a regression, several independent labels of a
    multi-label classifier; none for the kinds without labels.

    Args:
        info: task.json's fields (`label_names`, `is_regression`, `multi_label`).
    """
    if info.get("is_regression"):
        return {"id2label": {"0": "LABEL_0"}, "label2id": {"LABEL_0": 0}, "problem_type": "regression"}
    names = [str(name) for name in info.get("label_names") or ()]
    if not names:
        return {}
    fields = {"id2label": {str(i): name for i, name in enumerate(names)},
              "label2id": {name: i for i, name in enumerate(names)}}
    if "multi_label" in info:
        fields["problem_type"] = "multi_label_classification" if info["multi_label"] else "single_label_classification"
    return fields
