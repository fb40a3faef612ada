"""Pre-trains BERT with the masked-LM and next-sentence objectives (or continues a checkpoint).

    # TFRecords of tasks.create_pretraining_data (or Google's), a model from scratch:
    python -m tasks.run_pretraining --input_files='out/data/*.tfrecord' --preset=uncased_L-4_H-256_A-4 \
        --vocab_file=../shared/data/bert-vocab/bert-base-uncased-vocab.txt --model_dir=out/pretrain \
        --train_batch_size=256 --max_seq_length=128 --max_predictions_per_seq=20 \
        --num_train_steps=100000 --num_warmup_steps=10000 --learning_rate=1e-4 --optimizer=lamb
    # raw text with dynamic masking (fresh masks every epoch), continuing a checkpoint:
    python -m tasks.run_pretraining --text_files='corpus/*.txt' --init_checkpoint=../shared/data/all-MiniLM-L6-v2 \
        --model_dir=out/continue --num_train_steps=1000 --num_warmup_steps=100

Writes to --model_dir: `bert_config.json`, `vocab.txt`, `task.json` (sequence length, predictions per sequence,
casing), `checkpoints/` (resumed automatically), `logs/` (TensorBoard), `train_results.json`,
`model.weights.h5` (the whole pre-trainer, Keras), `pretrainer/` (a Hugging Face `BertForPreTraining`
directory, heads included), `encoder/` (a Hugging Face `BertModel` directory, for fine-tuning) and with
--do_eval `eval_results.json` (masked-LM and next-sentence loss and accuracy on --eval_files).
"""

import glob
import logging
import os
import shutil

from absl import app, flags

from tasks import common

FLAGS = flags.FLAGS
flags.DEFINE_string("input_files", None, "Comma-separated globs of pre-training TFRecord files "
                    "(tasks.create_pretraining_data or Google's create_pretraining_data.py).")
flags.DEFINE_string("text_files", None, "Comma-separated globs of raw text files (one sentence per line, a blank "
                    "line between documents), masked on the fly (dynamic masking) instead of --input_files.")
flags.DEFINE_string("eval_files", None, "With --do_eval: globs of held-out files in the format of the training "
                    "input: text when --text_files is given (with --do_train=false too), else TFRecords.")
flags.DEFINE_string("bert_config_file", None, "bert_config.json / config.json of the model (default: the one of "
                    "--init_checkpoint).")
flags.DEFINE_string("preset", None, "A named config from configs/ (e.g. bert_base_uncased, uncased_L-4_H-256_A-4) "
                    "instead of --bert_config_file.")
flags.DEFINE_integer("max_predictions_per_seq", 20, "Masked positions per sequence (padded).")
flags.DEFINE_float("masked_lm_prob", 0.15, "--text_files: fraction of word pieces masked.")
flags.DEFINE_boolean("do_whole_word_mask", False, "--text_files: mask all pieces of a word together.")
flags.DEFINE_integer("num_warmup_steps", 10000, "Linear warmup steps, then linear decay to 0.")
flags.DEFINE_integer("steps_per_loop", 1, "Steps per host call (Keras steps_per_execution); raise on TPUs. "
                     "--checkpoint_steps and --log_steps must be multiples of it.")
flags.DEFINE_integer("log_steps", 100, "Steps between log lines; the logged metrics average these steps.")
flags.DEFINE_integer("max_eval_steps", 100, "Evaluation batches at most.")
common.define_run_flags(
    skip=("num_train_epochs", "warmup_proportion", "do_predict"), learning_rate=1e-4, eval_batch_size=32,
    num_train_steps=100000, checkpoint_steps=1000, do_eval=False,
    helps={"init_checkpoint": "Optional: a Hugging Face or Google BERT checkpoint, or a model_dir of ours, to "
                              "continue; heads it lacks start fresh. Unset: train from scratch.",
           "vocab_file": "WordPiece vocab; default: found beside --init_checkpoint. Required for --text_files.",
           "do_eval": "Evaluate on --eval_files."})


def expand_globs(patterns, flag):
    """The files of comma-separated globs (local, or gs://... through tf.io.gfile); a glob matching nothing is an
    error."""
    files = []
    for pattern in (p.strip() for p in patterns.split(",")):
        if not pattern:
            continue
        if "://" in pattern:
            import tensorflow as tf

            matched = sorted(tf.io.gfile.glob(pattern))
        else:
            matched = sorted(glob.glob(pattern))
        if not matched:
            raise ValueError(f"--{flag}: no file matches {pattern!r}")
        files.extend(matched)
    return files


