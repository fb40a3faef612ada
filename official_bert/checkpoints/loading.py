"""Loads BERT-family weights into our models from Hugging Face or Google checkpoints, and writes Hugging Face ones.

Hugging Face directories of BERT, RoBERTa, XLM-RoBERTa, DistilBERT and ALBERT (`config.json`'s `model_type`) load;
the encoder of a task model sits under the family's prefix (`bert.`, `roberta.`, `distilbert.`, `albert.`). Google
TF1 checkpoints of BERT (`bert_config.json`) and ALBERT (`albert_config.json`) load too.
"""

import json
import logging
import os
import shutil
from typing import Iterable, List

from official_bert import output_files
from official_bert.checkpoints.readers import CheckpointReader, open_checkpoint
from official_bert.checkpoints.weight_map import WeightSpec, encoder_specs
from official_bert.config import BertConfig
from official_bert.families import BERT, ModelFamily
from official_bert.hf_config import read_hf_config
from official_bert.layers.initializers import weights_loaded_after_build
from official_bert.models.encoder import BertEncoder

logger = logging.getLogger(__name__)

# Names of Google encoder weights: a leftover with this prefix (or a Hugging Face one under the family's
# `hf_encoder_roots`) means the config and checkpoint disagree (e.g. more layers), which is an error rather than a
# head we may leave unused.
_GOOGLE_ENCODER_PREFIXES = ("bert/",)
_GOOGLE_CONFIGS = "bert_config.json or albert_config.json"


def hf_encoder_prefix(reader: CheckpointReader, family: ModelFamily = BERT) -> str:
    """The family's prefix ("bert.", "roberta.", "distilbert.", "albert.") when a Hugging Face checkpoint holds a task
    model (`BertFor...`, `RobertaFor...`, `AlbertFor...`), else ""."""
    prefix = family.hf_base_prefix
    return prefix if f"{prefix}embeddings.word_embeddings.weight" in reader else ""


def _encoder_name(spec: WeightSpec, reader: CheckpointReader, hf_prefix: str, roots=BERT.hf_encoder_roots) -> str:
    """The spec's name in the reader's format, with `hf_prefix` on Hugging Face encoder weights (those under
    `roots`)."""
    name = spec.name(reader.format)
    if reader.format == "hf" and name.startswith(roots):
        name = hf_prefix + name
    return name


def restore(specs: List[WeightSpec], reader: CheckpointReader, hf_prefix: str = "", family: ModelFamily = BERT
            ) -> List[str]:
    """Assigns every spec's variable from the checkpoint, all or nothing.

    Args:
        specs: the variables to fill (see `weight_map`).
        reader: an open checkpoint.
        hf_prefix: prepended to Hugging Face names of specs whose name is an encoder weight.
        family: the encoder's `ModelFamily`, whose weight names take `hf_prefix`.
    Returns: the checkpoint names that were not used (optimizer slots and buffers excluded).
    Raises:
        ValueError: naming every missing variable, or the first variable whose shape differs (both shapes).
    """
    fmt = reader.format
    values, missing, used = [], [], set()
    roots = family.hf_encoder_roots
    for spec in specs:
        name = _encoder_name(spec, reader, hf_prefix, roots)
        if name is None:
            raise ValueError(f"{reader.path}: a {family.model_type} encoder has no Google TF1 checkpoint names; load "
                             "its Hugging Face directory")
        if name not in reader:
            missing.append(f"'{name}' (expected shape {spec.stored_shape(fmt)})")
            continue
        values.append((spec, spec.to_variable_value(reader.get(name), fmt, source=reader.path)))
        used.add(name)
    if missing:
        raise ValueError(f"{reader.path}: {len(missing)} variable(s) missing from the checkpoint: {', '.join(missing)}")
    for spec, value in values:  # assign only after every check passed: never a partial load
        spec.variable.assign(value.astype(spec.variable.dtype, copy=False))
    return [n for n in reader.names() if n not in used]


