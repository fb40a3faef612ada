"""Fine-tunes and evaluates BERT for extractive question answering on SQuAD v1.1 / v2.0.

    python -m tasks.run_squad --train_file=train-v1.1.json --predict_file=dev-v1.1.json \
        --init_checkpoint=../shared/data/all-MiniLM-L6-v2 --model_dir=out/squad
    python -m tasks.run_squad --train_file=train-v2.0.json --predict_file=dev-v2.0.json \
        --version_2_with_negative ...
    python -m tasks.run_squad --tfds_name=squad/v1.1 --tfds_data_dir=DIR ...   # prepared TFDS, no download

Examples become `[CLS] question [SEP] context-window [SEP]` windows (`--max_seq_length`, `--doc_stride`,
`--max_query_length`, as Google's original; see `official_bert.data.squad`); the model scores every piece
as the answer's start and end (`BertSpanLabeler`); answers are read back with the n-best / max-context /
null-score rules of the original (`official_bert.data.squad_postprocessing`) and scored as the official
evaluation scripts do (`official_bert.metrics.squad`). Training epochs count windows, as Hugging Face's
`run_qa.py` does.

Writes to --model_dir: `bert_config.json`, `vocab.txt`, `task.json` (with the latest run's `max_query_length`,
`max_answer_length` and `null_score_diff_threshold`, which `export.saved_model` reads), `checkpoints/`
(resumed automatically), `logs/`, `model.weights.h5`, `encoder/` (Hugging Face directory), `train_results.json`,
and for the predict file `predictions.json`, `nbest_predictions.json`, `null_odds.json` (v2.0) and, when it has
gold answers, `eval_results.json` (`exact_match`/`f1` for v1.1; `exact`, `f1`, `HasAns_*`, `NoAns_*`, `best_*` for v2.0;
percentages, as the official scripts).
"""

import json
import logging
import os

from absl import app, flags

from tasks import common

FLAGS = flags.FLAGS
flags.DEFINE_string("train_file", None, "SQuAD JSON file to train on (v1.1, or v2.0 with --version_2_with_negative).")
flags.DEFINE_string("predict_file", None, "SQuAD JSON file to predict (and evaluate, when it has answers).")
flags.DEFINE_enum("tfds_name", None, ["squad/v1.1", "squad/v2.0"], "tensorflow-datasets SQuAD, for the splits "
                  "without a file: train for training, validation for prediction (prepared beforehand).")
flags.DEFINE_string("tfds_data_dir", None, "tensorflow-datasets data_dir for --tfds_name.")
flags.DEFINE_boolean("version_2_with_negative", False, "SQuAD 2.0: some questions have no answer.")
flags.DEFINE_integer("doc_stride", 128, "Step, in word pieces, between the starts of a context's windows.")
flags.DEFINE_integer("max_query_length", 64, "Question word pieces kept (the rest are cut).")
flags.DEFINE_integer("n_best_size", 20, "Start and end candidates per window, and answers in the n-best lists.")
flags.DEFINE_integer("max_answer_length", 30, "Longest answer, in word pieces.")
flags.DEFINE_float("null_score_diff_threshold", 0.0, "SQuAD 2.0: answer \"\" when the null score exceeds the best "
                   "span's score by more than this.")
common.define_common_flags(default_seq_length=384)


def read_examples(split):
    """`(examples, source)` of "train" or "predict" from its file or TFDS; `(None, None)` when neither is given."""
    path = FLAGS.train_file if split == "train" else FLAGS.predict_file
    if not (path or FLAGS.tfds_name):
        return None, None
    from official_bert.data.squad import examples_from_tfds, read_squad_json

    if path:
        examples, source = read_squad_json(path), path
    else:
        tfds_split = "train" if split == "train" else "validation"
        examples = examples_from_tfds(FLAGS.tfds_name, tfds_split, FLAGS.tfds_data_dir)
        source = f"{FLAGS.tfds_name}[{tfds_split}]"
    impossible = sum(e.is_impossible for e in examples)
    if impossible and not FLAGS.version_2_with_negative:
        raise ValueError(f"{source}: {impossible} questions are marked is_impossible (SQuAD 2.0); pass "
                         f"--version_2_with_negative")
    logging.info("Read %d questions (%d unanswerable) from %s", len(examples), impossible, source)
    return examples, source


def build_model(config):
    """The span labeler, its weights loaded from --init_checkpoint."""
    from official_bert import BertEncoder
    from official_bert.checkpoints import load_task_weights
    from official_bert.models.span_labeler import BertSpanLabeler

    model = BertSpanLabeler(BertEncoder(config))
    head_loaded = load_task_weights(model.encoder, model.head_specs(),
                                    common.resolve_init_checkpoint(FLAGS.init_checkpoint), optional_pooler=True)
    logging.info("Loaded %s (head %s)", FLAGS.init_checkpoint, "loaded" if head_loaded else "freshly initialised")
    return model


def features_of(examples, tokenizer, source, is_training):
    from official_bert.data.squad import build_features

    features, stats = build_features(examples, tokenizer, FLAGS.max_seq_length, FLAGS.doc_stride,
                                     FLAGS.max_query_length, is_training=is_training)
    logging.info("%s: %s", source, ", ".join(f"{k}={v}" for k, v in stats.items() if k != "mismatched_qas_ids"))
    return features, stats


