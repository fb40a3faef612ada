"""The model_dir contract: what a training run leaves, and the one way to read it back.

A model_dir holds `task.json` (this module's: the kind of model, the task's facts, the sequence length and
the casing, with a schema version), `bert_config.json`, `vocab.txt`, `model.weights.h5` (the whole task model,
Keras) and `encoder/` (the encoder as a Hugging Face directory, with its casing in `tokenizer_config.json`).
Training writes it (`official_bert.runner`, `tasks.run_pretraining`); export, the entity tagger, the benchmarks
and `--init_checkpoint=<model_dir>` read it through `load_model_dir` / `read_task_info` /
`resolve_init_checkpoint`.

Examples:

>>> loaded = load_model_dir("out/mrpc")
>>> loaded.kind, loaded.info["label_names"], loaded.lower_case
('classification', ['0', '1'], True)
"""

import dataclasses
import json
import os

from official_bert.tokenizer_kinds import HF_TOKENIZER_CLASSES, VOCAB_FILES, WORDPIECE_FILE, tokenizer_kind

from official_bert.task_kinds import (CLASSIFICATION, KINDS, MULTIPLE_CHOICE, PRETRAINING, SQUAD,  # noqa: F401
                                      TAGGING, kind_of_task_name, task_kind)

TASK_FILE = "task.json"
WEIGHTS_FILE = "model.weights.h5"
CONFIG_FILE = "bert_config.json"
VOCAB_FILE = WORDPIECE_FILE  # (RoBERTa's and ALBERT's: `tokenizer_kinds.VOCAB_FILES`)
ENCODER_DIR = "encoder"
PRETRAINER_DIR = "pretrainer"
# 1: no "schema_version" or "kind" field (written before this module); 2: both. Fields a kind added later
# (classification's "text_features") are filled in when read (`TaskKind.complete`), so files without them load.
SCHEMA_VERSION = 2


