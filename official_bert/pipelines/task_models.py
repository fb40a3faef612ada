"""The file side of a task model that takes raw strings (`official_bert.models.text_inputs.TextInputs`): building
it from a pretrained checkpoint (`from_pretrained`), exporting it for TF Serving (`export`) and writing it for
transformers (`save_pretrained`).

Examples:

>>> model = BertClassifier.from_pretrained("../shared/data/all-MiniLM-L6-v2", labels=["neg", "pos"])
>>> model.export("out/export/mine")  # the raw-text SavedModel, as python -m export.saved_model writes it
'out/export/mine/1'
"""

import os
import tempfile

import numpy as np

from official_bert import model_dir as model_dirs
from official_bert.checkpoints.hub import checkpoint_path
from official_bert.checkpoints.loading import checkpoint_label_names
from official_bert.families import check_sequence_length
from official_bert.task_kinds import kind_of_model, resolve, task_kind
from official_bert.text.preprocessing import Preprocessor, text_preprocessor
from official_bert.text.tokenizer_config import write_tokenizer_files_of

# What writes a model_dir's SavedModel (`python -m export.saved_model`): named, not imported, as the task kinds name
# their serving modules (the library imports nothing of export/).
SAVED_MODEL_EXPORT = "export.saved_model.export"
DEFAULT_SEQ_LENGTH = 128


def from_pretrained(model_class, path, labels=None, seq_length=None, lower_case=None, **kwargs):
    """`model_class` (a task model) on the encoder of a checkpoint, its tokenizer as the preprocessor, and the head
    of a transformers task checkpoint where it fits (its class and shapes; its `id2label` are the labels when none
    are given); or, from a model_dir of its kind without new labels, the trained model itself (`trained_model`).

    Args:
        model_class: `BertClassifier`, `BertTokenClassifier`, `BertSpanLabeler`, ...
        path: a Hugging Face or Google checkpoint directory, a model_dir of ours, or a hub id.
        labels: the class (tag) names; their count is the model's `label_count_argument` (e.g. `num_classes`).
        seq_length: the packed length, special tokens included (at most the model's positions); default: a trained
            model_dir's, else 128.
        lower_case: overrides the casing found beside the checkpoint.
        **kwargs: the model's other constructor arguments.
    Raises:
        ValueError: labels for a model that takes none, or labels and a count that differ; a `seq_length` the model
            cannot take.
    """
    from official_bert.pipelines.loading import load_encoder_and_tokenizer

    path = checkpoint_path(path)
    count_argument = model_class.label_count_argument
    if labels is None and count_argument not in kwargs and model_dirs.is_model_dir(path) and issubclass(
            task_kind(model_dirs.read_task_info(path)["kind"]).model_class(), model_class):
        if kwargs:
            raise ValueError(f"{path}: a trained model_dir is loaded as it was trained, without {sorted(kwargs)}; "
                             f"pass labels=[...] for a new head on its encoder")
        return trained_model(path, seq_length, lower_case)
    seq_length = seq_length or DEFAULT_SEQ_LENGTH
    if labels is not None:
        labels = [str(label) for label in labels]
        if count_argument is None:
            raise ValueError(f"{model_class.__name__} takes no labels")
        if len(set(labels)) != len(labels):
            raise ValueError(f"labels must be distinct, got {labels}")
        if kwargs.setdefault(count_argument, len(labels)) != len(labels):
            raise ValueError(f"{count_argument}={kwargs[count_argument]} but {len(labels)} labels {labels}")
    elif count_argument is not None and count_argument not in kwargs:
        labels = checkpoint_label_names(path) if not model_dirs.is_model_dir(path) else None
        if labels is None:
            raise ValueError(f"{model_class.__name__}.from_pretrained needs labels=[...] or {count_argument}=... "
                             f"({path} names none: no id2label of its own)")
        kwargs[count_argument] = len(labels)
    encoder, tokenizer = load_encoder_and_tokenizer(path, lower_case)
    check_sequence_length(seq_length, encoder.config, "seq_length", source=str(path))
    preprocessor = Preprocessor(tokenizer, seq_length, layout=encoder.config.packing_layout)
    model = model_class(encoder, preprocessor=preprocessor, label_names=labels, **kwargs)
    if not model_dirs.is_model_dir(path):  # a transformers task checkpoint: its head, where it fits this one
        _load_checkpoint_head(model, path)
    return model


def _load_checkpoint_head(model, path):
    """Loads a transformers task checkpoint's head into `model` when it is of the model's class and shapes (see
    `checkpoints.loading.load_head`), its outputs in the model's label order."""
    from official_bert.checkpoints.heads import head_specs, hf_class_name
    from official_bert.checkpoints.loading import follow_label_names, load_head

    if load_head(head_specs(model), path, hf_class_name(model)):
        follow_label_names(model, checkpoint_label_names(path), model.label_names, path)


def trained_model(model_dir, seq_length=None, lower_case=None):
    """A model_dir's trained task model (`model_dir.load_model_dir`) with its preprocessor (the model_dir's
    tokenizer, casing and, by default, `max_seq_length`), label names, text feature names and task.json (its
    `task_settings`, which `export` writes back)."""
    loaded = model_dirs.load_model_dir(model_dir)
    seq_length = seq_length or loaded.max_seq_length
    check_sequence_length(seq_length, loaded.config, "seq_length", source=model_dir)
    model = loaded.model
    model.preprocessor = text_preprocessor(loaded.vocab_file, loaded.lower_case if lower_case is None else lower_case,
                                           seq_length)
    model.label_names = tuple(loaded.info["label_names"]) if "label_names" in loaded.info else None
    model.text_features = tuple(loaded.info["text_features"]) if "text_features" in loaded.info else None
    model.task_settings = {k: v for k, v in loaded.info.items() if k not in ("kind", "schema_version")}
    return model


