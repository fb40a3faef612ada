"""One way to run any fine-tuning task: seed, precision, strategy, optimizer, resumable fit, save, evaluate, predict.

A task (see `official_bert.tasks.base.Task`) supplies its data, model, loss, metrics, evaluation and prediction
files; `run(task, config)` does the rest, the same for every task, from a `RunConfig` (the CLIs build one from
their flags; tests and other programs build one directly and run a task in-process).

Order of work: everything that can be checked is checked before anything is written (flags, the data files,
the sequence length against the model's position limit, an earlier run in the model_dir); then the model_dir
is written, the model trained (resuming from the latest checkpoint), saved, evaluated and predicted. Under
`multi_worker_mirrored` only the chief writes to the model_dir; other workers write into a temporary directory
of their own, as TF recommends, and drop it.

Examples:

>>> from official_bert.tasks.classification import ClassificationTask
>>> config = RunConfig(model_dir="out/mrpc", init_checkpoint="../shared/data/all-MiniLM-L6-v2", num_train_steps=10)
>>> results = run(ClassificationTask("MRPC", data_dir="../shared/data/glue/MRPC"), config)
"""

import contextlib
import dataclasses
import logging
import math
import os
import shutil
import tempfile
from typing import Optional

from official_bert import model_dir as model_dirs
from official_bert import owned_files
from official_bert import run_record as run_records

logger = logging.getLogger(__name__)


@dataclasses.dataclass
class RunConfig:
    """The settings every fine-tuning run shares (the task's own settings live in its task object).

    Attributes:
        model_dir: where config, vocab, checkpoints, logs and results go.
        init_checkpoint: a Hugging Face or Google BERT directory, or a model_dir of ours.
        vocab_file: WordPiece vocab (RoBERTa: its vocab.json, merges.txt beside it); None: found in the init
            checkpoint's directory.
        do_lower_case: casing; None: from the checkpoint (a model_dir of ours: its task.json).
        max_seq_length: packed sequence length.
        train_batch_size / eval_batch_size: global batch sizes.
        learning_rate: peak learning rate; warmup_proportion of the steps warm up linearly, then linear decay.
        num_train_epochs: epochs, unless num_train_steps is set.
        weight_decay: decoupled weight decay (not on LayerNorm and biases).
        optimizer: "adamw" or "lamb"; adam_epsilon its epsilon.
        jit_compile: XLA; None: on GPU/TPU only.
        train_on_real_tokens: the task model's `train_on_real_tokens` (classifiers, taggers and span labelers
            train on each batch's real tokens only, on TensorFlow without XLA; `TaskModel.trains_on_real_tokens`).
        mixed_precision: None, "float16" or "bfloat16".
        distribution_strategy: one_device, mirrored, multi_worker_mirrored or tpu (tpu: the TPU address).
        checkpoint_steps: steps between checkpoints (a restarted run resumes there).
        keep_checkpoints: how many of the latest checkpoints are kept (at least 1).
        seed: initialisation, shuffling and dropout.
        deterministic: TensorFlow's op determinism: two runs of one command, and a resumed run and an unbroken
            one, end with bit-identical weights (README: what it costs).
        do_train / do_eval / do_predict: what to do.
        output_dir: where evaluation results and predictions go; None: the model_dir.
        overwrite: a training run deletes an earlier run's files in the model_dir instead of refusing a run
            that differs from it.
    """
    model_dir: str
    init_checkpoint: Optional[str] = None
    vocab_file: Optional[str] = None
    do_lower_case: Optional[bool] = None
    max_seq_length: int = 128
    train_batch_size: int = 32
    eval_batch_size: int = 64
    learning_rate: float = 5e-5
    num_train_epochs: float = 3.0
    num_train_steps: Optional[int] = None
    warmup_proportion: float = 0.1
    weight_decay: float = 0.01
    optimizer: str = "adamw"
    adam_epsilon: float = 1e-6
    jit_compile: Optional[bool] = None
    train_on_real_tokens: bool = True
    mixed_precision: Optional[str] = None
    distribution_strategy: str = "one_device"
    tpu: Optional[str] = None
    checkpoint_steps: int = 500
    keep_checkpoints: int = 1
    seed: int = 42
    deterministic: bool = False
    do_train: bool = True
    do_eval: bool = True
    do_predict: bool = False
    output_dir: Optional[str] = None
    overwrite: bool = False

    def train_steps(self, num_examples):
        """(total steps, warmup steps) from num_train_steps, or num_train_epochs over `num_examples`."""
        steps = self.num_train_steps or math.ceil(num_examples * self.num_train_epochs / self.train_batch_size)
        return steps, int(steps * self.warmup_proportion)

    def uses_xla(self):
        """Whether the model compiles with XLA: `jit_compile`, or when None, on GPUs and TPUs."""
        from official_bert.training import default_jit_compile

        return default_jit_compile() if self.jit_compile is None else self.jit_compile


