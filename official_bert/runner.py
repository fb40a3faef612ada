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

import dataclasses
import logging
import math
import os
import shutil
import tempfile
from typing import Optional

from official_bert import model_dir as model_dirs

logger = logging.getLogger(__name__)


@dataclasses.dataclass
class RunConfig:
    """The settings every fine-tuning run shares (the task's own settings live in its task object).

    Attributes:
        model_dir: where config, vocab, checkpoints, logs and results go.
        init_checkpoint: a Hugging Face or Google BERT directory, or a model_dir of ours.
        vocab_file: WordPiece vocab; None: found in the init checkpoint's directory.
        do_lower_case: casing; None: from the checkpoint (a model_dir of ours: its task.json).
        max_seq_length: packed sequence length.
        train_batch_size / eval_batch_size: global batch sizes.
        learning_rate: peak learning rate; warmup_proportion of the steps warm up linearly, then linear decay.
        num_train_epochs: epochs, unless num_train_steps is set.
        weight_decay: decoupled weight decay (not on LayerNorm and biases).
        optimizer: "adamw" or "lamb"; adam_epsilon its epsilon.
        jit_compile: XLA; None: on GPU/TPU only.
        mixed_precision: None, "float16" or "bfloat16".
        distribution_strategy: one_device, mirrored, multi_worker_mirrored or tpu (tpu: the TPU address).
        checkpoint_steps: steps between checkpoints (a restarted run resumes there).
        seed: initialisation, shuffling and dropout.
        do_train / do_eval / do_predict: what to do.
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
    mixed_precision: Optional[str] = None
    distribution_strategy: str = "one_device"
    tpu: Optional[str] = None
    checkpoint_steps: int = 500
    seed: int = 42
    do_train: bool = True
    do_eval: bool = True
    do_predict: bool = False

    def train_steps(self, num_examples):
        """(total steps, warmup steps) from num_train_steps, or num_train_epochs over `num_examples`."""
        steps = self.num_train_steps or math.ceil(num_examples * self.num_train_epochs / self.train_batch_size)
        return steps, int(steps * self.warmup_proportion)


@dataclasses.dataclass
class RunContext:
    """What the runner resolved, handed to the task's data, evaluation and prediction methods.

    Attributes:
        config: the `RunConfig`.
        bert_config: the model's `BertConfig`.
        vocab_file: the vocab this run uses (the model_dir's copy).
        lower_case: the casing this run uses.
        tokenizer: a `BertTokenizer` of the two (None for a task with no vocab, e.g. pre-training on TFRecords).
        out_dir: where this process writes (the model_dir, or a non-chief worker's temporary directory).
        is_chief: whether this process writes the run's results.
        strategy: the `tf.distribute` strategy.
    """
    config: RunConfig
    bert_config: object
    vocab_file: str
    lower_case: bool
    tokenizer: object
    out_dir: str
    is_chief: bool
    strategy: object


def resolve_checkpoint_settings(config, task):
    """(BertConfig, vocab tokens or None, casing) of the task's model and `config`'s checkpoint, vocab and casing.

    The model's shape is the task's `model_config()` or else the init checkpoint's; the vocab is
    `config.vocab_file` or the one beside the checkpoint (a task that reads no text may have none).

    Raises:
        ValueError: no init checkpoint where the task needs one, a vocab of another size than the model's, or a
            sequence length over the model's position limit.
    """
    from official_bert.checkpoints import load_config, open_checkpoint
    from official_bert.checkpoints.vocab import find_vocab
    from official_bert.text.vocab import load_vocab

    if not config.init_checkpoint and task.needs_init_checkpoint:
        raise ValueError("--init_checkpoint is required (a Hugging Face or Google BERT directory, or a model_dir)")
    init = model_dirs.resolve_init_checkpoint(config.init_checkpoint, heads=task.init_heads)
    bert_config = task.model_config() or load_config(open_checkpoint(init))
    tokens, lower, source = None, None, None
    if config.vocab_file:
        tokens, source = load_vocab(config.vocab_file), config.vocab_file
    elif init:
        try:
            tokens, lower, source = find_vocab(init)
        except FileNotFoundError:
            if task.needs_vocab:
                raise
    if tokens is None and task.needs_vocab:
        raise ValueError("this task reads text and needs a vocab: pass --vocab_file")
    if model_dirs.is_model_dir(config.init_checkpoint):  # our own run: its task.json knows the casing
        lower = model_dirs.read_task_info(config.init_checkpoint)["do_lower_case"]
    if config.do_lower_case is not None:
        lower = config.do_lower_case
    if lower is None:
        lower = True
        if tokens is not None:
            logger.warning("Casing of %s unknown; lower-casing (pass --do_lower_case=false for a cased model)",
                           source)
    if tokens is not None and len(tokens) != bert_config.vocab_size:
        raise ValueError(f"{source}: {len(tokens)} tokens, but the model's config has vocab_size="
                         f"{bert_config.vocab_size}")
    if not 3 <= config.max_seq_length <= bert_config.max_position_embeddings:
        raise ValueError(f"--max_seq_length={config.max_seq_length} must be between 3 and the model's "
                         f"max_position_embeddings={bert_config.max_position_embeddings}")
    return bert_config, tokens, bool(lower)


def is_chief(strategy, strategy_name):
    """Whether this process writes the run's files: always, except the non-chief workers of a multi-worker job."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not resolver.task_type or strategy_name != "multi_worker_mirrored":
        return True
    if resolver.task_type == "chief":
        return True
    return (resolver.task_type == "worker" and resolver.task_id == 0
            and "chief" not in resolver.cluster_spec().as_dict())


def start_process(seed, mixed_precision, distribution_strategy, tpu, model_dir):
    """Seeds, sets the precision policy and builds the strategy; returns `(strategy, is_chief, out_dir)`.

    `out_dir` is where this process writes: the model_dir on the chief, a temporary directory of its own on the
    other workers of a multi-worker job (as TF recommends; the caller removes it).
    """
    import keras

    from official_bert import training

    keras.utils.set_random_seed(seed)
    training.set_mixed_precision(mixed_precision)
    strategy = training.get_strategy(distribution_strategy, tpu)
    chief = is_chief(strategy, distribution_strategy)
    return strategy, chief, model_dir if chief else tempfile.mkdtemp(prefix="official_bert_worker_")


def _prepare_model_dir(task, config, bert_config, info):
    """Refuses a model_dir of another run, then writes task.json (`info` and the task's run settings) and
    bert_config.json (the vocab is written with the other files of the process)."""
    model_dirs.check_same_run(config.model_dir, task.kind, info)
    os.makedirs(config.model_dir, exist_ok=True)
    model_dirs.write_task_info(config.model_dir, task.kind, {**info, **task.run_settings()})
    model_dirs.write_json(os.path.join(config.model_dir, model_dirs.CONFIG_FILE), bert_config.to_dict())


def save_trained(model, out_dir, vocab_file, lower_case):
    """`model.weights.h5` and `encoder/` (a Hugging Face directory with its vocab and casing) in `out_dir`."""
    from official_bert.checkpoints import save_encoder

    model.save_weights(os.path.join(out_dir, model_dirs.WEIGHTS_FILE), overwrite=True)
    encoder_dir = os.path.join(out_dir, model_dirs.ENCODER_DIR)
    save_encoder(model.encoder, encoder_dir, vocab_file=vocab_file, overwrite=True)
    model_dirs.write_tokenizer_config(encoder_dir, lower_case)


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
    from official_bert.training import default_jit_compile

    if total_steps:
        optimizer = create_optimizer(config.learning_rate, total_steps, warmup_steps, config.optimizer,
                                     config.weight_decay, config.adam_epsilon)
    else:
        optimizer = "adam"  # unused: compiled only to predict
    jit_compile = default_jit_compile() if config.jit_compile is None else config.jit_compile
    model.compile(optimizer=optimizer, jit_compile=jit_compile, **options)  # the task model's own loss and metrics


def run(task, config):
    """Runs a task: train (resumable), save, evaluate, predict, as `config` says.

    Args:
        task: an `official_bert.tasks.base.Task`.
        config: a `RunConfig`.

    Returns:
        the evaluation results (a dict), or None without evaluation.

    Raises:
        ValueError / FileNotFoundError: a bad setting or input, raised before anything is written.
    """
    from official_bert.checkpoints.vocab import write_vocab_file
    from official_bert.text import BertTokenizer

    if not config.model_dir:
        raise ValueError("--model_dir is required")
    if not (config.do_train or config.do_eval or config.do_predict):
        raise ValueError("nothing to do: --do_train, --do_eval and --do_predict are all false")
    task.validate(config)
    bert_config, tokens, lower_case = resolve_checkpoint_settings(config, task)
    task.bert_config = bert_config
    logger.info("Model %s: %d layers, hidden %d, %s; sequence length %d", config.init_checkpoint or "from scratch",
                bert_config.num_hidden_layers, bert_config.hidden_size, "uncased" if lower_case else "cased",
                config.max_seq_length)
    task.read_data(config)  # every file it will read, before anything is written

    strategy, chief, out_dir = start_process(config.seed, config.mixed_precision, config.distribution_strategy,
                                             config.tpu, config.model_dir)
    if chief:
        info = {**task.task_info(), "max_seq_length": config.max_seq_length, "do_lower_case": lower_case}
        _prepare_model_dir(task, config, bert_config, info)
    vocab_file = None
    if tokens is not None:
        vocab_file = os.path.join(out_dir, model_dirs.VOCAB_FILE)
        write_vocab_file(tokens, vocab_file)
    tokenizer = BertTokenizer(vocab_file=vocab_file, lower_case=lower_case) if vocab_file else None
    context = RunContext(config=config, bert_config=bert_config, vocab_file=vocab_file, lower_case=lower_case,
                         tokenizer=tokenizer, out_dir=out_dir, is_chief=chief, strategy=strategy)
    try:
        return _train_evaluate_predict(task, context)
    finally:
        if not chief:
            shutil.rmtree(out_dir, ignore_errors=True)


def _train_evaluate_predict(task, context):
    from official_bert import training

    config, strategy = context.config, context.strategy
    description = task.describe_run(context)
    if description:
        logger.info("%s", description)
    with strategy.scope():
        model = task.build_model(context.bert_config)
        init = model_dirs.resolve_init_checkpoint(config.init_checkpoint, heads=task.init_heads)
        if init:
            logger.info("Loaded %s (%s)", init, task.load_initial_weights(model, init))
        total_steps = warmup_steps = 0
        if config.do_train:
            num_examples, make_batches = task.train_dataset(context)
            total_steps, warmup_steps = task.train_steps(config, num_examples)
            if num_examples is not None:
                logger.info("Training on %d examples: %d steps (%d warmup), batch %d", num_examples, total_steps,
                            warmup_steps, config.train_batch_size)
            make_dataset = task.resumable_stream(make_batches, context)
        _compile(model, config, total_steps, warmup_steps, task.compile_options())

    if config.do_train:
        training.fit_resumable(model, make_dataset, total_steps, config.model_dir, config.train_batch_size,
                               checkpoint_steps=config.checkpoint_steps, write_dir=context.out_dir,
                               **task.fit_options(total_steps))
        task.save(model, context)
    else:
        weights = os.path.join(config.model_dir, model_dirs.WEIGHTS_FILE)
        if os.path.isfile(weights):
            model.load_weights(weights)
        elif init:
            logger.warning("%s not found: using the --init_checkpoint weights", weights)
        else:
            raise FileNotFoundError(f"{weights} not found: train first, or pass --init_checkpoint")

    # Every worker evaluates and predicts (the strategy's steps are collective); files go to out_dir, which is
    # the model_dir only on the chief.
    results = task.evaluate(model, context) if config.do_eval else None
    if results is not None:
        model_dirs.write_json(os.path.join(context.out_dir, "eval_results.json"), results)
        if context.is_chief:
            print(task.describe_results(results))
    if config.do_predict:
        task.predict(model, context)
    return results