def write_model_dir(model, directory):
    """Writes a task model with a preprocessor as a finished model_dir of its kind (`official_bert.model_dir`):
    task.json (the model_dir's it was read from, if any, updated with the head's `task_fields`, the texts' names,
    length and casing), bert_config.json, the tokenizer's files and the weights (and `encoder/`).

    Raises:
        FileExistsError: `directory` holds files (it is created, or must be empty).
    """
    from official_bert.run_model_dir import save_trained

    kind = kind_of_model(model)
    if kind is None:
        raise ValueError(f"{type(model).__name__} is no task kind's model (official_bert.task_kinds); nothing "
                         "serves it")
    preprocessor = model.preprocessor
    lower_case = bool(getattr(preprocessor.tokenizer, "lower_case", False))  # (byte-level BPE keeps case)
    info = {"task": type(model).__name__, **(model.task_settings or {}), "max_seq_length": preprocessor.seq_length,
            "do_lower_case": lower_case, "text_features": list(model.text_features or ("text",)),
            **model.task_fields()}  # (before anything is written: a head may refuse)
    os.makedirs(directory, exist_ok=True)
    if os.listdir(directory):
        raise FileExistsError(f"{directory}: not empty; a model_dir is written into a new or empty directory")
    vocab_file = write_tokenizer_files_of(preprocessor.tokenizer, directory)
    model_dirs.write_task_info(directory, kind.name, info)
    model_dirs.write_json(os.path.join(directory, model_dirs.CONFIG_FILE), model.encoder.config.to_dict())
    save_trained(model, directory, vocab_file, lower_case)  # (the preprocessor has no weights)


def export(model, export_dir, version=None):
    """The raw-text TF-Serving SavedModel of a task model with a preprocessor, written as `python -m
    export.saved_model` writes a model_dir's: the model goes through a staging model_dir. Returns the version
    directory (`<export_dir>/<version>`)."""
    with tempfile.TemporaryDirectory(prefix="official_bert_export_") as staging:
        write_model_dir(model, staging)
        return resolve(SAVED_MODEL_EXPORT)(staging, export_dir, version)


def save_pretrained(model, path, overwrite=False):
    """Writes a task model with a preprocessor as the Hugging Face directory of its transformers class
    (`checkpoints.save_task_model`: a classifier's or tagger's labels as `id2label`), with its tokenizer's files and
    `tokenizer_config.json` (casing), so transformers' Auto classes and `AutoTokenizer` load it. Returns `path`.

    Raises:
        FileExistsError: `path` holds a `model.safetensors` and not `overwrite`.
        TypeError: a model transformers has no class for.
    """
    from official_bert.checkpoints.task_models import save_task_model

    tokenizer = model.preprocessor.tokenizer
    lower_case = bool(getattr(tokenizer, "lower_case", False))  # (byte-level BPE keeps case)
    with tempfile.TemporaryDirectory(prefix="official_bert_vocab_") as staging:
        vocab_file = write_tokenizer_files_of(tokenizer, staging)
        save_task_model(model, path, vocab_file, overwrite=overwrite)
    model_dirs.write_tokenizer_config(path, lower_case, vocab_file)
    return path


def word_windows(model, sentences, tags=None):
    """Sentences of words (and their tags) packed for a token classifier with a preprocessor, as `tasks.run_ner`
    packs them (`data.tagging_dataset`): each word's pieces tokenized alone, windows of whole words, the tag on each
    word's first piece and `IGNORE_LABEL` elsewhere.

    Args:
        model: the `BertTokenClassifier`.
        sentences: a list of sentences, each a list of words (str).
        tags: per sentence, a tag per word: ids, or names among the model's `label_names`; or None.
    Returns: the `TaggingWindows`.
    Raises:
        ValueError: a sentence whose tag count differs from its word count (named by index).
    """
    from official_bert.data.tagging_dataset import build_windows, word_pieces

    preprocessor = model.preprocessor
    sentences = [[str(word) for word in words] for words in sentences]
    labels = None
    if tags is not None:
        if len(tags) != len(sentences):
            raise ValueError(f"{len(sentences)} sentences but {len(tags)} tag sequences")
        labels = [model.label_ids(list(sentence_tags)) if len(sentence_tags) else [] for sentence_tags in tags]
        for index, (words, sentence_labels) in enumerate(zip(sentences, labels)):
            if len(words) != len(sentence_labels):
                raise ValueError(f"sentence {index}: {len(words)} words but {len(sentence_labels)} tags")
    pieces = word_pieces(preprocessor.tokenizer, sentences, layout=preprocessor.layout)
    return build_windows(pieces, preprocessor.seq_length, preprocessor.special_tokens, labels)


def word_logits(windows, logits):
    """Each word's logits, at its first piece: one (words, num_labels) array per sentence.

    Args:
        windows: `word_windows`'s.
        logits: (windows, seq_length, num_labels), in the windows' order.
    """
    words = [np.zeros((count, logits.shape[-1]), logits.dtype) for count in windows.num_words]
    rows, positions = np.nonzero(windows.word_index >= 0)
    for row, position in zip(rows, positions):
        words[windows.sentence[row]][windows.word_index[row, position]] = logits[row, position]
    return words