@dataclasses.dataclass
class RunContext:
    """What the runner resolved, handed to the task's data, evaluation and prediction methods.

    Attributes:
        config: the `RunConfig`.
        bert_config: the model's `BertConfig`.
        vocab_file: the vocab this run uses (the model_dir's copy).
        lower_case: the casing this run uses.
        tokenizer: a `BertTokenizer` of the two (None for a task with no vocab, e.g. pre-training on TFRecords).
        out_dir: where this process writes the trained model (the model_dir, or a non-chief worker's temporary
            directory).
        results_dir: where this process writes evaluation results and predictions (`--output_dir`, else
            `out_dir`).
        is_chief: whether this process writes the run's results.
        strategy: the `tf.distribute` strategy.
    """
    config: RunConfig
    bert_config: object
    vocab_file: str
    lower_case: bool
    tokenizer: object
    out_dir: str
    results_dir: str
    is_chief: bool
    strategy: object

    def text_preprocessor(self):
        """A `TextPreprocessor` of the run's vocab, casing and sequence length (raw strings -> encoder inputs)."""
        from official_bert.text.preprocessing import text_preprocessor

        return text_preprocessor(self.vocab_file, self.lower_case, self.config.max_seq_length)


def resolve_checkpoint_settings(config, task):
    """(BertConfig, vocab tokens or None, casing) of the task's model and `config`'s checkpoint, vocab and casing.

    The model's shape is the task's `model_config()` or else the init checkpoint's; the vocab is
    `config.vocab_file` or the one beside the checkpoint (a task that reads no text may have none).

    Raises:
        ValueError: no init checkpoint where the task needs one, a vocab larger than the model's table, or a
            sequence length over the model's position limit.
    """
    from official_bert.checkpoints import load_config, open_checkpoint
    from official_bert.text.preprocessing import check_vocab_size, find_family_vocab, read_vocab_file, resolve_casing

    if is_finished_run(config):  # evaluation / prediction of a trained model_dir: its model, vocab and casing
        from official_bert.config import BertConfig

        info = model_dirs.read_task_info(config.model_dir)
        bert_config = BertConfig.from_json_file(os.path.join(config.model_dir, model_dirs.CONFIG_FILE))
        vocab = model_dirs.vocab_file_of(config.model_dir, bert_config)
        tokens = read_vocab_file(vocab) if os.path.isfile(vocab) else None
        _check_sequence_length(config, bert_config)
        return bert_config, tokens, bool(info["do_lower_case"])
    if not config.init_checkpoint and task.needs_init_checkpoint:
        raise ValueError("--init_checkpoint is required (a Hugging Face or Google BERT directory, or a model_dir)")
    init = model_dirs.resolve_init_checkpoint(config.init_checkpoint, heads=task.init_heads)
    bert_config = task.model_config() or load_config(open_checkpoint(init))
    tokens, lower, source = None, None, None
    if config.vocab_file:  # vocab.txt, RoBERTa's vocab.json (merges.txt beside it) or ALBERT's spiece.model
        tokens, source = read_vocab_file(config.vocab_file), config.vocab_file
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
    _check_sequence_length(config, bert_config)
    return bert_config, tokens, bool(lower)


def _check_sequence_length(config, bert_config):
    if not 3 <= config.max_seq_length <= bert_config.max_sequence_length:
        raise ValueError(f"--max_seq_length={config.max_seq_length} must be between 3 and the model's "
                         f"max_position_embeddings={bert_config.max_position_embeddings}"
                         + (f" less RoBERTa's {bert_config.pad_token_id + 1} padding positions"
                            if bert_config.is_roberta else ""))


def is_finished_run(config):
    """Whether `config` evaluates or predicts (no training) with a model_dir that holds trained weights."""
    return not config.do_train and model_dirs.is_model_dir(config.model_dir) and os.path.isfile(
        os.path.join(config.model_dir, model_dirs.WEIGHTS_FILE))