def resolve_config_and_vocab():
    """The model config, the vocab tokens (or None) and the casing, from the flags and --init_checkpoint."""
    from official_bert import BertConfig
    from official_bert.checkpoints import load_config, open_checkpoint
    from official_bert.checkpoints.vocab import find_vocab
    from official_bert.text.vocab import load_vocab

    init = init_checkpoint_path()
    if FLAGS.bert_config_file and FLAGS.preset:
        raise app.UsageError("pass --bert_config_file or --preset, not both")
    if FLAGS.bert_config_file:
        config = BertConfig.from_json_file(FLAGS.bert_config_file)
    elif FLAGS.preset:
        config = BertConfig.from_preset(FLAGS.preset)
    elif init:
        config = load_config(open_checkpoint(init))
    else:
        raise app.UsageError("pass --init_checkpoint, --bert_config_file or --preset")
    tokens, lower, source = None, None, None
    if FLAGS.vocab_file:
        tokens, source = load_vocab(FLAGS.vocab_file), FLAGS.vocab_file
    elif init:
        try:
            tokens, lower, source = find_vocab(init)
        except FileNotFoundError:
            if FLAGS.text_files:
                raise
    if FLAGS.do_lower_case is not None:
        lower = FLAGS.do_lower_case
    if lower is None:
        lower = True
    if tokens is not None and len(tokens) != config.vocab_size:
        raise ValueError(f"{source}: {len(tokens)} tokens, but the model config has vocab_size={config.vocab_size}")
    if tokens is None and FLAGS.text_files:
        raise app.UsageError("--text_files needs a vocab: pass --vocab_file")
    if FLAGS.max_seq_length > config.max_position_embeddings:
        raise ValueError(f"--max_seq_length={FLAGS.max_seq_length} exceeds the model's max_position_embeddings="
                         f"{config.max_position_embeddings}")
    return config, tokens, lower


def init_checkpoint_path():
    """--init_checkpoint, with a model_dir of ours pointing to its `pretrainer/` (heads included)."""
    from official_bert import model_dir

    return model_dir.resolve_init_checkpoint(FLAGS.init_checkpoint, heads=model_dir.PRETRAINER_DIR)


def prepare_model_dir(config, tokens, lower_case):
    """Writes `task.json`, `bert_config.json` and `vocab.txt`; an earlier run of another shape is an error."""
    from official_bert import model_dir
    from official_bert.checkpoints.vocab import write_vocab_file

    info = {"task": "pretraining", "max_seq_length": FLAGS.max_seq_length,
            "max_predictions_per_seq": FLAGS.max_predictions_per_seq, "do_lower_case": lower_case,
            "config": config.to_dict()}
    model_dir.check_same_run(FLAGS.model_dir, model_dir.PRETRAINING, info)
    model_dir.write_task_info(FLAGS.model_dir, model_dir.PRETRAINING, info)
    model_dir.write_json(os.path.join(FLAGS.model_dir, model_dir.CONFIG_FILE), config.to_dict())
    if tokens is None:
        return None
    vocab_file = os.path.join(FLAGS.model_dir, model_dir.VOCAB_FILE)
    write_vocab_file(tokens, vocab_file)
    return vocab_file


def distributed_dataset(strategy, dataset_fn, global_batch_size, skip_batches=0, take_batches=None):
    """A per-host input pipeline for `strategy` (`distribute_datasets_from_function`), as input to `fit`.

    Args:
        strategy: the `tf.distribute` strategy.
        dataset_fn: `f(batch_size, input_context) -> tf.data.Dataset` of pre-training feature dicts with
            `batch_size` examples per batch, sharded by `input_context` (one shard per host).
        global_batch_size: examples per step over all replicas.
        skip_batches: global steps already trained; each host skips the batches its replicas consumed.
        take_batches: at most this many global batches (None: all).
    Returns: a distributed dataset of `(inputs, labels)` (see `BertPretrainer`).
    """
    from official_bert.models.pretrainer import split_features

    if global_batch_size % strategy.num_replicas_in_sync:
        raise ValueError(f"batch size {global_batch_size} is not divisible by the {strategy.num_replicas_in_sync} "
                         "replicas")

    def per_host(context):
        replicas_per_host = context.num_replicas_in_sync // context.num_input_pipelines
        dataset = dataset_fn(context.get_per_replica_batch_size(global_batch_size), context)
        dataset = dataset.skip(skip_batches * replicas_per_host)
        if take_batches is not None:
            dataset = dataset.take(take_batches * replicas_per_host)
        return dataset.map(split_features)

    return strategy.distribute_datasets_from_function(per_host)


