"""The task kinds: one `TaskKind` each, the one table every kind-dependent part of the library reads.

A kind (task.json's "kind") says which task model a model_dir holds and everything that follows from it: how to
build that model from a `BertConfig` and task.json (`model_dir.build_task_model`), the task.json fields it needs
(`model_dir.read_task_info`), where its head lives in checkpoints (`checkpoints.heads.head_specs`), the module that
serves it (`export.saved_model`), the Task class that trains it (`tasks.distill`, `tasks.prune`) and the shape of
its logits (`tasks.distillation`'s teacher cache). Adding a kind is adding an entry to `TASK_KINDS`.

Classes and functions are named by dotted path ("package.module.Name") and imported when first used: this module
stays importable without TensorFlow, and the library names `export/`'s serving modules without importing them.

Examples:

>>> task_kind("classification").model_class().__name__
'BertClassifier'
>>> task_kind("tagging").fields
('max_seq_length', 'do_lower_case', 'label_names')
"""

import dataclasses
import importlib
from typing import Callable, Optional, Tuple

CLASSIFICATION, TAGGING, SQUAD, PRETRAINING = "classification", "tagging", "squad", "pretraining"
MULTIPLE_CHOICE = "multiple_choice"
TIME_SERIES = "time_series"
# The fields task.json has for every kind, besides "task", "kind" and "schema_version".
COMMON_FIELDS = ("max_seq_length", "do_lower_case")


def resolve(path):
    """The object a dotted path ("package.module.Name") names, its module imported."""
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


@dataclasses.dataclass(frozen=True)
class TaskKind:
    """One kind of task model.

    Args:
        name: the kind, as task.json records it.
        model: the task model class (dotted path); its constructor takes the encoder and `model_args(info)`.
        model_args: task.json's fields -> the model's constructor keyword arguments besides the encoder.
        head_specs: `f(model) -> [WeightSpec]` naming the head's variables in Google's and Hugging Face's
            checkpoints (dotted path, in `official_bert.checkpoints.heads`).
        serving_module: the `export.serving_module.ServingModule` subclass that serves a model_dir of the kind
            (dotted path; `export.saved_model` calls its `from_model_dir`).
        task_class: the `official_bert.tasks.base.Task` subclass that trains it (dotted path).
        fields: the task.json fields a model_dir of the kind must have.
        complete: task.json's fields -> the fields an older official-bert did not record, filled in when read
            (None: nothing to fill).
        schema1_task: the task.json "task" of a schema-1 file (no "kind" field) of this kind; a schema-1 file with
            any other task name is a classification one.
        logits_per_piece: the model's logits are per word piece (batch, seq_length, ...), not per example.
        encoder: the encoder class (dotted path); its constructor takes the `BertConfig` and `encoder_args(info)`.
        encoder_args: task.json's fields -> the encoder's constructor keyword arguments besides the config (None:
            none).
        reads_text: the model reads word pieces: a model_dir of the kind has the tokenizer's files.
        hf_head: `f(model) -> checkpoints.heads.HfHead`, the transformers class the model is written as (dotted
            path; None: transformers has none).
    """

    name: str
    model: str
    model_args: Callable[[dict], dict]
    head_specs: str
    serving_module: str
    task_class: str
    fields: Tuple[str, ...] = COMMON_FIELDS
    complete: Optional[Callable[[dict], dict]] = None
    schema1_task: Optional[str] = None
    logits_per_piece: bool = False
    encoder: str = "official_bert.models.encoder.BertEncoder"
    encoder_args: Optional[Callable[[dict], dict]] = None
    reads_text: bool = True
    hf_head: Optional[str] = None

    def model_class(self):
        """The task model class."""
        return resolve(self.model)

    def build_model(self, encoder, info, train_on_real_tokens=True):
        """The untrained task model around `encoder`, shaped by task.json's fields `info`; `train_on_real_tokens`:
        the model's constructor argument where it has one (a `RealTokenTraining` model)."""
        from official_bert.models.task_model import RealTokenTraining

        model_class = self.model_class()
        options = {"train_on_real_tokens": train_on_real_tokens} if issubclass(model_class, RealTokenTraining) else {}
        return model_class(encoder, **self.model_args(info), **options)

    def build_encoder(self, config, info):
        """The untrained encoder of the kind's models, of `config` (a `BertConfig`) and task.json's fields `info`."""
        return resolve(self.encoder)(config, **(self.encoder_args(info) if self.encoder_args else {}))


def _classifier_args(info):
    outputs = 1 if info.get("is_regression") else len(info["label_names"])
    return {"num_classes": info.get("num_classes", outputs), "multi_label": bool(info.get("multi_label"))}


