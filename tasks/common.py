"""The run flags every training entry point shares, parsed once into a `RunConfig` (each entry point defines
its task's own flags, and may give a shared flag its own default or help, or leave it out)."""

from absl import flags

from official_bert.run_process import STRATEGIES

FLAGS = flags.FLAGS
# The flags `define_run_flags` defines belong to the entry point that calls it (absl then lists them in that
# entry point's --help, not only under --helpfull), as if it had defined them itself.
flags.disclaim_key_flags()

# name -> (absl DEFINE function name, default, help, enum values): the fields of `official_bert.runner.RunConfig`.
RUN_FLAGS = {
    "init_checkpoint": ("string", None, "Hugging Face or Google BERT directory, a model_dir of ours, or a Hugging "
                        "Face hub id (org/name, fetched into huggingface_hub's cache); default: see the entry point."),
    "vocab_file": ("string", None, "WordPiece vocab; default: found in the init checkpoint directory."),
    "do_lower_case": ("boolean", None, "Lower-case and strip accents; default: from the checkpoint."),
    "model_dir": ("string", None, "Where config, vocab, checkpoints, logs and results go."),
    "max_seq_length": ("integer", 128, "Packed sequence length."),
    "train_batch_size": ("integer", 32, "Global training batch size."),
    "eval_batch_size": ("integer", 64, "Evaluation / prediction batch size."),
    "learning_rate": ("float", 5e-5, "Peak learning rate."),
    "num_train_epochs": ("float", 3.0, "Training epochs."),
    "num_train_steps": ("integer", None, "Training steps; overrides --num_train_epochs."),
    "warmup_proportion": ("float", 0.1, "Fraction of steps with linear warmup."),
    "weight_decay": ("float", 0.01, "Decoupled weight decay (not on LayerNorm and biases)."),
    "optimizer": ("enum", "adamw", "AdamW (as BERT) or LAMB (large batches).", ["adamw", "lamb"]),
    "adam_epsilon": ("float", 1e-6, "Adam / LAMB epsilon."),
    "jit_compile": ("boolean", None, "Compile the train and predict steps with XLA; default: on GPU/TPU only (on "
                    "CPU XLA is slower, see benchmarks/run.py)."),
    "train_on_real_tokens": ("boolean", True, "Classifiers, taggers and span labelers train on each batch's real "
                             "tokens only (TensorFlow without XLA); --notrain_on_real_tokens trains on the padded "
                             "batch (span labelers: transformers' objective, whose softmax takes in the padding)."),
    "mixed_precision": ("enum", None, "Mixed-precision compute dtype.", ["float16", "bfloat16"]),
    "distribution_strategy": ("enum", "one_device", "tf.distribute strategy.", list(STRATEGIES)),
    "tpu": ("string", None, "TPU address for --distribution_strategy=tpu (name or grpc://...; '' = local)."),
    "checkpoint_steps": ("integer", 500, "Steps between checkpoints (a restarted run resumes there)."),
    "keep_checkpoints": ("integer", 1, "Checkpoints kept (the latest ones; a restarted run resumes from the last)."),
    "seed": ("integer", 42, "Seed for initialisation, shuffling and dropout."),
    "deterministic": ("boolean", False, "TensorFlow op determinism: a rerun, or a resumed run, ends with "
                      "bit-identical weights (docs/classification.md: what it costs)."),
    "do_train": ("boolean", True, "Train."),
    "do_eval": ("boolean", True, "Evaluate on the dev split(s)."),
    "do_predict": ("boolean", False, "Write predictions for the test split(s)."),
    "output_dir": ("string", None, "Where evaluation results and predictions go; default: --model_dir (pass it "
                   "to evaluate a read-only model_dir)."),
    "overwrite": ("boolean", False, "Delete an earlier run in --model_dir and train from the start (without it, "
                  "a training run that differs from the model_dir's earlier run is refused)."),
}


def define_run_flags(skip=(), helps=None, **defaults):
    """Defines the `RUN_FLAGS`.

    Args:
        skip: names the entry point does not offer.
        helps: name -> help text replacing the shared one.
        **defaults: name=value defaults replacing the shared ones.
    """
    unknown = (set(skip) | set(helps or {}) | set(defaults)) - set(RUN_FLAGS)
    if unknown:
        raise ValueError(f"not run flags: {sorted(unknown)}")
    for name, (kind, default, text, *enum_values) in RUN_FLAGS.items():
        if name in skip:
            continue
        default, text = defaults.get(name, default), (helps or {}).get(name, text)
        if kind == "enum":
            flags.DEFINE_enum(name, default, enum_values[0], text)
        else:
            getattr(flags, f"DEFINE_{kind}")(name, default, text)


def given_run_flags():
    """The run flags given on the command line."""
    return [name for name in RUN_FLAGS if name in FLAGS and FLAGS[name].present]


def run_config():
    """The parsed run flags as a `RunConfig`. An evaluation of a finished model_dir (`--do_train=false`) without
    `--max_seq_length` packs at the length it was trained at (task.json's), not the flag's default."""
    from official_bert import model_dir as model_dirs
    from official_bert.runner import RunConfig

    values = {name: FLAGS[name].value for name in RUN_FLAGS if name in FLAGS}  # less the skipped ones
    model_dir = values.get("model_dir")
    if "max_seq_length" in values and not values.get("do_train", True) and not FLAGS["max_seq_length"].present \
            and model_dir and model_dirs.is_model_dir(model_dir):
        values["max_seq_length"] = model_dirs.read_task_info(model_dir).get("max_seq_length", values["max_seq_length"])
    return RunConfig(**values)