def source_fn(file_patterns, tokenizer, is_training):
    """`f(batch_size, input_context)` reading --input_files' TFRecords, or --text_files with dynamic masking
    (`tokenizer` a `BertTokenizer`)."""
    from official_bert.data.pretraining_dataset import dynamic_masking_dataset, pretraining_dataset

    if FLAGS.text_files:
        return lambda batch_size, context: dynamic_masking_dataset(
            file_patterns, tokenizer, batch_size, FLAGS.max_seq_length, FLAGS.max_predictions_per_seq,
            masked_lm_prob=FLAGS.masked_lm_prob, is_training=is_training, seed=FLAGS.seed,
            do_whole_word_mask=FLAGS.do_whole_word_mask, input_context=context)
    return lambda batch_size, context: pretraining_dataset(
        file_patterns, batch_size, FLAGS.max_seq_length, FLAGS.max_predictions_per_seq, is_training=is_training,
        seed=FLAGS.seed, input_context=context)


def metrics_logger(every, total_steps):
    """A Keras callback that logs the metrics every `every` steps and then resets them, so each line (and each
    TensorBoard point) averages the steps since the previous one rather than the whole run."""
    import keras

    class MetricsLogger(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            step = int(self.model.optimizer.iterations.numpy())
            if logs and (step % every == 0 or step >= total_steps):
                logging.info("step %d/%d: %s", step, total_steps,
                             ", ".join(f"{k}={float(v):.4f}" for k, v in sorted(logs.items())))
                if step < total_steps:  # the last window stays: Keras reads it as the run's final figures
                    self.model.reset_metrics()

    return MetricsLogger()


def build_model(strategy, config, total_steps):
    """The pre-trainer, loaded from --init_checkpoint if given, compiled."""
    from official_bert import BertEncoder, training
    from official_bert.checkpoints import load_pretrainer_weights
    from official_bert.models.pretrainer import BertPretrainer
    from official_bert.optimization import create_optimizer

    jit_compile = training.default_jit_compile() if FLAGS.jit_compile is None else FLAGS.jit_compile
    with strategy.scope():
        model = BertPretrainer(BertEncoder(config))
        init = init_checkpoint_path()
        if init:
            loaded = load_pretrainer_weights(model, init)
            logging.info("Loaded %s (masked-LM head %s, next-sentence head %s)", init,
                         *("loaded" if loaded[k] else "freshly initialised" for k in ("masked_lm", "next_sentence")))
        optimizer = create_optimizer(FLAGS.learning_rate, total_steps, FLAGS.num_warmup_steps, FLAGS.optimizer,
                                     FLAGS.weight_decay, FLAGS.adam_epsilon)
        model.compile(optimizer=optimizer, jit_compile=jit_compile, steps_per_execution=FLAGS.steps_per_loop)
    return model


def save_outputs(model, out_dir, vocab_file, lower_case):
    """`model.weights.h5`, `pretrainer/` (HF BertForPreTraining) and `encoder/` (HF BertModel) in `out_dir`, the
    two directories with their casing."""
    from official_bert import model_dir
    from official_bert.checkpoints import save_pretrainer
    from official_bert.runner import save_trained

    save_trained(model, out_dir, vocab_file, lower_case)
    pretrainer_dir = os.path.join(out_dir, model_dir.PRETRAINER_DIR)
    save_pretrainer(model, pretrainer_dir, vocab_file=vocab_file, overwrite=True)
    model_dir.write_tokenizer_config(pretrainer_dir, lower_case)


def evaluate(model, strategy, eval_source):
    """Masked-LM and next-sentence loss and accuracy over at most --max_eval_steps batches of --eval_files."""
    dataset = distributed_dataset(strategy, eval_source, FLAGS.eval_batch_size, take_batches=FLAGS.max_eval_steps)
    model.reset_metrics()
    results = model.evaluate(dataset, return_dict=True, verbose=0)
    results = {k: float(v) for k, v in results.items()}
    # Every replica adds the global batch's counts (see BertPretrainer.compute_metrics); reading sums the replicas.
    replicas = strategy.num_replicas_in_sync
    results["masked_lm_predictions"] = round(float(model.masked_lm_loss_tracker.count.numpy()) / replicas)
    results["examples"] = round(float(model.next_sentence_loss_tracker.count.numpy()) / replicas)
    results["global_step"] = int(model.optimizer.iterations.numpy())
    return results


def main(_):
    if not FLAGS.model_dir:
        raise app.UsageError("--model_dir is required")
    if FLAGS.input_files and FLAGS.text_files or FLAGS.do_train and not (FLAGS.input_files or FLAGS.text_files):
        raise app.UsageError("pass exactly one of --input_files (TFRecords) and --text_files (raw text)")
    if FLAGS.do_eval and not FLAGS.eval_files:
        raise app.UsageError("--do_eval needs --eval_files")
    for name in ("checkpoint_steps", "log_steps"):
        if getattr(FLAGS, name) % FLAGS.steps_per_loop:
            raise app.UsageError(f"--{name}={getattr(FLAGS, name)} must be a multiple of "
                                 f"--steps_per_loop={FLAGS.steps_per_loop}")
    flag = "text_files" if FLAGS.text_files else "input_files"
    train_files = expand_globs(getattr(FLAGS, flag), flag) if FLAGS.do_train else None
    eval_files = expand_globs(FLAGS.eval_files, "eval_files") if FLAGS.do_eval else None

    config, tokens, lower_case = resolve_config_and_vocab()

    from official_bert import model_dir, training
    from official_bert.runner import start_process

    strategy, chief, out_dir = start_process(FLAGS.seed, FLAGS.mixed_precision, FLAGS.distribution_strategy, FLAGS.tpu,
                                             FLAGS.model_dir)
    if chief:
        vocab_file = prepare_model_dir(config, tokens, lower_case)
    else:
        vocab_file = os.path.join(out_dir, "vocab.txt") if tokens is not None else None
        if vocab_file:
            from official_bert.checkpoints.vocab import write_vocab_file

            write_vocab_file(tokens, vocab_file)
    logging.info("Pre-training %d layers, hidden %d on %d replica(s), %s; global batch %d, %d steps (%d warmup)",
                 config.num_hidden_layers, config.hidden_size, strategy.num_replicas_in_sync,
                 FLAGS.distribution_strategy, FLAGS.train_batch_size, FLAGS.num_train_steps, FLAGS.num_warmup_steps)
    model = build_model(strategy, config, FLAGS.num_train_steps)
    tokenizer = None
    if FLAGS.text_files:
        from official_bert.text import BertTokenizer

        tokenizer = BertTokenizer(vocab_file=vocab_file, lower_case=lower_case)

    if FLAGS.do_train:
        train_source = source_fn(train_files, tokenizer, is_training=True)

        def make_dataset(skip_batches):
            return distributed_dataset(strategy, train_source, FLAGS.train_batch_size, skip_batches)

        training.fit_resumable(model, make_dataset, FLAGS.num_train_steps, FLAGS.model_dir, FLAGS.train_batch_size,
                               checkpoint_steps=FLAGS.checkpoint_steps, verbose=0, write_dir=out_dir,
                               callbacks=[metrics_logger(FLAGS.log_steps, FLAGS.num_train_steps)])
        save_outputs(model, out_dir, vocab_file, lower_case)
    else:
        weights = os.path.join(FLAGS.model_dir, "model.weights.h5")
        if os.path.isfile(weights):
            model.load_weights(weights)
        elif FLAGS.init_checkpoint:
            logging.warning("%s not found: evaluating the --init_checkpoint weights", weights)
        else:
            raise FileNotFoundError(f"{weights} not found: train first, or pass --init_checkpoint")

    if FLAGS.do_eval:
        eval_source = source_fn(eval_files, tokenizer, is_training=False)
        results = evaluate(model, strategy, eval_source)
        model_dir.write_json(os.path.join(out_dir, "eval_results.json"), results)
        print("eval results:", ", ".join(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}"
                                         for k, v in sorted(results.items())))
    if not chief:
        shutil.rmtree(out_dir, ignore_errors=True)


if __name__ == "__main__":
    from official_bert.cli import quiet_native_logs, run_main

    quiet_native_logs()
    run_main(main)