def _from_glue_table(info):
    """What a classification task.json written by an older official-bert lacks, from its GLUE task: the serving
    `text_features` (["text"] or ["text", "text_b"]) and `is_regression`; nothing when the task is not a GLUE one
    (`export.saved_model` then names the missing field)."""
    missing = [field for field in ("text_features", "is_regression") if field not in info]
    if not missing:
        return {}
    from official_bert.data.glue_tasks import GLUE_TASKS

    glue_task = GLUE_TASKS.get(info["task"])
    if glue_task is None:
        return {}
    known = {"text_features": text_features(glue_task.is_pair), "is_regression": glue_task.is_regression}
    return {field: known[field] for field in missing}


def _time_series_args(info):
    return {"num_classes": len(info["label_names"]), "dropout_rate": info.get("classifier_dropout", 0.8),
            "feature_mean": info.get("feature_mean"), "feature_scale": info.get("feature_scale")}


def _feature_encoder_args(info):
    return {name: info[name] for name in ("input_channels", "norm_first", "key_keep_prob", "init_scheme")
            if name in info}


def text_features(is_pair):
    """The serving input names of a classifier's texts: ["text"], or ["text", "text_b"] for pairs."""
    return ["text", "text_b"] if is_pair else ["text"]


TASK_KINDS = {kind.name: kind for kind in (
    TaskKind(CLASSIFICATION, "official_bert.models.classifier.BertClassifier", _classifier_args,
             "official_bert.checkpoints.heads.sequence_classifier_specs",
             "export.classifier_module.ClassifierModule",
             "official_bert.tasks.classification.ClassificationTask", COMMON_FIELDS + ("label_names",),
             complete=_from_glue_table, hf_head="official_bert.checkpoints.heads.sequence_classifier_hf_head"),
    TaskKind(TAGGING, "official_bert.models.token_classifier.BertTokenClassifier",
             lambda info: {"num_labels": len(info["label_names"])},
             "official_bert.checkpoints.heads.token_classifier_specs", "export.tagger_module.TaggerModule",
             "official_bert.tasks.tagging.TaggingTask", COMMON_FIELDS + ("label_names",), schema1_task="ner",
             logits_per_piece=True, hf_head="official_bert.checkpoints.heads.token_classifier_hf_head"),
    TaskKind(SQUAD, "official_bert.models.span_labeler.BertSpanLabeler", lambda info: {},
             "official_bert.checkpoints.heads.span_labeler_specs", "export.squad_module.SquadModule",
             "official_bert.tasks.squad.SquadTask", schema1_task="squad", logits_per_piece=True,
             hf_head="official_bert.checkpoints.heads.span_labeler_hf_head"),
    TaskKind(PRETRAINING, "official_bert.models.pretrainer.BertPretrainer",
             lambda info: {"objective": info["objective"]} if "objective" in info else {},  # none: before --objective
             "official_bert.checkpoints.heads.pretrainer_specs", "export.mlm_module.MaskedLMModule",
             "official_bert.tasks.pretraining.PretrainingTask", schema1_task="pretraining",
             hf_head="official_bert.checkpoints.heads.pretrainer_hf_head"),
    TaskKind(MULTIPLE_CHOICE, "official_bert.models.multiple_choice.BertMultipleChoice", lambda info: {},
             "official_bert.checkpoints.heads.multiple_choice_specs",
             "export.multiple_choice_module.MultipleChoiceModule",
             "official_bert.tasks.multiple_choice.MultipleChoiceTask",
             hf_head="official_bert.checkpoints.heads.multiple_choice_hf_head"),
    TaskKind(TIME_SERIES, "official_bert.models.time_series_classifier.BertTimeSeriesClassifier", _time_series_args,
             "official_bert.tasks.time_series.head_specs", "export.time_series_module.TimeSeriesModule",
             "official_bert.tasks.time_series.TimeSeriesClassificationTask",
             COMMON_FIELDS + ("label_names", "input_channels"), encoder="official_bert.models.feature_encoder."
             "BertFeatureEncoder", encoder_args=_feature_encoder_args, reads_text=False),
)}
KINDS = tuple(TASK_KINDS)


def task_kind(name):
    """The `TaskKind` of a kind name.

    Raises:
        ValueError: an unknown kind; the message lists the known ones.
    """
    if name not in TASK_KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {name!r}")
    return TASK_KINDS[name]


def kind_of_task_name(task):
    """The kind of a schema-1 task.json (no "kind" field) from its "task"."""
    return next((kind.name for kind in TASK_KINDS.values() if kind.schema1_task == task), CLASSIFICATION)


def kind_of_model(model):
    """The `TaskKind` whose model class `model` is an instance of, or None."""
    return next((kind for kind in TASK_KINDS.values() if isinstance(model, kind.model_class())), None)
