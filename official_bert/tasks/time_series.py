"""TimeSeriesClassificationTask: a class per sequence of feature vectors (`.npz` files), `BertTimeSeriesClassifier`
trained from scratch, for the runner."""

import logging
import os

import numpy as np

from official_bert import model_dir as model_dirs
from official_bert import owned_files
from official_bert.task_kinds import TIME_SERIES
from official_bert.tasks.base import Task, check_training_examples, checked_steps_per_loop, predictions_path

logger = logging.getLogger(__name__)

PREDICTIONS_FILE = "predictions.tsv"
# task.json's fields of a time-series model_dir besides the common ones: the model's input, head and labels.
MODEL_FIELDS = ("label_names", "input_channels", "norm_first", "key_keep_prob", "classifier_dropout", "standardize",
                "feature_mean", "feature_scale", "init_scheme")


def head_specs(model):
    """The classifier's dense layer under Hugging Face's head name (`classifier`); Google's checkpoints have none."""
    from official_bert.checkpoints.weight_map import dense_specs, hf_only

    return hf_only(dense_specs(model.head, None, "classifier"))


class TimeSeriesClassificationTask(Task):
    """Classifies `.npz` sequences of feature vectors (`official_bert.data.time_series`) with a `BertFeatureEncoder`
    trained from scratch; accuracy, macro F1 and the confusion matrix on the eval split.

    The model's sequence is the classification position and up to `max_time` steps (`sequence_length`: the
    run's `max_seq_length`). A run that only evaluates or predicts takes the model and its labels from the
    model_dir's task.json and `bert_config.json`, whatever the model arguments here.

    Args:
        train_file / eval_file / test_file: the splits (test: predicted; default: eval_file).
        standardize: subtract the training split's per-channel mean and divide by its deviation, inside the model
            (saved in task.json, applied by the export).
        hidden_size / num_layers / num_heads / intermediate_size: the encoder's shape (intermediate: default
            4 * hidden_size).
        norm_first: pre-LN blocks (the paper's); False: BERT's post-LN.
        key_keep_prob: the share of time steps kept as attention keys in training.
        hidden_dropout: dropout on the embeddings, the residual branches and the attention probabilities.
        classifier_dropout: dropout before the dense head.
        max_time: the longest sequence the model takes (its position table); default the training file's time axis.
        init_scheme: how the new model's dense weights are drawn (`BertFeatureEncoder`'s `init_scheme`): "fan_in",
            PyTorch's defaults, or "bert".
        steps_per_loop: training steps per call into TensorFlow (Keras' `steps_per_execution`); the weights are
            the same for any value.
    """

    kind = TIME_SERIES
    uses_pooler = False
    needs_init_checkpoint = False
    needs_vocab = False

    def __init__(self, train_file=None, eval_file=None, test_file=None, standardize=True, hidden_size=64,
                 num_layers=1, num_heads=8, intermediate_size=None, norm_first=True, key_keep_prob=0.8,
                 hidden_dropout=0.1, classifier_dropout=0.8, max_time=None, init_scheme="fan_in", steps_per_loop=10):
        self.files = {"train": train_file, "dev": eval_file, "test": test_file or eval_file}
        self.standardize = bool(standardize)
        self.shape = {"hidden_size": hidden_size, "num_layers": num_layers, "num_heads": num_heads,
                      "intermediate_size": intermediate_size or 4 * hidden_size, "hidden_dropout": hidden_dropout}
        self.norm_first, self.key_keep_prob = bool(norm_first), float(key_keep_prob)
        self.classifier_dropout, self.max_time = float(classifier_dropout), max_time
        self.init_scheme = init_scheme
        self.steps_per_loop = checked_steps_per_loop(steps_per_loop)
        self._splits, self._info, self._recorded = {}, None, None

    def validate(self, config):
        for split, needed, file_flag, do_flag in (("train", config.do_train, "--train_file", "--do_train"),
                                                  ("dev", config.do_eval, "--eval_file", "--do_eval"),
                                                  ("test", config.do_predict, "--test_file", "--do_predict")):
            if needed and not self.files[split]:
                raise ValueError(f"{do_flag} needs {file_flag}{' or --eval_file' if split == 'test' else ''}; or "
                                 f"pass {do_flag}=false")
        if not 0.0 < self.key_keep_prob <= 1.0:
            raise ValueError(f"--key_keep_prob={self.key_keep_prob} must be in (0, 1]")
        for flag, value in (("--hidden_dropout", self.shape["hidden_dropout"]),
                            ("--classifier_dropout", self.classifier_dropout)):
            if not 0.0 <= value < 1.0:
                raise ValueError(f"{flag}={value} must be in [0, 1)")
        if self.shape["hidden_size"] % self.shape["num_heads"]:
            raise ValueError(f"--hidden_size={self.shape['hidden_size']} must be divisible by --num_heads="
                             f"{self.shape['num_heads']}")
        if not config.do_train:
            if not model_dirs.is_model_dir(config.model_dir):
                raise ValueError(f"--model_dir={config.model_dir} holds no trained model: train first (--do_train)")
            recorded = model_dirs.read_task_info(config.model_dir)
            if recorded["kind"] != self.kind:
                raise ValueError(f"{os.path.join(config.model_dir, model_dirs.TASK_FILE)}: field 'kind' is "
                                 f"{recorded['kind']!r}; tasks.run_time_series_classifier reads {self.kind!r} runs")
            self._recorded = recorded

    def read_split(self, split):
        """One split's `TimeSeriesExamples` ("train", "dev", "test"; read once)."""
        from official_bert.data.time_series import read_time_series

        path = self.files[split]
        if path not in self._splits:  # (the test split is the eval file by default)
            examples = read_time_series(path)
            logger.info("Read %d sequences (%d steps, %d channels) from %s", len(examples), examples.time,
                        examples.channels, examples.source)
            self._splits[path] = examples
        return self._splits[path]

    def sequence_length(self, config):
        """The model's sequence length: the classification position and `max_time` steps (the training file's time
        axis by default; a finished run's recorded one)."""
        self.validate(config)
        if self._recorded is not None:
            return int(self._recorded["max_seq_length"])
        return 1 + (self.max_time or self.read_split("train").time)

    def model_config(self):
        from official_bert.config import BertConfig

        if self.files["train"] is None:
            raise ValueError("the model is shaped by --train_file; train first (--do_train)")
        shape = self.shape
        return BertConfig(  # vocab_size and the token types are unused: the inputs are feature vectors
            vocab_size=1, hidden_size=shape["hidden_size"], num_hidden_layers=shape["num_layers"],
            num_attention_heads=shape["num_heads"], intermediate_size=shape["intermediate_size"],
            hidden_dropout_prob=shape["hidden_dropout"], attention_probs_dropout_prob=shape["hidden_dropout"],
            max_position_embeddings=1 + (self.max_time or self.read_split("train").time), layer_norm_eps=1e-5)

    def read_data(self, config, bert_config):
        from official_bert.data.time_series import (channel_statistics, fit_to_model, label_ids,
                                                    training_label_names)

        if self._recorded is not None:
            info = {name: self._recorded[name] for name in MODEL_FIELDS if name in self._recorded}
            train_source = "the training run of " + config.model_dir
        else:
            train = self.read_split("train")
            info = {"label_names": training_label_names(train), "input_channels": train.channels,
                    "norm_first": self.norm_first, "key_keep_prob": self.key_keep_prob,
                    "classifier_dropout": self.classifier_dropout, "standardize": self.standardize,
                    "init_scheme": self.init_scheme}
            if self.standardize:
                info["feature_mean"], info["feature_scale"] = channel_statistics(train)
            train_source = "the training split " + train.source
        self._info = {"task": "time_series", **info}
        self._labels = {}
        for split, needed in (("train", config.do_train), ("dev", config.do_eval), ("test", config.do_predict)):
            if not needed:
                continue
            examples = self.read_split(split)
            fit_to_model(examples, info["input_channels"], bert_config.max_position_embeddings - 1)
            if split != "test" or examples.labels is not None:
                self._labels[split] = label_ids(examples, info["label_names"], train_source)

    def task_info(self):
        return dict(self._info)

    def train_sources(self):
        return [self.files["train"]]

    def training_settings(self):
        return {**self.shape, "max_time": self.max_time}

    def train_dataset(self, context):
        from official_bert.data.time_series import time_series_dataset

        train, config = self.read_split("train"), context.config
        check_training_examples(train.source, len(train), len(train), what="sequences")

        def make_dataset(batch_size):
            return time_series_dataset(train, self._labels["train"], batch_size, is_training=True, seed=config.seed)

        return len(train), make_dataset

    def save(self, model, context):
        """`model.weights.h5` (no optimizer state: the checkpoints keep it for a resume); the encoder has no
        Hugging Face form."""
        optimizer, model.optimizer = model.optimizer, None
        try:
            model.save_weights(owned_files.claim(context.out_dir, model_dirs.WEIGHTS_FILE), overwrite=True)
        finally:
            model.optimizer = optimizer

    def _probabilities(self, model, context, examples):
        """(N, classes) softmax probabilities."""
        from official_bert.data.time_series import time_series_dataset

        dataset = time_series_dataset(examples, None, context.config.eval_batch_size, is_training=False)
        logits = model.predict(dataset, verbose=0)
        exp = np.exp(logits - logits.max(axis=-1, keepdims=True))
        return exp / exp.sum(axis=-1, keepdims=True)

    def evaluate(self, model, context):
        """Accuracy, macro and weighted F1 and the confusion matrix (rows: true classes, columns: predicted, in
        `label_names` order) on the eval split."""
        from official_bert.metrics.classification import single_label_metrics

        examples, labels = self.read_split("dev"), self._labels["dev"]
        predictions = np.argmax(self._probabilities(model, context, examples), axis=-1)
        classes = len(self._info["label_names"])
        confusion = np.bincount(labels * classes + predictions, minlength=classes * classes).reshape(classes, classes)
        return {**single_label_metrics(labels, predictions), "confusion_matrix": confusion.tolist(),
                "label_names": list(self._info["label_names"]), "num_examples": len(examples),
                "eval_source": examples.source}

    def describe_results(self, results):
        return (f"eval results ({results['eval_source']}, {results['num_examples']} sequences): "
                f"accuracy={results['accuracy']:.4f} macro_f1={results['macro_f1']:.4f}")

    def predict(self, model, context):
        """`predictions/predictions.tsv`: a header, then each sequence's predicted label and every class's
        probability, in the test file's order."""
        examples, names = self.read_split("test"), self._info["label_names"]
        probabilities = self._probabilities(model, context, examples)
        path = predictions_path(context.results_dir, PREDICTIONS_FILE)
        with open(path, "w", encoding="utf-8") as f:
            f.write("\t".join(["index", "label"] + [f"probability_{name}" for name in names]) + "\n")
            for i, row in enumerate(probabilities):
                f.write("\t".join([str(i), names[int(np.argmax(row))]] + [f"{p:.6f}" for p in row]) + "\n")
        logger.info("Wrote %d predictions to %s", len(probabilities), path)
