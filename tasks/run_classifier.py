"""Fine-tunes and evaluates BERT on a GLUE task.

    python -m tasks.run_classifier   # no flags: the embedded demo (MiniLM on a small sentiment set)
    python -m tasks.run_classifier --task=MRPC --data_dir=../shared/data/glue/MRPC \
        --init_checkpoint=../shared/data/all-MiniLM-L6-v2 --model_dir=out/mrpc

Writes to --model_dir: `bert_config.json`, `vocab.txt`, `task.json` (label names, sequence length, casing),
`checkpoints/` (resumed automatically), `logs/` (TensorBoard), `model.weights.h5`, `encoder/` (the
fine-tuned encoder as a Hugging Face directory), `eval_results.json`, and with --do_predict
`predictions/<TASK>.tsv` in GLUE's submission format.
"""

import logging
import os

import numpy as np
from absl import app, flags

from tasks import common, demo

FLAGS = flags.FLAGS
flags.DEFINE_string("task", None, "GLUE task: CoLA, SST-2, MRPC, STS-B, QQP, MNLI, QNLI, RTE, WNLI or AX; "
                    "unset: the embedded demo run.")
flags.DEFINE_string("data_dir", None, "Directory with the task's GLUE TSV files; default: tensorflow-datasets.")
flags.DEFINE_string("tfds_data_dir", None, "tensorflow-datasets data_dir, used when --data_dir is not given.")
flags.DEFINE_boolean("skip_bad_rows", False, "Skip (and count) malformed TSV rows instead of failing.")
common.define_common_flags()

# GLUE submission file names for tasks whose split names differ from the task name.
_SUBMISSION_NAMES = {"test_matched": "MNLI-m", "test_mismatched": "MNLI-mm"}


def read_split(task, split):
    """Reads one split from --data_dir (GLUE TSV) or tensorflow-datasets."""
    from official_bert.data.glue import glue_file_path, load_tfds_glue, read_glue_tsv

    if not FLAGS.data_dir:
        return load_tfds_glue(task, split, data_dir=FLAGS.tfds_data_dir)
    return read_glue_tsv(task, glue_file_path(task, FLAGS.data_dir, split), split, skip_bad_rows=FLAGS.skip_bad_rows)


def build_model(task, config):
    """The classifier, its weights loaded from --init_checkpoint, compiled for training."""
    import keras

    from official_bert import BertEncoder
    from official_bert.checkpoints import load_task_weights
    from official_bert.models.classifier import BertClassifier

    model = BertClassifier(BertEncoder(config), task.num_classes)
    head_loaded = load_task_weights(model.encoder, model.head_specs(),
                                    common.resolve_init_checkpoint(FLAGS.init_checkpoint))
    logging.info("Loaded %s (head %s)", FLAGS.init_checkpoint, "loaded" if head_loaded else "freshly initialised")
    if task.is_regression:
        loss, metrics = keras.losses.MeanSquaredError(), [keras.metrics.MeanSquaredError(name="mse")]
    else:
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        metrics = [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
    return model, loss, metrics


def predict(model, packer, examples):
    """Class indices (or scores for regression) for `examples`."""
    from official_bert.data.classification_dataset import classification_dataset

    dataset = classification_dataset(examples.text_a, examples.text_b, None, packer, FLAGS.eval_batch_size,
                                     is_training=False)
    logits = model.predict(dataset, verbose=0)  # (examples, num_classes)
    return logits[:, 0] if logits.shape[-1] == 1 else np.argmax(logits, axis=-1)


def evaluate(task, model, packer):
    """Metrics on every dev split; MNLI's mismatched ones get a `_mismatched` suffix."""
    from official_bert.metrics.glue import glue_metrics

    results = {}
    for split in task.eval_splits:
        examples = read_split(task, split)
        metrics = glue_metrics(task.name, np.asarray(examples.labels), predict(model, packer, examples))
        suffix = "_mismatched" if split == "dev_mismatched" else ""
        results.update({f"{k}{suffix}": float(v) for k, v in metrics.items()})
        results[f"num_examples{suffix}"] = len(examples.text_a)
    return results


def write_predictions(task, model, packer):
    """GLUE submission TSVs (`index`, `prediction`) for every test split."""
    os.makedirs(os.path.join(FLAGS.model_dir, "predictions"), exist_ok=True)
    for split in task.test_splits:
        examples = read_split(task, split)
        predictions = predict(model, packer, examples)
        path = os.path.join(FLAGS.model_dir, "predictions", f"{_SUBMISSION_NAMES.get(split, task.name)}.tsv")
        with open(path, "w", encoding="utf-8") as f:
            f.write("index\tprediction\n")
            for index, prediction in zip(examples.ids, predictions):
                value = f"{prediction:.3f}" if task.is_regression else task.label_names[int(prediction)]
                f.write(f"{index}\t{value}\n")
        logging.info("Wrote %d predictions to %s", len(predictions), path)


def main(_):
    import keras

    from official_bert import training
    from official_bert.data.classification_dataset import TextPairPacker, classification_dataset
    from official_bert.data.glue_tasks import get_glue_task
    from official_bert.optimization import create_optimizer
    from official_bert.text import BertTokenizer

    if FLAGS.task is None:
        demo.apply_demo_defaults(FLAGS)
    if not FLAGS.model_dir:
        raise app.UsageError("--model_dir is required")
    task = get_glue_task(FLAGS.task)
    config, vocab_file, lower_case = common.prepare_model_dir(
        FLAGS.model_dir, {"task": task.name, "label_names": list(task.label_names),
                          "is_regression": task.is_regression, "num_classes": task.num_classes})
    keras.utils.set_random_seed(FLAGS.seed)
    training.set_mixed_precision(FLAGS.mixed_precision)
    strategy = training.get_strategy(FLAGS.distribution_strategy, FLAGS.tpu)
    packer = TextPairPacker(BertTokenizer(vocab_file=vocab_file, lower_case=lower_case), FLAGS.max_seq_length)

    with strategy.scope():
        model, loss, metrics = build_model(task, config)
        if FLAGS.do_train:
            train = read_split(task, "train")
            total_steps, warmup_steps = common.train_steps(len(train.text_a))
            logging.info("Training on %d examples: %d steps (%d warmup), batch %d", len(train.text_a), total_steps,
                         warmup_steps, FLAGS.train_batch_size)
            optimizer = create_optimizer(FLAGS.learning_rate, total_steps, warmup_steps, FLAGS.optimizer,
                                         FLAGS.weight_decay, FLAGS.adam_epsilon)
        else:
            optimizer = "adam"  # unused: compile only to predict
        model.compile(optimizer=optimizer, loss=loss, metrics=metrics, jit_compile=common.jit_compile())

    if FLAGS.do_train:
        def make_dataset(skip_batches):
            dataset = classification_dataset(train.text_a, train.text_b, train.labels, packer,
                                             FLAGS.train_batch_size, is_training=True, seed=FLAGS.seed)
            return dataset.skip(skip_batches)

        common.fit_and_save(model, make_dataset, total_steps, vocab_file)
    else:
        common.load_trained_weights(model)

    if FLAGS.do_eval and task.eval_splits:
        results = evaluate(task, model, packer)
        training.write_json(os.path.join(FLAGS.model_dir, "eval_results.json"), results)
        print("eval results:", ", ".join(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}"
                                         for k, v in sorted(results.items())))
    if FLAGS.do_predict:
        write_predictions(task, model, packer)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    app.run(main)