def _check_leftovers(unused: Iterable[str], fmt: str, hf_prefix: str, source: str, family: ModelFamily = BERT):
    prefixes = tuple(hf_prefix + p for p in family.hf_encoder_roots) if fmt == "hf" else _GOOGLE_ENCODER_PREFIXES
    unexpected = [n for n in unused if n.startswith(prefixes)]
    if unexpected:
        raise ValueError(
            f"{source}: encoder variable(s) not used by a model built from its config (does the config match "
            f"the weights?): {', '.join(unexpected[:10])}{' ...' if len(unexpected) > 10 else ''}")
    heads = [n for n in unused if not n.startswith(prefixes)]
    if heads:
        logger.info("%s: %d head variable(s), not the encoder's (a task loads the heads it has): %s", source,
                    len(heads), ", ".join(heads[:10]) + (" ..." if len(heads) > 10 else ""))


def load_config(reader: CheckpointReader) -> BertConfig:
    if reader.config_path is None or not os.path.isfile(reader.config_path):
        raise FileNotFoundError(f"{reader.path}: no config file beside the checkpoint "
                                f"(expected {'config.json' if reader.format == 'hf' else _GOOGLE_CONFIGS})")
    if reader.format == "hf":  # without `model_type`: the family its keys or tokenizer files tell
        return read_hf_config(reader.config_path)
    return BertConfig.from_json_file(reader.config_path)


def load_encoder(path, config: BertConfig = None):
    """Builds a `BertEncoder` and loads its weights from a checkpoint.

    Args:
        path: a Hugging Face directory (`config.json` + `model.safetensors`) of a `BertModel`, `RobertaModel`,
            `XLMRobertaModel`, `DistilBertModel` or `AlbertModel` (or a task model of theirs), a Google directory
            (`bert_config.json` + `bert_model.ckpt.*`; ALBERT's `albert_config.json` + `model.ckpt-best.*`) or a
            Google checkpoint prefix.
        config: overrides the config file found beside the checkpoint.
    Returns: `(encoder, config)`. A RoBERTa checkpoint without the pooler (transformers saves its task models
        without one) loads, and the pooler keeps its initialisation.
    Raises:
        ValueError: a `config.json` of another family (e.g. `model_type` "gpt2"), naming it.
    """
    reader = open_checkpoint(path)
    config = config or load_config(reader)
    with weights_loaded_after_build():  # every weight is restored below, or drawn after (a missing pooler)
        encoder = BertEncoder(config)
    hf_prefix = hf_encoder_prefix(reader, config.family) if reader.format == "hf" else ""
    all_specs = encoder_specs(encoder)
    specs = _without_missing_pooler(all_specs, reader, hf_prefix, config, config.family.pooler_optional)
    unused = restore(specs, reader, hf_prefix=hf_prefix, family=config.family)
    _check_leftovers(unused, reader.format, hf_prefix, reader.path, config.family)
    if len(specs) < len(all_specs):  # the pooler's kernel, drawn as a normal build draws it (its bias is zeros)
        kernel = encoder.pooler.kernel
        kernel.assign(encoder.pooler.kernel_initializer(kernel.shape, kernel.dtype))
    return encoder, config


def _without_missing_pooler(specs, reader, hf_prefix, config, optional_pooler):
    """`specs` less the pooler's two (last) when it is optional and not in the checkpoint (logged)."""
    if not (optional_pooler and config.has_pooler):
        return specs
    roots = config.family.hf_encoder_roots
    if any(_encoder_name(spec, reader, hf_prefix, roots) in reader for spec in specs[-2:]):
        return specs
    logger.info("%s: no pooler in the checkpoint; it keeps its initialisation", reader.path)
    return specs[:-2]


