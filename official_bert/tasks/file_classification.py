"""FileClassificationTask: classification of the user's own labelled texts (CSV, TSV or JSON lines), with any labels,
several labels an example, or scores, for the runner."""

import dataclasses
import logging
import os

import numpy as np

from official_bert import model_dir as model_dirs
from official_bert.data.labeled_text_files import Columns, check_new_columns, read_labeled_texts, write_with_columns
from official_bert.data.text_labels import LabelScheme
from official_bert.tasks.base import TOKENIZER_KINDS, Task, check_training_examples, predictions_path
from official_bert.tasks.classification import predict_logits, train_batches

logger = logging.getLogger(__name__)

DEFAULT_THRESHOLD = 0.5


class FileClassificationTask(Task):
    """Sequence classification of a user's files; the label set comes from the training file.

    A model_dir it trains is a classification one (task.json: `label_names`, `is_regression`, `num_classes`, and
    for multi-label `multi_label` and the decision `threshold`), exported and served like a GLUE one. Evaluation
    (`eval_results.json`): accuracy, macro and weighted F1; multi-label: micro and macro F1 at the threshold;
    regression: Pearson and Spearman. Prediction writes the test file back, in its format, to
    `predictions/<its name>` with `predicted_label` and `probability` columns (multi-label: `predicted_labels` and
    a `probability_<label>` column per label; regression: `predicted_score`).

    Args:
        train_file: the training file (needed to train; the task is named after it).
        eval_file: the labelled evaluation file, or None.
        test_file: the file to predict (`--do_predict`), or None.
        columns: the `labeled_text_files.Columns` of every file.
        multi_label: a label cell (list) holds any number of labels.
        regression: True: scores; None: scores when the training labels are numbers with fractions (see
            `text_labels.LabelScheme.of_training_labels`).
        tune_threshold: multi-label: the decision threshold with the best micro F1 on the eval file, saved in
            task.json (default 0.5).
    """

    kind = model_dirs.CLASSIFICATION
    tokenizer_kinds = TOKENIZER_KINDS  # text_preprocessor() only

    def __init__(self, train_file=None, eval_file=None, test_file=None, columns=Columns(), multi_label=False,
                 regression=None, tune_threshold=False):
        if multi_label and regression:
            raise ValueError("--multi_label and --regression: a multi-label task has classes, not scores")
        if tune_threshold and not multi_label:
            raise ValueError("--tune_threshold tunes a multi-label classifier's decision threshold; it needs "
                             "--multi_label")
        self.files = {"train": train_file, "eval": eval_file, "test": test_file}
        self.columns, self.multi_label, self.regression = columns, multi_label, regression
        self.tune_threshold = tune_threshold
        self.name = os.path.splitext(os.path.basename(train_file))[0] if train_file else None
        self.scheme, self.pair, self.threshold = None, None, DEFAULT_THRESHOLD
        # With --do_train=false: the finished run's column flags (task.json's "columns"; [] before they were kept).
        self.recorded_columns = None
        self.examples, self.labels = {}, {}  # split -> LabeledTexts, encoded labels

    def validate(self, config):
        if config.do_train and not self.files["train"]:
            raise ValueError("--train_file is required to train (--do_train=false evaluates a trained --model_dir)")
        if not config.do_train and not self.files["eval"] and not config.do_predict:
            raise ValueError("--do_train=false: nothing to do; pass --eval_file, or --test_file with --do_predict")
        if config.do_predict != bool(self.files["test"]):
            raise ValueError("--do_predict writes predictions for --test_file: pass both, or neither")
        if self.tune_threshold and not (config.do_eval and self.files["eval"]):
            raise ValueError("--tune_threshold tunes on the evaluation file: pass --eval_file (and --do_eval)")
        if not config.do_train:
            self._from_model_dir(config.model_dir)

    def _from_model_dir(self, model_dir):
        """The label scheme, text pairs, name and threshold of a finished run's task.json."""
        if not model_dirs.is_model_dir(model_dir):
            raise ValueError(f"--model_dir={model_dir} holds no trained classifier; with --do_train=false its "
                             "task.json gives the labels: train first (--train_file)")
        info = model_dirs.read_task_info(model_dir)
        path = os.path.join(model_dir, model_dirs.TASK_FILE)
        if info["kind"] != self.kind:
            raise ValueError(f"{path}: a {info['kind']} model_dir, not a classifier")
        self.scheme = LabelScheme(tuple(info["label_names"]), bool(info.get("is_regression")),
                                  bool(info.get("multi_label")))
        if self.multi_label != self.scheme.multi_label:
            raise ValueError(f"{path}: the model is {'' if self.scheme.multi_label else 'not '}multi-label; "
                             f"{'pass' if self.scheme.multi_label else 'drop'} --multi_label")
        self.name, self.pair = info["task"], len(info["text_features"]) == 2
        self.threshold = info.get("threshold", DEFAULT_THRESHOLD)
        self.recorded_columns = info.get("columns", [])
        if self.recorded_columns:  # the training run's column flags, where this run gives none of its own
            given = self.columns
            self.columns = Columns(*(mine if mine is not None else recorded
                                     for mine, recorded in zip(dataclasses.astuple(given), self.recorded_columns)))
            if self.columns != given:
                logger.info("Reading the files with the training run's columns (%s): %s", path,
                            self.columns.as_flags())

    def _read(self, split, labeled):
        self.examples[split] = read_labeled_texts(self.files[split], self.columns, labeled=labeled,
                                                  multi_label=self.multi_label, pair=self.pair)
        if labeled:
            self.labels[split] = self.scheme.encode(self.examples[split])

    def read_data(self, config, bert_config):
        if config.do_train:
            train = read_labeled_texts(self.files["train"], self.columns, multi_label=self.multi_label)
            self.scheme = LabelScheme.of_training_labels(train, self.multi_label, self.regression)
            self.pair = train.text_b is not None
            self.examples["train"], self.labels["train"] = train, self.scheme.encode(train)
        if config.do_eval and self.files["eval"]:
            self._read("eval", labeled=True)
        if config.do_predict:
            self._read("test", labeled=False)
            check_new_columns(self.examples["test"], self._prediction_columns())

    def task_info(self):
        scheme = self.scheme
        multi_label = {"multi_label": True} if scheme.multi_label else {}  # (a GLUE model_dir evaluates too)
        return {"task": self.name, "label_names": list(scheme.label_names), "is_regression": scheme.is_regression,
                "num_classes": scheme.num_classes, **multi_label}

    def train_sources(self):
        return [self.files["train"]]

    def training_settings(self):
        return {"columns": list(dataclasses.astuple(self.columns))}

    def run_settings(self):
        """task.json's text features and threshold (export's), and the training run's column flags (a later
        `--do_train=false` run reads its files with them unless it gives its own)."""
        from official_bert.task_kinds import text_features

        threshold = {"threshold": self.threshold} if self.scheme.multi_label else {}
        columns = list(dataclasses.astuple(self.columns)) if self.recorded_columns is None else self.recorded_columns
        return {"text_features": text_features(self.pair), **threshold, **({"columns": columns} if columns else {})}

    def describe_run(self, context):
        scheme = self.scheme
        if scheme.is_regression:
            return f"{self.name}: regression, one score an example"
        return f"{self.name}: {'multi-label ' if scheme.multi_label else ''}labels {', '.join(scheme.label_names)}"

    def train_dataset(self, context):
        train = self.examples["train"]
        check_training_examples(train.source, len(train), len(train))
        return train_batches(train.text_a, train.text_b, self.labels["train"], context, train.source)

    def _logits(self, model, context, split):
        examples = self.examples[split]
        return predict_logits(model, context, examples.text_a, examples.text_b, examples.source)  # (n, classes)

    def evaluate(self, model, context):
        """The eval file's metrics; with `tune_threshold`, tunes the threshold first and records it in task.json."""
        from official_bert.metrics.classification import best_threshold, multi_label_metrics, single_label_metrics
        from official_bert.metrics.glue import pearson, spearman

        if "eval" not in self.examples:
            return None
        logits, labels = self._logits(model, context, "eval"), self.labels["eval"]
        if self.scheme.is_regression:
            results = {"pearson": pearson(labels, logits[:, 0]), "spearman": spearman(labels, logits[:, 0])}
        elif self.scheme.multi_label:
            probabilities = _sigmoid(logits)
            if self.tune_threshold:
                self.threshold = best_threshold(labels, probabilities)
                if context.is_chief and model_dirs.is_model_dir(context.config.model_dir):
                    from official_bert.run_model_dir import record_run_settings

                    record_run_settings(self, context.config)
            results = {**multi_label_metrics(labels, probabilities > self.threshold), "threshold": self.threshold}
        else:
            results = single_label_metrics(labels, np.argmax(logits, axis=-1))
        return {**results, "num_examples": len(labels)}

    def _prediction_columns(self):
        """The columns `predict` adds to the test file."""
        if self.scheme.is_regression:
            return ["predicted_score"]
        if self.scheme.multi_label:
            return ["predicted_labels"] + [f"probability_{name}" for name in self.scheme.label_names]
        return ["predicted_label", "probability"]

    def predict(self, model, context):
        """The test file, written back to `predictions/<its name>` with the predictions' columns."""
        logits, names = self._logits(model, context, "test"), self.scheme.label_names
        if self.scheme.is_regression:
            added = {"predicted_score": [round(float(score), 6) for score in logits[:, 0]]}
        elif self.scheme.multi_label:
            probabilities = _sigmoid(logits)  # (n, labels)
            added = {"predicted_labels": [[names[j] for j in np.flatnonzero(row > self.threshold)]
                                          for row in probabilities],
                     **{f"probability_{name}": [round(float(p), 6) for p in probabilities[:, j]]
                        for j, name in enumerate(names)}}
        else:
            probabilities = _softmax(logits)
            best = np.argmax(probabilities, axis=-1)  # (n,)
            added = {"predicted_label": [names[j] for j in best],
                     "probability": [round(float(p), 6) for p in probabilities[np.arange(len(best)), best]]}
        test = self.examples["test"]
        path = predictions_path(context.results_dir, os.path.basename(test.source))
        write_with_columns(test, path, added)
        logger.info("Wrote %d predictions to %s", len(test), path)


def _sigmoid(logits):
    return 1.0 / (1.0 + np.exp(-logits.astype(np.float64)))


def _softmax(logits):
    shifted = np.exp(logits.astype(np.float64) - logits.max(axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)
