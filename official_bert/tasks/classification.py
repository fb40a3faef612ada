"""ClassificationTask: a GLUE task, or a task of the user's described as one (classification or regression), for
the runner."""

import logging

import numpy as np

from official_bert import model_dir as model_dirs
from official_bert.tasks.base import TOKENIZER_KINDS, Task, check_training_examples, predictions_path

logger = logging.getLogger(__name__)

# GLUE submission file names for tasks whose split names differ from the task name.
_SUBMISSION_NAMES = {"test_matched": "MNLI-m", "test_mismatched": "MNLI-mm"}


class ClassificationTask(Task):
    """Sequence classification (or regression, STS-B) of a GLUE task, or of a task of the user's.

    Args:
        task: the GLUE task name (`official_bert.data.glue_tasks.GLUE_TASKS`), or a `GlueTask` of the user's (its
            name, labels, metrics, file names and TSV columns; with `data_dir`).
        data_dir: the task's GLUE TSV files; None: tensorflow-datasets `glue/<task>`.
        tfds_data_dir: TFDS's data directory (None: its default).
        download: without data_dir, download and prepare the TFDS dataset when it is not prepared.
        skip_bad_rows: skip (and count) malformed TSV rows instead of failing.
        text_features: the exported model's raw-text input names, recorded in task.json; default ("text",), or
            ("text", "text_b") for a pair task.
    """

    kind = model_dirs.CLASSIFICATION
    tokenizer_kinds = TOKENIZER_KINDS  # text_preprocessor() only

    def __init__(self, task, data_dir=None, tfds_data_dir=None, download=False, skip_bad_rows=False,
                 text_features=None):
        from official_bert.data.glue_tasks import get_glue_task
        from official_bert.task_kinds import text_features as default_text_features

        self.glue_task = get_glue_task(task)
        self.data_dir = data_dir
        self.tfds_data_dir = tfds_data_dir
        self.download = download
        self.skip_bad_rows = skip_bad_rows
        self.text_features = list(text_features or default_text_features(self.glue_task.is_pair))
        if len(self.text_features) != (2 if self.glue_task.is_pair else 1):
            raise ValueError(f"text_features={self.text_features}: {self.glue_task.name} has "
                             f"{'two texts' if self.glue_task.is_pair else 'one text'} per example")
        self._splits = {}

    @classmethod
    def for_teacher(cls, info, flags):
        """The GLUE task of a teacher's task.json; a ValueError for a classifier of the user's files (`tasks.distill`
        and `tasks.prune` read GLUE data only)."""
        from official_bert.data.glue_tasks import GLUE_TASKS

        glue_task = GLUE_TASKS.get(info["task"])
        if glue_task is None or list(glue_task.label_names) != list(info["label_names"]) or info.get("multi_label"):
            raise ValueError(f"the teacher was trained on task {info['task']!r} with labels {info['label_names']}, "
                             "not a GLUE task; distillation and pruning of a classifier read GLUE data only")
        return cls(info["task"], data_dir=flags.data_dir, download=True)

    def labeled_eval_batches(self, loaded, num_examples, batch_size=32):
        """`(inputs, labels)` batches of the first `num_examples` examples of the eval split, packed for the
        `model_dir.LoadedModelDir` `loaded` (what `tasks.prune` measures importance on)."""
        from official_bert.data.classification_dataset import classification_dataset
        from official_bert.text.preprocessing import text_preprocessor

        split = self.read_split(self.glue_task.eval_splits[0])
        packer = text_preprocessor(loaded.vocab_file, loaded.lower_case, loaded.max_seq_length)
        text_b = split.text_b[:num_examples] if split.text_b is not None else None
        return classification_dataset(split.text_a[:num_examples], text_b, split.labels[:num_examples], packer,
                                      batch_size, is_training=False)

    def read_split(self, split):
        """One split's `GlueExamples` (read once)."""
        from official_bert.data.glue import glue_file_path, read_glue_tsv
        from official_bert.data.glue_tfds import load_tfds_glue

        if split not in self._splits:
            task = self.glue_task
            if self.data_dir:
                self._splits[split] = read_glue_tsv(task, glue_file_path(task, self.data_dir, split), split,
                                                    skip_bad_rows=self.skip_bad_rows)
            else:
                self._splits[split] = load_tfds_glue(task, split, data_dir=self.tfds_data_dir, download=self.download)
        return self._splits[split]

    def read_data(self, config, bert_config):
        splits = (["train"] if config.do_train else []) + (list(self.glue_task.eval_splits) if config.do_eval else []) \
            + (list(self.glue_task.test_splits) if config.do_predict else [])
        for split in splits:
            self.read_split(split)

    def task_info(self):
        task = self.glue_task
        return {"task": task.name, "label_names": list(task.label_names), "is_regression": task.is_regression,
                "num_classes": task.num_classes}

    def train_sources(self):
        from official_bert.data.glue import glue_file_path

        if self.data_dir:
            return [glue_file_path(self.glue_task, self.data_dir, "train")]
        return [f"tfds:glue/{self.glue_task.name.lower()}[train]"]

    def training_settings(self):
        return {"skip_bad_rows": self.skip_bad_rows}

    def run_settings(self):
        return {"text_features": self.text_features}  # export's input names: they change no training

    def train_dataset(self, context):
        train = self.read_split("train")
        check_training_examples(train.source, len(train.text_a), len(train.text_a) + train.num_skipped,
                                why="malformed rows skipped")
        return train_batches(train.text_a, train.text_b, train.labels, context, train.source)

    def _predict(self, model, context, examples):
        """Class indices (or scores for regression) for `examples`."""
        logits = predict_logits(model, context, examples.text_a, examples.text_b, examples.source)  # (n, classes)
        return logits[:, 0] if logits.shape[-1] == 1 else np.argmax(logits, axis=-1)

    def evaluate(self, model, context):
        """Metrics on every dev split; MNLI's mismatched ones get a `_mismatched` suffix."""
        from official_bert.metrics.glue import glue_metrics

        if not self.glue_task.eval_splits:
            return None
        results = {}
        for split in self.glue_task.eval_splits:
            examples = self.read_split(split)
            metrics = glue_metrics(self.glue_task.metric_names, np.asarray(examples.labels),
                                   self._predict(model, context, examples))
            suffix = "_mismatched" if split == "dev_mismatched" else ""
            results.update({f"{k}{suffix}": float(v) for k, v in metrics.items()})
            results[f"num_examples{suffix}"] = len(examples.text_a)
        return results

    def predict(self, model, context):
        """GLUE submission TSVs (`index`, `prediction`) for every test split, in `predictions/`."""
        task = self.glue_task
        for split in task.test_splits:
            examples = self.read_split(split)
            predictions = self._predict(model, context, examples)
            path = predictions_path(context.results_dir, f"{_SUBMISSION_NAMES.get(split, task.name)}.tsv")
            with open(path, "w", encoding="utf-8") as f:
                f.write("index\tprediction\n")
                for index, prediction in zip(examples.ids, predictions):
                    value = f"{prediction:.3f}" if task.is_regression else task.label_names[int(prediction)]
                    f.write(f"{index}\t{value}\n")
            logger.info("Wrote %d predictions to %s", len(predictions), path)


