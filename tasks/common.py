"""Flags and set-up every fine-tuning entry point shares: init checkpoint, vocab, model_dir, optimizer, fit."""

import json
import logging
import math
import os

from absl import flags

FLAGS = flags.FLAGS


def define_common_flags(default_seq_length=128, default_learning_rate=5e-5):
    """Flags of every fine-tuning task (the task-specific ones live in each entry point)."""
    flags.DEFINE_string("init_checkpoint", None, "Hugging Face or Google BERT directory, or a model_dir of ours.")
    flags.DEFINE_string("vocab_file", None, "WordPiece vocab; default: found in the init checkpoint directory.")
    flags.DEFINE_boolean("do_lower_case", None, "Lower-case and strip accents; default: from the checkpoint.")
    flags.DEFINE_string("model_dir", None, "Where config, vocab, checkpoints, logs and results go.")
    flags.DEFINE_integer("max_seq_length", default_seq_length, "Packed sequence length.")
    flags.DEFINE_integer("train_batch_size", 32, "Global training batch size.")
    flags.DEFINE_integer("eval_batch_size", 64, "Evaluation / prediction batch size.")
    flags.DEFINE_float("learning_rate", default_learning_rate, "Peak learning rate.")
    flags.DEFINE_float("num_train_epochs", 3.0, "Training epochs.")
    flags.DEFINE_integer("num_train_steps", None, "Training steps; overrides --num_train_epochs.")
    flags.DEFINE_float("warmup_proportion", 0.1, "Fraction of steps with linear warmup.")
    flags.DEFINE_float("weight_decay", 0.01, "Decoupled weight decay (not on LayerNorm and biases).")
    flags.DEFINE_enum("optimizer", "adamw", ["adamw", "lamb"], "Optimizer.")
    flags.DEFINE_float("adam_epsilon", 1e-6, "Adam epsilon.")
    flags.DEFINE_boolean("jit_compile", None, "Compile the train and predict steps with XLA; default: on GPU/TPU "
                         "only (on CPU XLA is slower, see benchmarks/run.py).")
    flags.DEFINE_enum("mixed_precision", None, ["float16", "bfloat16"], "Mixed-precision compute dtype.")
    flags.DEFINE_enum("distribution_strategy", "one_device",
                      ["one_device", "mirrored", "multi_worker_mirrored", "tpu"], "tf.distribute strategy.")
    flags.DEFINE_string("tpu", None, "TPU address for --distribution_strategy=tpu.")
    flags.DEFINE_integer("checkpoint_steps", 500, "Steps between checkpoints (a restarted run resumes there).")
    flags.DEFINE_integer("seed", 42, "Seed for initialisation, shuffling and dropout.")
    flags.DEFINE_boolean("do_train", True, "Train.")
    flags.DEFINE_boolean("do_eval", True, "Evaluate on the dev split(s).")
    flags.DEFINE_boolean("do_predict", False, "Write predictions for the test split(s).")


def jit_compile():
    """--jit_compile, or without it the device's default (`training.default_jit_compile`)."""
    from official_bert.training import default_jit_compile

    return default_jit_compile() if FLAGS.jit_compile is None else FLAGS.jit_compile


def resolve_init_checkpoint(path):
    """A model_dir of ours points to its `encoder/` (a Hugging Face directory); other paths pass through."""
    if path and os.path.isfile(os.path.join(path, "task.json")) and os.path.isdir(os.path.join(path, "encoder")):
        return os.path.join(path, "encoder")
    return path


def prepare_model_dir(model_dir, task_info):
    """Creates `model_dir`, writes the config/vocab/task files, and returns `(config, vocab_file, lower_case)`.

    Config and vocab come from --init_checkpoint (and --vocab_file / --do_lower_case). A model_dir from an
    earlier run of a different task or shape is an error naming the differing field, so a resume never
    mixes runs.

    Args:
        model_dir: the run directory.
        task_info: task-specific facts saved in `task.json` (task name, label names, ...).
    """
    from official_bert.checkpoints import load_config, open_checkpoint
    from official_bert.checkpoints.vocab import find_vocab, read_vocab_file, write_vocab_file
    from official_bert.training import write_json

    if not FLAGS.init_checkpoint:
        raise ValueError("--init_checkpoint is required (a Hugging Face or Google BERT directory)")
    init = resolve_init_checkpoint(FLAGS.init_checkpoint)
    config = load_config(open_checkpoint(init))
    if FLAGS.vocab_file:
        tokens, lower, source = read_vocab_file(FLAGS.vocab_file), None, FLAGS.vocab_file
    else:
        tokens, lower, source = find_vocab(init)
    if FLAGS.do_lower_case is not None:
        lower = FLAGS.do_lower_case
    if lower is None:
        lower = True
        logging.warning("Casing of %s unknown; lower-casing (pass --do_lower_case=false for a cased model)", source)
    if len(tokens) != config.vocab_size:
        raise ValueError(f"{source}: {len(tokens)} tokens, but the checkpoint's config has vocab_size="
                         f"{config.vocab_size}")

    info = {**task_info, "max_seq_length": FLAGS.max_seq_length, "do_lower_case": lower}
    task_path = os.path.join(model_dir, "task.json")
    if os.path.isfile(task_path):
        with open(task_path, encoding="utf-8") as f:
            previous = json.load(f)
        for key, value in info.items():
            if previous.get(key) != value:
                raise ValueError(f"{task_path}: field '{key}' is {previous.get(key)!r} from an earlier run, but this "
                                 f"run has {value!r}; use another --model_dir")
    os.makedirs(model_dir, exist_ok=True)
    write_json(task_path, info)
    write_json(os.path.join(model_dir, "bert_config.json"), config.to_dict())
    vocab_file = os.path.join(model_dir, "vocab.txt")
    write_vocab_file(tokens, vocab_file)
    return config, vocab_file, lower


def train_steps(num_examples):
    """Total and warmup steps from --num_train_steps or --num_train_epochs."""
    steps = FLAGS.num_train_steps or math.ceil(num_examples * FLAGS.num_train_epochs / FLAGS.train_batch_size)
    return steps, int(steps * FLAGS.warmup_proportion)


def fit_and_save(model, make_dataset, total_steps, vocab_file):
    """Trains with `training.fit_resumable`, then writes `model.weights.h5` and `encoder/` (Hugging Face) to
    --model_dir.

    Args:
        model: a compiled task model with an `encoder` attribute.
        make_dataset: `f(skip_batches) -> tf.data.Dataset` of training batches (see `fit_resumable`).
        total_steps: optimizer steps of the whole run.
        vocab_file: copied into `encoder/`.
    """
    from official_bert import training
    from official_bert.checkpoints import save_encoder

    training.fit_resumable(model, make_dataset, total_steps, FLAGS.model_dir, FLAGS.train_batch_size,
                           checkpoint_steps=FLAGS.checkpoint_steps)
    model.save_weights(os.path.join(FLAGS.model_dir, "model.weights.h5"), overwrite=True)
    save_encoder(model.encoder, os.path.join(FLAGS.model_dir, "encoder"), vocab_file=vocab_file, overwrite=True)


def load_trained_weights(model):
    """Without --do_train: the weights of an earlier run in --model_dir, if there are any."""
    path = os.path.join(FLAGS.model_dir, "model.weights.h5")
    if os.path.isfile(path):
        model.load_weights(path)
    else:
        logging.warning("%s not found: predicting with the --init_checkpoint weights", path)
