"""PretrainingTask: masked-LM + next-sentence (or sentence-order, or no sentence) pre-training for the runner."""

import glob
import logging
import warnings

from official_bert import model_dir as model_dirs
from official_bert import owned_files
from official_bert.tasks.base import BPE, TOKENIZER_KINDS, Task, checked_steps_per_loop

logger = logging.getLogger(__name__)


def expand_globs(patterns, flag):
    """The files of comma-separated globs (local, or gs://... through tf.io.gfile).

    Raises:
        ValueError: a glob matches nothing (named, with its flag).
    """
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
    import tensorflow as tf

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
        return dataset.map(tf.autograph.experimental.do_not_convert(split_features))  # plain TF

    return strategy.distribute_datasets_from_function(per_host)


def metrics_logger(every, total_steps):
    """A Keras callback that logs the metrics every `every` steps and then resets them, so each line (and each
    TensorBoard point) averages the steps since the previous one rather than the whole run."""
    import keras

    from official_bert.training import run_step

    class MetricsLogger(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            # `fit_resumable`'s `fit` runs the run's remaining steps (Keras' `params["steps"]`).
            step = run_step(total_steps - self.params["steps"], batch, total_steps)
            if logs and (step % every == 0 or step >= total_steps):
                logger.info("step %d/%d: %s", step, total_steps,
                            ", ".join(f"{k}={float(v):.4f}" for k, v in sorted(logs.items())))
                if step < total_steps:  # the last window stays: Keras reads it as the run's final figures
                    self.model.reset_metrics()

    return MetricsLogger()


class PretrainingTask(Task):
    """BERT's masked-LM and next-sentence objectives over TFRecords or raw text (dynamic masking).

    The objective (recorded in task.json): "mlm_nsp" (BERT), "mlm" (RoBERTa: no sentence head or loss) or
    "mlm_sop" (ALBERT's sentence-order prediction: TFRecords of `create_pretraining_data --sentence_order`,
    or raw text, whose pairs are then built with sentence-order labels).

    The run's step budget is `RunConfig.num_train_steps` with `num_warmup_steps` of linear warmup (epochs do not
    apply: the input repeats). Without an init checkpoint the model starts from scratch, shaped by
    `bert_config_file` or `preset`.

    Args:
        input_files / text_files: comma-separated globs of TFRecords (`tasks.create_pretraining_data` or
            Google's), or of raw text masked on the fly; exactly one when training.
        eval_files: globs of held-out files in the format of the training input.
        bert_config_file / preset: the model's shape, instead of the init checkpoint's.
        max_predictions_per_seq: masked positions per sequence (padded).
        masked_lm_prob / do_whole_word_mask: dynamic masking of raw text.
        num_warmup_steps: linear warmup steps, then linear decay to 0.
        steps_per_loop: steps per host call (Keras steps_per_execution).
        log_steps: steps between metric lines (each the mean since the previous one).
        max_eval_steps: evaluation batches at most.
        objective: "mlm_nsp", "mlm" or "mlm_sop" (`official_bert.models.pretrainer.OBJECTIVES`).
    """

    kind = model_dirs.PRETRAINING
    init_heads = model_dirs.PRETRAINER_DIR
    needs_init_checkpoint = False
    tokenizer_kinds = TOKENIZER_KINDS  # TFRecords hold ids; raw text is packed and masked as each family does

    def __init__(self, input_files=None, text_files=None, eval_files=None, bert_config_file=None, preset=None,
                 max_predictions_per_seq=20, masked_lm_prob=0.15, do_whole_word_mask=False, num_warmup_steps=10000,
                 steps_per_loop=1, log_steps=100, max_eval_steps=100, objective="mlm_nsp"):
        self.input_files, self.text_files, self.eval_files = input_files, text_files, eval_files
        self.bert_config_file, self.preset = bert_config_file, preset
        self.max_predictions_per_seq, self.masked_lm_prob = max_predictions_per_seq, masked_lm_prob
        self.do_whole_word_mask, self.num_warmup_steps = do_whole_word_mask, num_warmup_steps
        self.steps_per_loop = checked_steps_per_loop(steps_per_loop)
        self.log_steps, self.max_eval_steps = log_steps, max_eval_steps
        self.objective = objective
        self.train_paths = self.eval_paths = None
        self.bert_config = None  # the model's, given to read_data

    def validate(self, config):
        from official_bert.models.pretrainer import OBJECTIVES

        if self.objective not in OBJECTIVES:
            raise ValueError(f"--objective={self.objective}: expected one of {', '.join(OBJECTIVES)}")
        if self.input_files and self.text_files or config.do_train and not (self.input_files or self.text_files):
            raise ValueError("pass exactly one of --input_files (TFRecords) and --text_files (raw text)")
        if config.do_predict:
            raise ValueError("pre-training has no predictions; --do_predict is for the fine-tuning tasks")
        if config.do_eval and not self.eval_files:
            raise ValueError("--do_eval needs --eval_files")
        if self.bert_config_file and self.preset:
            raise ValueError("pass --bert_config_file or --preset, not both")
        if not (config.init_checkpoint or self.bert_config_file or self.preset):
            raise ValueError("pass --init_checkpoint, --bert_config_file or --preset")
        for name, value in (("num_train_steps", config.num_train_steps), ("checkpoint_steps", config.checkpoint_steps),
                            ("log_steps", self.log_steps)):
            if value is not None and value % self.steps_per_loop:
                raise ValueError(f"--{name}={value} must be a multiple of --steps_per_loop={self.steps_per_loop}")

    def model_config(self):
        """The `BertConfig` from bert_config_file or preset; None: the init checkpoint's."""
        from official_bert.config import BertConfig

        if self.bert_config_file:
            return BertConfig.from_json_file(self.bert_config_file)
        return BertConfig.from_preset(self.preset) if self.preset else None

    @property
    def needs_vocab(self):
        return bool(self.text_files)

    def read_data(self, config, bert_config):
        self.bert_config = bert_config  # task.json records it (`task_info`)
        if self.text_files and self.do_whole_word_mask and bert_config.tokenizer_kind == BPE:
            raise ValueError("--do_whole_word_mask: RoBERTa's byte-level BPE marks no word continuations (RoBERTa "
                             "masks single pieces); leave it false")
        flag = "text_files" if self.text_files else "input_files"
        self.train_paths = expand_globs(getattr(self, flag), flag) if config.do_train else None
        self.eval_paths = expand_globs(self.eval_files, "eval_files") if config.do_eval else None
        for paths, paths_flag in ((self.train_paths, flag), (self.eval_paths, "eval_files")):
            if paths:
                self._check_examples(paths, paths_flag, config)

    def _check_examples(self, paths, flag, config):
        """ValueError, before anything is written, when the files of `--<flag>` hold nothing to read (training would
        wait forever for a first batch), a text file is not UTF-8 (naming its line), or a TFRecord file's first
        record does not fit the run's shapes (naming the feature)."""
        if self.text_files:  # the eval files are in the training input's format
            from official_bert.text_files import holds_text

            logger.info("Reading --%s (%d file(s)) to check it is UTF-8 text", flag, len(paths))
            if not any([holds_text(path) for path in paths]):  # (a list: every file is checked)
                raise ValueError(f"--{flag}: {', '.join(paths[:3])} {_hold(paths)} no text (empty, or blank lines "
                                 "only); nothing to pre-train on")
            return
        from official_bert.data.pretraining_records import check_record_file

        if not any([check_record_file(path, config.max_seq_length, self.max_predictions_per_seq) for path in paths]):
            raise ValueError(f"--{flag}: {', '.join(paths[:3])} {_hold(paths)} no record; write them with "
                             "tasks.create_pretraining_data")

    def task_info(self):
        return {"task": "pretraining", "max_predictions_per_seq": self.max_predictions_per_seq,
                "objective": self.objective, "config": self.bert_config.to_dict()}

    def train_sources(self):
        return list(self.train_paths or [])

    def training_settings(self):
        return {"num_warmup_steps": self.num_warmup_steps, "masked_lm_prob": self.masked_lm_prob,
                "do_whole_word_mask": self.do_whole_word_mask, "text_files": bool(self.text_files),
                "objective": self.objective}

    def describe_run(self, context):
        bert_config, config = context.bert_config, context.config
        return (f"Pre-training ({self.objective}) {bert_config.num_hidden_layers} layers, hidden "
                f"{bert_config.hidden_size} on "
                f"{context.strategy.num_replicas_in_sync} replica(s), {config.distribution_strategy}; global batch "
                f"{config.train_batch_size}, {config.num_train_steps} steps ({self.num_warmup_steps} warmup)")

    def load_initial_weights(self, model, checkpoint):
        from official_bert.checkpoints import load_pretrainer_weights

        loaded = load_pretrainer_weights(model, checkpoint)
        if model.next_sentence is None:  # the "mlm" objective has no sentence head to report
            del loaded["next_sentence"]
        return ", ".join(f"{name} head {'loaded' if loaded[key] else 'freshly initialised'}"
                         for name, key in (("masked-LM", "masked_lm"), ("next-sentence", "next_sentence"))
                         if key in loaded)

    def _source(self, paths, context, is_training):
        """`f(batch_size, input_context)` reading TFRecords, or raw text with dynamic masking."""
        from official_bert.data.pretraining_dataset import dynamic_masking_dataset, pretraining_dataset

        config = context.config
        if self.text_files:
            return lambda batch_size, input_context: dynamic_masking_dataset(
                paths, context.tokenizer, batch_size, config.max_seq_length, self.max_predictions_per_seq,
                masked_lm_prob=self.masked_lm_prob, is_training=is_training, seed=config.seed,
                do_whole_word_mask=self.do_whole_word_mask, input_context=input_context,
                sentence_order=self.objective == "mlm_sop")
        return lambda batch_size, input_context: pretraining_dataset(
            paths, batch_size, config.max_seq_length, self.max_predictions_per_seq, is_training=is_training,
            seed=config.seed, input_context=input_context)

    def train_steps(self, config, num_examples):
        return config.num_train_steps, self.num_warmup_steps

    def train_dataset(self, context):
        source = self._source(self.train_paths, context, is_training=True)
        return None, lambda skip_batches: distributed_dataset(context.strategy, source,
                                                              context.config.train_batch_size, skip_batches)

    def resumable_stream(self, make_batches, context):
        return make_batches  # already `f(skip_batches)`, distributed per host

    def fit_options(self, total_steps):
        # examples_per_second measured over each line's own steps
        return {"verbose": 0, "callbacks": [metrics_logger(self.log_steps, total_steps)],
                "throughput_steps": self.log_steps}

    def save(self, model, context):
        """Also `pretrainer/` (a Hugging Face `BertForPreTraining` directory, heads included, with its casing; with
        the "mlm" objective a `BertForMaskedLM` one)."""
        from official_bert.checkpoints import save_pretrainer

        super().save(model, context)
        pretrainer_dir = owned_files.claim(context.out_dir, model_dirs.PRETRAINER_DIR)
        save_pretrainer(model, pretrainer_dir, vocab_file=context.vocab_file, overwrite=True)
        model_dirs.write_tokenizer_config(pretrainer_dir, context.lower_case, context.vocab_file)

    def evaluate(self, model, context):
        """Masked-LM and next-sentence (sentence-order) loss and accuracy over at most max_eval_steps batches."""
        strategy = context.strategy
        dataset = distributed_dataset(strategy, self._source(self.eval_paths, context, is_training=False),
                                      context.config.eval_batch_size, take_batches=self.max_eval_steps)
        model.reset_metrics()
        with warnings.catch_warnings():  # the stream ends by design; Keras warns at the end of any distributed one
            warnings.filterwarnings("ignore", message="Your input ran out of data")
            results = {k: float(v) for k, v in model.evaluate(dataset, return_dict=True, verbose=0).items()}
        # Every replica adds the global batch's counts (see BertPretrainer.compute_metrics); reading sums them.
        replicas = strategy.num_replicas_in_sync
        results["masked_lm_predictions"] = round(float(model.masked_lm_loss_tracker.count.numpy()) / replicas)
        if model.next_sentence_loss_tracker is not None:
            results["examples"] = round(float(model.next_sentence_loss_tracker.count.numpy()) / replicas)
        results["global_step"] = int(model.optimizer.iterations.numpy())
        return results


def _hold(paths):
    return "holds" if len(paths) == 1 else "hold"