def load_task_weights(encoder, head_specs, path, optional_pooler=False, head_class=None, what="task head") -> bool:
    """Loads an encoder's weights, and a task head's when the checkpoint has one that fits, from `path`.

    The encoder must load completely. The head loads only if every one of its variables is in the checkpoint (e.g.
    HF `classifier.*` from a `BertForSequenceClassification`) with this head's shapes, and, for a Hugging Face
    checkpoint whose `config.json` names its `architectures`, only from one of `head_class`; otherwise it keeps its
    fresh initialisation and the reason is logged (another number of labels: as transformers'
    `ignore_mismatched_sizes`; another kind of head, e.g. a sentence classifier's `classifier.*` for a tagger).

    Args:
        encoder: the task model's `BertEncoder`.
        head_specs: `WeightSpec`s of the task head (see `checkpoints.heads.head_specs`).
        path: a checkpoint directory or prefix (see `open_checkpoint`).
        optional_pooler: a checkpoint without the pooler is accepted and the pooler keeps its initialisation,
            for tasks that do not use it (HF saves `BertForTokenClassification` / `BertForQuestionAnswering`
            without one).
        head_class: the transformers class of the task model ("BertForTokenClassification"; None: any).
        what: the head, in the log ("masked-LM head").
    Returns: whether the head was loaded.
    """
    reader = open_checkpoint(path)
    config = encoder.config
    hf_prefix = hf_encoder_prefix(reader, config.family) if reader.format == "hf" else ""
    specs = _without_missing_pooler(encoder_specs(encoder), reader, hf_prefix, config,
                                    optional_pooler or config.family.pooler_optional)
    unused = restore(specs, reader, hf_prefix=hf_prefix, family=config.family)
    _check_leftovers(unused, reader.format, hf_prefix, reader.path, config.family)
    return load_head(head_specs, reader, head_class, what)


def load_head(head_specs, checkpoint, head_class=None, what="task head") -> bool:
    """Loads a task head from a checkpoint when it has one that fits (see `load_task_weights`), else logs why not.

    Args:
        head_specs: `WeightSpec`s of the task head (see `checkpoints.heads.head_specs`).
        checkpoint: a checkpoint path or an open `CheckpointReader`.
        head_class: the transformers class of the task model (None: any).
        what: the head, in the log ("masked-LM head").
    Returns: whether the head was loaded.
    """
    reader = checkpoint if isinstance(checkpoint, CheckpointReader) else open_checkpoint(checkpoint)
    if not head_specs or not all(spec.name(reader.format) in reader for spec in head_specs):
        logger.info("%s: no %s in the checkpoint; it starts from a fresh initialisation", reader.path, what)
        return False
    unfit = _unfit_head(reader, head_specs, head_class)
    if unfit:
        logger.warning("%s: %s; the %s starts from a fresh initialisation", reader.path, unfit, what)
        return False
    restore(head_specs, reader)
    return True


def _unfit_head(reader: CheckpointReader, head_specs: List[WeightSpec], head_class=None):
    """Why the checkpoint's head does not fit this one (another transformers class, or other shapes), or None."""
    architectures = (_hf_config_values(reader).get("architectures") or []) if reader.format == "hf" else []
    if head_class and architectures and head_class not in architectures:
        return f"its head is a {architectures[0]}'s, not a {head_class}'s"
    for spec in head_specs:
        name, expected = spec.name(reader.format), spec.stored_shape(reader.format)
        shape = tuple(reader.get(name).shape)
        if shape != expected:
            return f"its head's '{name}' has shape {shape}, this task's {expected} (another number of labels)"
    return None


def _hf_config_values(reader: CheckpointReader) -> dict:
    """The checkpoint's `config.json` as written (empty without one)."""
    if not reader.config_path or not os.path.isfile(reader.config_path):
        return {}
    with open(reader.config_path, encoding="utf-8") as f:
        return json.load(f)


def checkpoint_label_names(path):
    """The label names of a Hugging Face task checkpoint (`config.json`'s `id2label`, in id order), or None when it
    has none of its own (transformers' defaults `LABEL_0`, `LABEL_1`, ..., or no `id2label`)."""
    reader = open_checkpoint(path)
    id2label = _hf_config_values(reader).get("id2label") if reader.format == "hf" else None
    if not id2label:
        return None
    names = [str(id2label[key]) for key in sorted(id2label, key=int)]
    return None if names == [f"LABEL_{i}" for i in range(len(names))] else names