def predict_and_evaluate(model, tokenizer, examples, source):
    """Writes the predictions of `examples`; returns the official figures when they have gold answers, else None."""
    from official_bert import training
    from official_bert.data.squad import has_gold_answers, squad_articles, squad_dataset
    from official_bert.data.squad_postprocessing import postprocess, write_predictions
    from official_bert.metrics.squad import evaluate

    features, stats = features_of(examples, tokenizer, source, is_training=False)
    outputs = model.predict(squad_dataset(features, FLAGS.eval_batch_size, is_training=False), verbose=0)
    predictions = postprocess(examples, features, outputs["start_logits"], outputs["end_logits"],
                              n_best_size=FLAGS.n_best_size, max_answer_length=FLAGS.max_answer_length,
                              version_2_with_negative=FLAGS.version_2_with_negative,
                              null_score_diff_threshold=FLAGS.null_score_diff_threshold)
    write_predictions(predictions, FLAGS.model_dir)
    logging.info("Wrote predictions of %d questions to %s", len(predictions.predictions), FLAGS.model_dir)
    if not (FLAGS.do_eval and has_gold_answers(examples)):
        return None
    version = "2.0" if FLAGS.version_2_with_negative else "1.1"
    results = evaluate(squad_articles(examples), predictions.predictions, na_probs=predictions.null_odds,
                       version=version)
    results.update(predict_file=source, num_examples=len(examples), num_windows=len(features),
                   mismatched_answers=stats["mismatched_answers"])
    training.write_json(os.path.join(FLAGS.model_dir, "eval_results.json"), results)
    return results


def record_answer_settings():
    """Adds this run's question and answer settings to task.json, for `export.saved_model`.

    They are the latest run's (a prediction run with a tuned --null_score_diff_threshold replaces the
    training run's); unlike the fields `prepare_model_dir` writes, a later run may change them.
    """
    from official_bert import training

    path = os.path.join(FLAGS.model_dir, "task.json")
    with open(path, encoding="utf-8") as f:
        info = json.load(f)
    info.update(max_query_length=FLAGS.max_query_length, max_answer_length=FLAGS.max_answer_length,
                null_score_diff_threshold=FLAGS.null_score_diff_threshold)
    training.write_json(path, info)


def main(_):
    if not FLAGS.model_dir:
        raise app.UsageError("--model_dir is required")
    train, train_source = read_examples("train") if FLAGS.do_train else (None, None)
    if FLAGS.do_train and train is None:
        raise app.UsageError("training needs --train_file or --tfds_name (or pass --do_train=false)")
    predict, predict_source = read_examples("predict") if FLAGS.do_eval or FLAGS.do_predict else (None, None)
    if not FLAGS.do_train and predict is None:
        raise app.UsageError("nothing to do: give --predict_file or --tfds_name")

    import keras

    from official_bert import training
    from official_bert.data.squad import squad_dataset
    from official_bert.models.span_labeler import span_labeling_loss
    from official_bert.optimization import create_optimizer
    from official_bert.text import BertTokenizer

    config, vocab_file, lower_case = common.prepare_model_dir(
        FLAGS.model_dir, {"task": "squad", "version_2_with_negative": FLAGS.version_2_with_negative})
    record_answer_settings()
    if FLAGS.max_seq_length > config.max_position_embeddings:
        raise app.UsageError(f"--max_seq_length={FLAGS.max_seq_length} exceeds the model's max_position_embeddings="
                             f"{config.max_position_embeddings}")
    keras.utils.set_random_seed(FLAGS.seed)
    training.set_mixed_precision(FLAGS.mixed_precision)
    strategy = training.get_strategy(FLAGS.distribution_strategy, FLAGS.tpu)
    tokenizer = BertTokenizer(vocab_file=vocab_file, lower_case=lower_case)

    with strategy.scope():
        model = build_model(config)
        if FLAGS.do_train:
            features, _ = features_of(train, tokenizer, train_source, is_training=True)
            total_steps, warmup_steps = common.train_steps(len(features))
            logging.info("Training on %d questions (%d windows): %d steps (%d warmup), batch %d", len(train),
                         len(features), total_steps, warmup_steps, FLAGS.train_batch_size)
            optimizer = create_optimizer(FLAGS.learning_rate, total_steps, warmup_steps, FLAGS.optimizer,
                                         FLAGS.weight_decay, FLAGS.adam_epsilon)
        else:
            optimizer = "adam"  # unused: compile only to predict
        model.compile(optimizer=optimizer, jit_compile=common.jit_compile(), **span_labeling_loss())

    if FLAGS.do_train:
        def make_dataset(skip_batches):
            dataset = squad_dataset(features, FLAGS.train_batch_size, is_training=True, seed=FLAGS.seed)
            return dataset.skip(skip_batches)

        common.fit_and_save(model, make_dataset, total_steps, vocab_file)
    else:
        common.load_trained_weights(model)

    if predict is not None:
        results = predict_and_evaluate(model, tokenizer, predict, predict_source)
        if results is not None:
            keys = ("exact_match", "f1") if "exact_match" in results else (
                "exact", "f1", "HasAns_exact", "HasAns_f1", "NoAns_exact", "NoAns_f1", "best_f1", "best_f1_thresh")
            print(f"eval results ({predict_source}, {results['num_examples']} questions): "
                  + " ".join(f"{k}={results[k]:.2f}" for k in keys if k in results))


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    app.run(main)
