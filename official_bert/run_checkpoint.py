"""What a run's model starts from: its `BertConfig`, init checkpoint, vocab and casing, resolved once from the
`RunConfig` and the task, and checked before anything is written."""

import dataclasses
import os
from typing import Optional

from official_bert import model_dir as model_dirs
from official_bert.families import check_sequence_length


@dataclasses.dataclass
class ModelSettings:
    """The model a run trains, evaluates or predicts with.

    Attributes:
        bert_config: the model's `BertConfig`.
        init_checkpoint: the checkpoint directory its weights load from (`model_dir.resolve_init_checkpoint`);
            None: a finished run's model_dir (its trained weights) or a model trained from scratch.
        tokens: the vocab's tokens; None for a task with no vocab.
        lower_case: the casing.
        finished: whether the run evaluates or predicts with a model_dir that holds trained weights
            (`is_finished_run`).
    """
    bert_config: object
    init_checkpoint: Optional[str]
    tokens: Optional[list]
    lower_case: bool
    finished: bool


def is_finished_run(config):
    """Whether `config` evaluates or predicts (no training) with a model_dir that holds trained weights."""
    return not config.do_train and model_dirs.is_model_dir(config.model_dir) and os.path.isfile(
        os.path.join(config.model_dir, model_dirs.WEIGHTS_FILE))


def resolve_checkpoint_settings(config, task):
    """The `ModelSettings` of the task's model and `config`'s checkpoint, vocab and casing.

    The model's shape is the task's `model_config()` or else the init checkpoint's; the vocab is
    `config.vocab_file` or the one beside the checkpoint (a task that reads no text may have none).

    Args:
        config: the `RunConfig`.
        task: the `official_bert.tasks.base.Task`.

    Raises:
        ValueError: no init checkpoint where the task needs one, a vocab larger than the model's table, or a
            sequence length over the model's position limit.
    """
    from official_bert.checkpoints import load_config, open_checkpoint
    from official_bert.checkpoints.hub import checkpoint_path
    from official_bert.text.preprocessing import check_vocab_size, find_family_vocab, read_vocab_file, resolve_casing

    if is_finished_run(config):  # evaluation / prediction of a trained model_dir: its model, vocab and casing
        from official_bert.config import BertConfig

        info = model_dirs.read_task_info(config.model_dir)
        bert_config = BertConfig.from_json_file(os.path.join(config.model_dir, model_dirs.CONFIG_FILE))
        vocab = model_dirs.vocab_file_of(config.model_dir, bert_config)
        tokens = read_vocab_file(vocab) if os.path.isfile(vocab) else None
        check_sequence_length(config.max_seq_length, bert_config, "--max_seq_length")
        return ModelSettings(bert_config, None, tokens, bool(info["do_lower_case"]), finished=True)
    if not config.init_checkpoint and task.needs_init_checkpoint:
        raise ValueError("--init_checkpoint is required (a Hugging Face or Google BERT directory, a model_dir, or a "
                         "Hugging Face hub id)")
    init = config.init_checkpoint and checkpoint_path(config.init_checkpoint)  # a hub id: its cached snapshot
    init = model_dirs.resolve_init_checkpoint(init, heads=task.init_heads)
    bert_config = task.model_config() or load_config(open_checkpoint(init))
    tokens, lower, source = None, None, None
    if config.vocab_file:  # vocab.txt, RoBERTa's vocab.json (merges.txt beside it) or ALBERT's spiece.model
        tokens, source = read_vocab_file(config.vocab_file, bert_config.model_type), config.vocab_file
    elif init:
        try:
            tokens, lower, source = find_family_vocab(init, bert_config.model_type)
        except FileNotFoundError:
            if task.needs_vocab:
                raise
    if tokens is None and task.needs_vocab:
        raise ValueError("this task reads text and needs a vocab: pass --vocab_file")
    if model_dirs.is_model_dir(config.init_checkpoint):  # our own run: its task.json knows the casing
        lower = model_dirs.read_task_info(config.init_checkpoint)["do_lower_case"]
    if config.do_lower_case is not None:
        lower = config.do_lower_case
    if tokens is None:
        lower = True if lower is None else lower
    else:
        lower = resolve_casing(lower, source, " (pass --do_lower_case=false for a cased model)")
        check_vocab_size(tokens, bert_config.vocab_size, source)
    check_sequence_length(config.max_seq_length, bert_config, "--max_seq_length")
    return ModelSettings(bert_config, init, tokens, bool(lower), finished=False)