def follow_label_names(model, checkpoint_names, names, checkpoint):
    """Puts a loaded head's outputs in the model's label order when the checkpoint names the same labels in
    another (its `id2label`), as transformers' `run_glue.py` follows a model's `label2id`; other names are logged and
    the outputs kept in their order (so does `run_glue.py`).

    Args:
        model: a classifier or tagger, its head (`model.head`, the last dense layer) loaded.
        checkpoint_names: the checkpoint's label names in id order (`checkpoint_label_names`), or None.
        names: the model's label names in id order, or None (a kind without labels).
        checkpoint: the checkpoint's path, for the log.
    """
    if not checkpoint_names or not names or list(checkpoint_names) == list(names):
        return
    if sorted(checkpoint_names) != sorted(names):
        logger.warning("%s: its head was trained for the labels %s; this model's are %s: its outputs are read in "
                       "this model's order", checkpoint, ", ".join(checkpoint_names), ", ".join(names))
        return
    order = [list(checkpoint_names).index(name) for name in names]  # the model's label i = the checkpoint's order[i]
    kernel, bias = model.head.kernel, model.head.bias  # (hidden, labels), (labels,)
    kernel.assign(kernel.numpy()[:, order])
    bias.assign(bias.numpy()[order])
    logger.info("%s: its head's labels are in the order %s; reordered to this model's %s", checkpoint,
                ", ".join(checkpoint_names), ", ".join(names))


def save_encoder(encoder, path, vocab_file: str = None, overwrite: bool = False):
    """Writes a Hugging Face `BertModel` (`RobertaModel`, `XLMRobertaModel`, `DistilBertModel`, `AlbertModel`) directory
    (`config.json` + `model.safetensors`) for PyTorch users.

    Args:
        encoder: a `BertEncoder`.
        path: output directory (created).
        vocab_file: the tokenizer's file, copied in as `write_hf_directory` does (`vocab.txt`, RoBERTa's `vocab.json`
            with its `merges.txt`, ALBERT's `spiece.model`). Without it the directory holds no tokenizer, and
            transformers' `AutoTokenizer` cannot load it (pass it, then `model_dir.write_tokenizer_config` for the
            casing, as a model_dir's `encoder/` is written).
        overwrite: replace an existing `model.safetensors` there; otherwise that is an error.
    """
    tensors = {spec.hf_name: spec.to_stored_value("hf") for spec in encoder_specs(encoder)}
    return write_hf_directory(path, tensors, encoder.config.to_hf_dict(), vocab_file, overwrite)


def write_hf_directory(path, tensors, hf_config, vocab_file=None, overwrite=False):
    """Writes a Hugging Face model directory: `model.safetensors`, `config.json` and, when given, `vocab.txt`.

    Args:
        path: output directory (created).
        tensors: Hugging Face name -> array.
        hf_config: the contents of `config.json`.
        vocab_file: copied in as `vocab.txt` when given (RoBERTa's `vocab.json`: copied with its `merges.txt`;
            ALBERT's `*.model`: as `spiece.model`).
        overwrite: replace an existing `model.safetensors` there; otherwise that is an error.
    Returns: `path`.
    """
    from safetensors.numpy import save_file

    os.makedirs(path, exist_ok=True)
    weights_path = os.path.join(path, "model.safetensors")
    if os.path.exists(weights_path) and not overwrite:
        raise FileExistsError(f"{weights_path} exists; pass overwrite=True to replace it")
    save_file(tensors, weights_path, metadata={"format": "pt"})
    output_files.give_default_permissions(weights_path)  # safetensors writes 0o600: readable by its owner alone
    with open(os.path.join(path, "config.json"), "w", encoding="utf-8") as f:
        json.dump(hf_config, f, indent=2)
    if vocab_file and str(vocab_file).endswith(".json"):  # RoBERTa's vocab.json, with the merges.txt beside it
        shutil.copyfile(vocab_file, os.path.join(path, "vocab.json"))
        shutil.copyfile(os.path.join(os.path.dirname(vocab_file), "merges.txt"), os.path.join(path, "merges.txt"))
    elif vocab_file and str(vocab_file).endswith(".model"):  # ALBERT's SentencePiece model
        shutil.copyfile(vocab_file, os.path.join(path, "spiece.model"))
    elif vocab_file:
        shutil.copyfile(vocab_file, os.path.join(path, "vocab.txt"))
    return path


def encoder_tensors(encoder, fmt: str) -> dict:
    """Name -> array of every encoder weight in format `fmt` ("google" or "hf")."""
    return {spec.name(fmt): spec.to_stored_value(fmt) for spec in encoder_specs(encoder)}