def train_batches(text_a, text_b, labels, context, source=""):
    """`Task.train_dataset`'s `(num_examples, make_dataset)` for classification examples.

    Args:
        text_a: the first texts.
        text_b: the second texts, or None.
        labels: class indices (n,), scores (n,) or multi-hot rows (n, classes).
        context: the run's `RunContext`.
        source: where they came from (a file or TFDS split), named in the warning about examples that do not fit.
    """
    from official_bert.data.classification_dataset import classification_dataset
    from official_bert.data.padding import training_length_multiple
    from official_bert.text.preprocessing import report_truncated

    packer, config = context.text_preprocessor(), context.config
    report_truncated(packer, [text_a] + ([text_b] if text_b is not None else []), "training examples",
                     f"--max_seq_length={config.max_seq_length}", source)

    def make_dataset(batch_size):
        return classification_dataset(text_a, text_b, labels, packer, batch_size, is_training=True,
                                      seed=config.seed, length_multiple=training_length_multiple(config.uses_xla()))

    return len(text_a), make_dataset


def predict_logits(model, context, text_a, text_b, source=""):
    """The classifier's logits (n, num_classes) float32 for texts (and second texts, or None), from `source` (a
    file or TFDS split, named in the warning about examples that do not fit). Each batch is cut to its longest
    example (rounded up to `XLA_LENGTH_MULTIPLE` under XLA), as in training: the [CLS] logits do not change (up to
    float rounding) and short texts no longer pay for --max_seq_length."""
    from official_bert.data.classification_dataset import classification_dataset
    from official_bert.data.padding import training_length_multiple, trim_batch_padding
    from official_bert.text.preprocessing import report_truncated

    packer, config = context.text_preprocessor(), context.config
    report_truncated(packer, [text_a] + ([text_b] if text_b is not None else []), "examples",
                     f"--max_seq_length={config.max_seq_length}", source)
    dataset = classification_dataset(text_a, text_b, None, packer, config.eval_batch_size, is_training=False)
    return model.predict(trim_batch_padding(dataset, training_length_multiple(config.uses_xla())), verbose=0)