def read_json(path):
    """The values of a UTF-8 JSON file."""
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def write_json(path, values):
    """Writes `values` as indented JSON (creating the directory)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(values, f, indent=2, sort_keys=True)
        f.write("\n")


def is_model_dir(path):
    """Whether `path` is a model_dir of ours (it has a task.json)."""
    return bool(path) and os.path.isfile(os.path.join(path, TASK_FILE))


def read_task_info(model_dir):
    """The model_dir's task.json, upgraded to the current schema (with "kind", and the fields its kind fills in).

    Raises:
        FileNotFoundError: no task.json.
        ValueError: a newer or unknown schema version, an unknown kind, or a field the kind needs is missing;
            the message names the file and the field.
    """
    path = os.path.join(model_dir, TASK_FILE)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{model_dir}: no {TASK_FILE}; not a model_dir of official-bert's tasks")
    info = read_json(path)
    version = info.get("schema_version", 1)
    if not isinstance(version, int) or version < 1:
        raise ValueError(f"{path}: field 'schema_version' must be a positive integer, got {version!r}")
    if version > SCHEMA_VERSION:
        raise ValueError(f"{path}: schema_version {version} was written by a newer official-bert (this one reads up "
                         f"to {SCHEMA_VERSION}); upgrade official-bert")
    if "task" not in info:
        raise ValueError(f"{path}: field 'task' missing")
    kind = info.get("kind") or kind_of_task_name(info["task"])
    if kind not in KINDS:
        raise ValueError(f"{path}: field 'kind' is {kind!r}; expected one of {', '.join(KINDS)}")
    spec = task_kind(kind)
    for field in spec.fields:
        if field not in info:
            raise ValueError(f"{path}: field '{field}' missing")
    added = spec.complete(info) if spec.complete else {}
    return {**info, **added, "kind": kind, "schema_version": SCHEMA_VERSION}


def write_task_info(model_dir, kind, info):
    """Writes task.json: `info` with the kind and schema version.

    Args:
        model_dir: the run directory (created).
        kind: one of `KINDS`.
        info: the task's fields (`task`, `max_seq_length`, `do_lower_case`, labels, ...).
    """
    task_kind(kind)  # (a ValueError for an unknown kind)
    write_json(os.path.join(model_dir, TASK_FILE), {**info, "kind": kind, "schema_version": SCHEMA_VERSION})


def check_same_run(model_dir, kind, info):
    """Refuses a model_dir written by a run of another task or shape, so a resume never mixes two runs.

    Raises:
        ValueError: naming the first field that differs and both values.
    """
    if not is_model_dir(model_dir):
        return
    previous = read_task_info(model_dir)
    path = os.path.join(model_dir, TASK_FILE)
    for key, value in {"kind": kind, **info}.items():
        if previous.get(key) != value:
            raise ValueError(f"{path}: field '{key}' is {previous.get(key)!r} from an earlier run, but this run has "
                             f"{value!r}; use another --model_dir")


def resolve_init_checkpoint(path, heads=ENCODER_DIR):
    """A model_dir of ours points to its `encoder/` (or, with heads="pretrainer", its `pretrainer/` when there is
    one); other paths pass through."""
    if not is_model_dir(path):
        return path
    if heads == PRETRAINER_DIR and os.path.isfile(os.path.join(path, PRETRAINER_DIR, "model.safetensors")):
        return os.path.join(path, PRETRAINER_DIR)
    return os.path.join(path, ENCODER_DIR)


def vocab_file_of(model_dir, config):
    """The model_dir's vocab file: `vocab.txt` (WordPiece), RoBERTa's `vocab.json` (with `merges.txt` beside it) or
    ALBERT's `spiece.model`.

    Args:
        model_dir: the directory.
        config: its `BertConfig`.
    """
    return os.path.join(model_dir, VOCAB_FILES[config.tokenizer_kind])


def write_tokenizer_config(directory, lower_case, vocab_file=None):
    """`tokenizer_config.json` with the casing and the tokenizer class, so a Hugging Face directory we write
    carries them (our `find_vocab`, transformers' `AutoTokenizer` and `BertTokenizer` read them there).

    Args:
        directory: the Hugging Face directory.
        lower_case: the casing.
        vocab_file: the model's vocab file, whose name gives the class: `vocab.json` -> `RobertaTokenizer`,
            `*.model` -> `AlbertTokenizer`, anything else (or None) -> `BertTokenizer`.
    """
    write_json(os.path.join(directory, "tokenizer_config.json"),
               {"do_lower_case": bool(lower_case), "tokenizer_class": HF_TOKENIZER_CLASSES[tokenizer_kind(vocab_file)]})


def build_task_model(kind, config, info, train_on_real_tokens=True):
    """The untrained task model of a kind (its `TaskKind.build_model`), shaped by the task's facts.

    Args:
        kind: one of `KINDS`.
        config: the `BertConfig`.
        info: task.json's fields (`num_classes` / `is_regression` / `label_names`; pre-training: `objective`).
        train_on_real_tokens: whether a model that can (classifier, token classifier, span labeler) trains on each
            batch's real tokens only (`RealTokenTraining`).
    """
    spec = task_kind(kind)
    return spec.build_model(spec.build_encoder(config, info), info, train_on_real_tokens=train_on_real_tokens)


@dataclasses.dataclass
class LoadedModelDir:
    """A model_dir read back.

    Attributes:
        kind: one of `KINDS`.
        info: task.json (current schema).
        config: the `BertConfig`.
        model: the task model with its trained weights.
        vocab_file: the model_dir's `vocab.txt` (RoBERTa: `vocab.json`, `merges.txt` beside it); None for a kind
            that reads no text (`TaskKind.reads_text`).
        lower_case: the casing it was trained with.
        max_seq_length: the training sequence length.
        model_dir: the directory it was read from.
    """
    kind: str
    info: dict
    config: object
    model: object
    vocab_file: str
    lower_case: bool
    max_seq_length: int
    model_dir: str = ""


def load_model_dir(model_dir):
    """Reads a finished model_dir back into its task model (under the current Keras dtype policy).

    Raises:
        FileNotFoundError: the directory, or a file a finished run leaves there, is missing (named).
        ValueError: see `read_task_info`.
    """
    from official_bert.config import BertConfig
    from official_bert.layers.initializers import weights_loaded_after_build

    if not os.path.isdir(model_dir):
        raise FileNotFoundError(f"model_dir not found: {model_dir}")
    info = read_task_info(model_dir)
    for name in (CONFIG_FILE, WEIGHTS_FILE):
        if not os.path.isfile(os.path.join(model_dir, name)):
            raise FileNotFoundError(f"{model_dir}: no {name}; use a model_dir whose training finished")
    config = BertConfig.from_json_file(os.path.join(model_dir, CONFIG_FILE))
    vocab_file = vocab_file_of(model_dir, config) if task_kind(info["kind"]).reads_text else None
    if vocab_file is not None and not os.path.isfile(vocab_file):
        raise FileNotFoundError(f"{model_dir}: no {os.path.basename(vocab_file)}; use a model_dir whose training "
                                "finished")
    with weights_loaded_after_build():  # load_weights fills every weight, or raises
        model = build_task_model(info["kind"], config, info)
    load_weights(model, model_dir)
    return LoadedModelDir(kind=info["kind"], info=info, config=config, model=model,
                          vocab_file=vocab_file, lower_case=bool(info["do_lower_case"]),
                          max_seq_length=int(info["max_seq_length"]), model_dir=model_dir)


def load_weights(model, model_dir):
    """Loads a model_dir's `model.weights.h5` into `model`, every weight of it.

    Args:
        model: the task model the model_dir's task.json and config build (see `build_task_model`).
        model_dir: the directory.
    Raises:
        ValueError: naming the file, when it lacks weights the model has. (Keras raises for most such files, but only
            warns for a layer nested in a container of the model and leaves that layer's weights as built.)
    """
    import warnings

    path = os.path.join(model_dir, WEIGHTS_FILE)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            model.load_weights(path)
        except ValueError as error:  # Keras': the layers whose weights are not in the file
            raise ValueError(f"{path}: the {model.name} model's weights do not fit it: {error}") from None
    for warning in caught:
        if "Skipping nested container" in str(warning.message):
            raise ValueError(f"{path}: the {model.name} model's weights are not all in it: {warning.message}")
        warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