def is_chief(strategy, strategy_name):
    """Whether this process writes the run's files: always, except the non-chief workers of a multi-worker job."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not resolver.task_type or strategy_name != "multi_worker_mirrored":
        return True
    if resolver.task_type == "chief":
        return True
    return (resolver.task_type == "worker" and resolver.task_id == 0
            and "chief" not in resolver.cluster_spec().as_dict())


def start_process(config):
    """Seeds, sets determinism and the precision policy, and builds the strategy; returns `(strategy, is_chief,
    out_dir)`.

    `out_dir` is where this process writes: the model_dir on the chief, a temporary directory of its own on the
    other workers of a multi-worker job (as TF recommends; the caller removes it).
    """
    import keras
    import tensorflow as tf

    from official_bert import training

    keras.utils.set_random_seed(config.seed)
    if config.deterministic:
        tf.config.experimental.enable_op_determinism()
    training.set_mixed_precision(config.mixed_precision)
    strategy = training.get_strategy(config.distribution_strategy, config.tpu)
    chief = is_chief(strategy, config.distribution_strategy)
    return strategy, chief, config.model_dir if chief else tempfile.mkdtemp(prefix="official_bert_worker_")


def _prepare_model_dir(task, config, bert_config, info, tokens, record):
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


def _record_run_settings(task, config):
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


def resumable_stream(make_batches, strategy, config):
    """`make_dataset(skip_batches)` for `training.fit_resumable` from a task's `make_batches(batch_size)`.

    Under `multi_worker_mirrored` each worker builds the same stream with the per-replica batch size and keeps
    every n-th batch (n workers, one device each): a global step trains on the same examples as one device with
    the global batch, and each worker hands Keras its share, as `distribute_datasets_from_function` expects.
    """
    if config.distribution_strategy != "multi_worker_mirrored":
        return lambda skip_batches: make_batches(config.train_batch_size).skip(skip_batches)
    replicas = strategy.num_replicas_in_sync
    if config.train_batch_size % replicas:
        raise ValueError(f"--train_batch_size={config.train_batch_size} is not divisible by the {replicas} replicas")

    def per_worker(skip_batches, context):
        if context.num_input_pipelines != replicas:
            raise ValueError("multi_worker_mirrored fine-tuning runs one device per worker; this job has "
                             f"{replicas} replicas on {context.num_input_pipelines} workers")
        stream = make_batches(config.train_batch_size // replicas).skip(skip_batches * replicas)
        return stream.shard(replicas, context.input_pipeline_id)

    return lambda skip_batches: strategy.distribute_datasets_from_function(
        lambda context: per_worker(skip_batches, context))


def _compile(model, config, total_steps, warmup_steps, options):
    from official_bert.optimization import create_optimizer

    if total_steps:
        optimizer = create_optimizer(config.learning_rate, total_steps, warmup_steps, config.optimizer,
                                     config.weight_decay, config.adam_epsilon)
    else:
        optimizer = "adam"  # unused: compiled only to predict
    model.train_on_real_tokens = config.train_on_real_tokens
    # the task model's own loss and metrics
    model.compile(optimizer=optimizer, jit_compile=config.uses_xla(), **options)


def _writable(path):
    """Whether `path`, or its nearest existing parent (where it would be created), can be written."""
    from official_bert.output_files import nearest_existing

    return os.access(nearest_existing(path), os.W_OK)


def _check_output(config):
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


def run(task, config):
    """Runs a task: train (resumable), save, evaluate, predict, as `config` says.

    Every input is read and checked first (flags, checkpoint, data files, the training examples); then, under
    the model_dir's lock (`official_bert.model_dir_lock`), a training run checks that the model_dir holds no
    other run (`official_bert.run_record`), writes its files, trains, saves, evaluates and predicts. Evaluation
    or prediction of a finished run writes only its results (to `output_dir`, default the model_dir).

    Args:
        task: an `official_bert.tasks.base.Task`.
        config: a `RunConfig`.

    Returns:
        the evaluation results (a dict), or None without evaluation.

    Raises:
        ValueError / FileNotFoundError: a bad setting or input, raised before anything is written.
        official_bert.model_dir_lock.ModelDirInUseError: another run uses the model_dir.
    """
    from official_bert.model_dir_lock import ModelDirLock
    from official_bert.text.preprocessing import tokenizer_from_files, write_tokenizer_files

    if not config.model_dir:
        raise ValueError("--model_dir is required")
    if not (config.do_train or config.do_eval or config.do_predict):
        raise ValueError("nothing to do: --do_train, --do_eval and --do_predict are all false")
    _check_output(config)
    task.validate(config)
    bert_config, tokens, lower_case = resolve_checkpoint_settings(config, task)
    kind = bert_config.tokenizer_kind
    if tokens is not None and kind not in task.tokenizer_kinds:
        raise ValueError(f"{task.kind}: a {bert_config.model_type} model's {kind} tokenizer is not supported by this "
                         f"task yet (it reads {', '.join(task.tokenizer_kinds)}); use a checkpoint of a family it "
                         "reads")
    task.bert_config = bert_config
    logger.info("Model %s: %d layers, hidden %d, %s; sequence length %d",
                config.model_dir if is_finished_run(config) else task.model_source(config),
                bert_config.num_hidden_layers, bert_config.hidden_size, "uncased" if lower_case else "cased",
                config.max_seq_length)
    task.read_data(config)  # every file it will read, before anything is written

    strategy, chief, out_dir = start_process(config)
    scratch = tempfile.mkdtemp(prefix="official_bert_run_")  # the vocab the run's tokenizers read
    try:
        vocab_file = write_tokenizer_files(tokens, scratch) if tokens is not None else None
        tokenizer = tokenizer_from_files(vocab_file, lower_case) if vocab_file else None
        context = RunContext(config=config, bert_config=bert_config, vocab_file=vocab_file, lower_case=lower_case,
                             tokenizer=tokenizer, out_dir=out_dir,
                             results_dir=(config.output_dir or out_dir) if chief else out_dir,
                             is_chief=chief, strategy=strategy)
        train_data = task.train_dataset(context) if config.do_train else None  # checks the examples, writes nothing
        writes_model_dir = chief and (config.do_train or context.results_dir == config.model_dir)
        with ModelDirLock(config.model_dir) if writes_model_dir else contextlib.nullcontext():
            if chief and config.do_train:
                info = {**task.task_info(), "max_seq_length": config.max_seq_length, "do_lower_case": lower_case}
                _prepare_model_dir(task, config, bert_config, info, tokens,
                                   run_records.run_record(config, task, lower_case))
            elif chief and model_dirs.is_model_dir(config.model_dir):
                model_dirs.check_same_run(config.model_dir, task.kind, task.task_info())
                _record_run_settings(task, config)
            return _train_evaluate_predict(task, context, train_data)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if not chief:
            shutil.rmtree(out_dir, ignore_errors=True)


def _train_evaluate_predict(task, context, train_data):
    from official_bert import training

    config, strategy = context.config, context.strategy
    description = task.describe_run(context)
    if description:
        logger.info("%s", description)
    finished = is_finished_run(config)
    with strategy.scope():
        model = task.build_model(context.bert_config)
        init = None if finished else model_dirs.resolve_init_checkpoint(config.init_checkpoint,
                                                                          heads=task.init_heads)
        if init:
            logger.info("Loaded %s (%s)", init, task.load_initial_weights(model, init))
        if finished:  # before compiling: the file's optimizer state is the training run's, not needed here
            model.load_weights(os.path.join(config.model_dir, model_dirs.WEIGHTS_FILE))
            logger.info("Loaded the trained weights of %s", config.model_dir)
        total_steps = warmup_steps = 0
        if config.do_train:
            num_examples, make_batches = train_data
            total_steps, warmup_steps = task.train_steps(config, num_examples)
            if num_examples is not None:
                logger.info("Training on %d examples: %d steps (%d warmup), batch %d", num_examples, total_steps,
                            warmup_steps, config.train_batch_size)
            make_dataset = task.resumable_stream(make_batches, context)
        _compile(model, config, total_steps, warmup_steps, task.compile_options())

    if config.do_train:
        training.fit_resumable(model, make_dataset, total_steps, config.model_dir, config.train_batch_size,
                               checkpoint_steps=config.checkpoint_steps, max_checkpoints=config.keep_checkpoints,
                               write_dir=context.out_dir,
                               **task.fit_options(total_steps))
        task.save(model, context)
    elif not finished and not init:
        raise FileNotFoundError(f"{os.path.join(config.model_dir, model_dirs.WEIGHTS_FILE)} not found: train "
                                f"first, or pass --init_checkpoint")
    elif not finished:
        logger.warning("%s holds no trained weights: evaluating the --init_checkpoint weights", config.model_dir)

    # Every worker evaluates and predicts (the strategy's steps are collective); files go to results_dir, which
    # is the model_dir or --output_dir only on the chief.
    if (config.do_eval or config.do_predict) and context.is_chief:
        os.makedirs(context.results_dir, exist_ok=True)
    results = task.evaluate(model, context) if config.do_eval else None
    if results is not None:
        model_dirs.write_json(owned_files.claim(context.results_dir, "eval_results.json"), results)
        if context.is_chief:
            print(task.describe_results(results))
    if config.do_predict:
        task.predict(model, context)
    return results
