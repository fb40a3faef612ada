"""What a run writes where: the checks before anything runs, a training run's model_dir files, the run settings an
evaluation records, and the trained model."""

import logging
import os

from official_bert import model_dir as model_dirs
from official_bert import owned_files
from official_bert import run_record as run_records

logger = logging.getLogger(__name__)


def _writable(path):
    """Whether `path`, or its nearest existing parent (where it would be created), can be written."""
    from official_bert.output_files import nearest_existing

    return os.access(nearest_existing(path), os.W_OK)


def check_output(config):
    """Refuses before anything runs: --overwrite without training, a directory the run writes that is read-only
    or holds files official-bert did not write (`owned_files`)."""
    if config.overwrite and not config.do_train:
        raise ValueError("--overwrite deletes an earlier run to train again; it needs --do_train")
    if config.keep_checkpoints < 1:
        raise ValueError(f"--keep_checkpoints={config.keep_checkpoints}: at least the last checkpoint is kept (a "
                         "restarted run resumes from it)")
    evaluates = config.do_eval or config.do_predict
    if config.do_train or (evaluates and not config.output_dir):
        owned_files.check_writable_here(config.model_dir, "--model_dir")
    if evaluates and config.output_dir:
        owned_files.check_writable_here(config.output_dir, "--output_dir")
    if config.do_train and not _writable(config.model_dir):
        raise ValueError(f"--model_dir={config.model_dir} cannot be written (read-only)")
    results_dir = config.output_dir or config.model_dir
    if not _writable(results_dir):
        flag = "--output_dir" if config.output_dir else "--model_dir"
        raise ValueError(f"{flag}={results_dir} cannot be written (read-only); evaluation and prediction write "
                         f"their results there{'' if config.output_dir else ': pass --output_dir'}")


def prepare_model_dir(task, config, bert_config, info, tokens, record):
    """For a training run, under the model_dir's lock: refuses to continue another run (or, with --overwrite,
    deletes it), then writes task.json (`info` and the task's run settings), bert_config.json, vocab.txt and
    run.json."""
    from official_bert.model_dir_lock import LOCK_FILE
    from official_bert.text.preprocessing import tokenizer_file_names, write_tokenizer_files

    if config.overwrite:
        removed = owned_files.remove_ours(config.model_dir, keep=(LOCK_FILE,))
        if removed:
            logger.info("--overwrite: deleted the earlier run's %s in %s", ", ".join(removed), config.model_dir)
    run_records.check_same_training(config.model_dir, record)
    for name in (model_dirs.TASK_FILE, model_dirs.CONFIG_FILE, run_records.RUN_FILE, *tokenizer_file_names(tokens)):
        owned_files.claim(config.model_dir, name)
    model_dirs.write_task_info(config.model_dir, task.kind, {**info, **task.run_settings()})
    model_dirs.write_json(os.path.join(config.model_dir, model_dirs.CONFIG_FILE), bert_config.to_dict())
    if tokens is not None:
        write_tokenizer_files(tokens, config.model_dir)
    run_records.write_run_record(config.model_dir, record)


def record_run_settings(task, config):
    """Evaluation of a finished run writes none of its training files; only run settings the user changed (e.g.
    SQuAD's answer settings, which export serves) are recorded in task.json, when the model_dir is writable."""
    settings = task.run_settings()
    info = model_dirs.read_task_info(config.model_dir)
    changed = {k: v for k, v in settings.items() if info.get(k) != v}
    if not changed:
        return
    if not os.access(config.model_dir, os.W_OK):
        logger.warning("%s is read-only: %s not recorded in its task.json (export serves the recorded ones)",
                       config.model_dir, changed)
        return
    model_dirs.write_task_info(config.model_dir, info["kind"], {**info, **changed})
    logger.info("Recorded %s in %s", changed, os.path.join(config.model_dir, model_dirs.TASK_FILE))


def save_trained(model, out_dir, vocab_file, lower_case):
    """`model.weights.h5` (the weights only: a finished run needs no optimizer state to evaluate, export or start
    another run; the checkpoints keep it for a resume) and `encoder/` (a Hugging Face directory with its vocab and
    casing) in `out_dir`."""
    from official_bert.checkpoints import save_encoder

    optimizer = getattr(model, "optimizer", None)  # Keras saves a compiled model's optimizer with its weights
    if optimizer is not None:
        model.optimizer = None
    try:
        model.save_weights(owned_files.claim(out_dir, model_dirs.WEIGHTS_FILE), overwrite=True)
    finally:
        if optimizer is not None:
            model.optimizer = optimizer
    encoder_dir = owned_files.claim(out_dir, model_dirs.ENCODER_DIR)
    save_encoder(model.encoder, encoder_dir, vocab_file=vocab_file, overwrite=True)
    model_dirs.write_tokenizer_config(encoder_dir, lower_case, vocab_file)
