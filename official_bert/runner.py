"""One way to run any fine-tuning task: seed, precision, strategy, optimizer, resumable fit, save, evaluate, predict.

A task (see `official_bert.tasks.base.Task`) supplies its data, model, loss, metrics, evaluation and prediction
files; `run(task, config)` does the rest, the same for every task, from a `RunConfig` (the CLIs build one from
their flags; tests and other programs build one directly and run a task in-process).

Order of work: everything that can be checked is checked before anything is written (flags, the data files,
the sequence length against the model's position limit, an earlier run in the model_dir); then the model_dir
is written, the model trained (resuming from the latest checkpoint), saved, evaluated and predicted. Under
`multi_worker_mirrored` only the chief writes to the model_dir; other workers write into a temporary directory
of their own, as TF recommends, and drop it.

The parts: `run_config` (RunConfig, RunContext), `run_checkpoint` (the model, init checkpoint, vocab and casing,
resolved once), `run_process` (seed, precision, strategy, each worker's stream), `run_model_dir` (what a run
writes where); this module orders them.

Examples:

>>> from official_bert.tasks.classification import ClassificationTask
>>> config = RunConfig(model_dir="out/mrpc", init_checkpoint="../shared/data/all-MiniLM-L6-v2", num_train_steps=10)
>>> results = run(ClassificationTask("MRPC", data_dir="../shared/data/glue/MRPC"), config)
"""

import contextlib
import functools
import logging
import os
import shutil

from official_bert import model_dir as model_dirs
from official_bert import owned_files
from official_bert import run_record as run_records
from official_bert.run_checkpoint import resolve_checkpoint_settings
from official_bert.run_config import RunConfig, RunContext  # noqa: F401 (RunConfig: imported from here by users)
from official_bert.run_model_dir import check_output, prepare_model_dir, record_run_settings
from official_bert.run_process import scratch_dir, start_process

logger = logging.getLogger(__name__)


def _compile(model, config, total_steps, warmup_steps, options):
    from official_bert.optimization import create_optimizer

    if total_steps:
        optimizer = create_optimizer(config.learning_rate, total_steps, warmup_steps, config.optimizer,
                                     config.weight_decay, config.adam_epsilon)
    else:
        optimizer = "adam"  # unused: compiled only to predict
    # the task model's own loss and metrics
    model.compile(optimizer=optimizer, jit_compile=config.uses_xla(), **options)


def _keeps_global_policy(run):
    """`run` that leaves Keras' global dtype policy as it found it, also when it raises (`start_process` sets the
    run's --mixed_precision policy)."""
    @functools.wraps(run)
    def wrapped(*args, **kwargs):
        import keras

        policy = keras.mixed_precision.global_policy()
        try:
            return run(*args, **kwargs)
        finally:
            keras.mixed_precision.set_global_policy(policy)

    return wrapped


@_keeps_global_policy
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
    check_output(config)
    task.validate(config)
    settings = resolve_checkpoint_settings(config, task)
    bert_config, tokens, lower_case = settings.bert_config, settings.tokens, settings.lower_case
    kind = bert_config.tokenizer_kind
    if tokens is not None and kind not in task.tokenizer_kinds:
        raise ValueError(f"{task.kind}: a {bert_config.model_type} model's {kind} tokenizer is not supported by this "
                         f"task yet (it reads {', '.join(task.tokenizer_kinds)}); use a checkpoint of a family it "
                         "reads")
    logger.info("Model %s: %d layers, hidden %d, %s; sequence length %d",
                config.model_dir if settings.finished else task.model_source(config),
                bert_config.num_hidden_layers, bert_config.hidden_size,
                "no vocabulary" if tokens is None else ("uncased" if lower_case else "cased"), config.max_seq_length)
    task.read_data(config, bert_config)  # every file it will read, before anything is written

    strategy, chief, out_dir = start_process(config)
    scratch = scratch_dir("run")  # the vocab the run's tokenizers read
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
                prepare_model_dir(task, config, bert_config, info, tokens,
                                  run_records.run_record(config, task, lower_case))
            elif chief and model_dirs.is_model_dir(config.model_dir):
                model_dirs.check_same_run(config.model_dir, task.kind, task.task_info())
                record_run_settings(task, config)
            return _train_evaluate_predict(task, context, settings, train_data)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if not chief:
            shutil.rmtree(out_dir, ignore_errors=True)


def _train_evaluate_predict(task, context, settings, train_data):
    """Builds the model (its initial or trained weights, from `settings`, the `ModelSettings`), trains, saves,
    evaluates and predicts; returns the evaluation results."""
    from official_bert import training
    from official_bert.layers.initializers import weights_loaded_after_build

    config, strategy = context.config, context.strategy
    description = task.describe_run(context)
    if description:
        logger.info("%s", description)
    finished, init = settings.finished, settings.init_checkpoint
    with strategy.scope():
        # A finished run's file holds every weight (model_dirs.load_weights raises otherwise): none is drawn first.
        with weights_loaded_after_build() if finished else contextlib.nullcontext():
            model = task.build_model(context.bert_config, train_on_real_tokens=config.train_on_real_tokens)
        if init:
            logger.info("Loaded %s (%s)", init, task.load_initial_weights(model, init))
        if finished:  # before compiling: the file's optimizer state is the training run's, not needed here
            model_dirs.load_weights(model, config.model_dir)
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
