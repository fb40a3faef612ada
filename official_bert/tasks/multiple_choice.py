"""MultipleChoiceTask: SWAG-style multiple choice (a context, several choices, one right) for the runner."""

import logging

import numpy as np

from official_bert import model_dir as model_dirs
from official_bert.tasks.base import TOKENIZER_KINDS, Task, check_training_examples, predictions_path

logger = logging.getLogger(__name__)

PREDICTIONS_FILE = "predictions.txt"


class MultipleChoiceTask(Task):
    """Multiple choice as the BERT paper's SWAG model: each (context, choice) pair packed `[CLS] context [SEP]
    choice [SEP]`, scored by `BertMultipleChoice`, softmax over a question's choices; accuracy on the eval split.

    Files are SWAG's CSV, SWAG rows as JSON lines, or generic JSON lines (`official_bert.data.multiple_choice`);
    without files, a tensorflow-datasets set (HellaSwag: TFDS has no SWAG builder).

    Args:
        train_file: the training questions (labeled).
        eval_file: the evaluation questions (labeled).
        predict_file: questions to predict (labels optional); default: eval_file.
        tfds_name: a TFDS set (`data.multiple_choice.TFDS_SPLITS`) for the splits without a file: train, dev
            (evaluated), test (predicted).
        tfds_data_dir: TFDS's data directory.
        download: download and prepare the TFDS set when it is not prepared.
    """

    kind = model_dirs.MULTIPLE_CHOICE
    tokenizer_kinds = TOKENIZER_KINDS  # text_preprocessor() only

    def __init__(self, train_file=None, eval_file=None, predict_file=None, tfds_name=None, tfds_data_dir=None,
                 download=False):
        self.files = {"train": train_file, "dev": eval_file, "test": predict_file or eval_file}
        self.tfds_name, self.tfds_data_dir, self.download = tfds_name, tfds_data_dir, download
        self._splits = {}

    def validate(self, config):
        for split, needed, file_flag, do_flag in (("train", config.do_train, "--train_file", "--do_train"),
                                                  ("dev", config.do_eval, "--eval_file", "--do_eval"),
                                                  ("test", config.do_predict, "--predict_file", "--do_predict")):
            if needed and not (self.files[split] or self.tfds_name):
                raise ValueError(f"{do_flag} needs {file_flag}{' or --eval_file' if split == 'test' else ''} (or "
                                 f"--tfds_name); or pass {do_flag}=false")

    def read_split(self, split):
        """One split's `MultipleChoiceExamples` ("train", "dev", "test"; read once).

        Raises:
            ValueError: an empty training or evaluation split, an unlabeled one, or a malformed row (named).
        """
        from official_bert.data.multiple_choice import load_tfds_multiple_choice, read_multiple_choice

        if split not in self._splits:
            path = self.files[split]
            if path:
                examples = read_multiple_choice(path)
            else:
                examples = load_tfds_multiple_choice(self.tfds_name, split, self.tfds_data_dir, self.download)
            if split != "test" and not len(examples):
                raise ValueError(f"{examples.source}: no questions to {'train' if split == 'train' else 'evaluate'} on")
            if split != "test" and examples.labels is None:
                raise ValueError(f"{examples.source}: field 'label' missing: a {split} split must be labeled")
            logger.info("Read %d questions (up to %d choices) from %s", len(examples), examples.max_choices,
                        examples.source)
            self._splits[split] = examples
        return self._splits[split]

    def read_data(self, config, bert_config):
        for split, needed in (("train", config.do_train), ("dev", config.do_eval), ("test", config.do_predict)):
            if needed:
                self.read_split(split)

    def task_info(self):
        return {"task": "multiple_choice"}

    def train_sources(self):
        return [self.files["train"] or f"tfds:{self.tfds_name}[train]"]

    def train_dataset(self, context):
        from official_bert.data.multiple_choice_dataset import multiple_choice_dataset
        from official_bert.data.padding import training_length_multiple

        train, packer, config = self.read_split("train"), context.text_preprocessor(), context.config
        check_training_examples(train.source, len(train), len(train), what="questions")
        _report_truncated(train, packer, "training", config.max_seq_length)

        def make_dataset(batch_size):
            return multiple_choice_dataset(train.contexts, train.choices, train.labels, packer, batch_size,
                                           is_training=True, seed=config.seed,
                                           length_multiple=training_length_multiple(config.uses_xla()))

        return len(train), make_dataset

    def _logits(self, model, context, examples):
        """(questions, max choices) logits; a missing choice's is `MASKED_LOGIT`. Each batch is cut to its longest
        pair, as in training (`trim_choice_padding`)."""
        import tensorflow as tf

        from official_bert.data.multiple_choice_dataset import multiple_choice_dataset, trim_choice_padding
        from official_bert.data.padding import training_length_multiple

        packer, config = context.text_preprocessor(), context.config
        _report_truncated(examples, packer, "", config.max_seq_length)
        dataset = multiple_choice_dataset(examples.contexts, examples.choices, None, packer, config.eval_batch_size,
                                          is_training=False)
        multiple = training_length_multiple(config.uses_xla())
        trim = tf.autograph.experimental.do_not_convert(lambda inputs: trim_choice_padding(inputs, multiple))
        return model.predict(dataset.map(trim, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True), verbose=0)

    def evaluate(self, model, context):
        """Accuracy on the dev split, with the chance level (mean of 1 / choices) beside it."""
        examples = self.read_split("dev")
        predictions = np.argmax(self._logits(model, context, examples), axis=-1)
        return {"accuracy": float(np.mean(predictions == examples.labels)), "num_examples": len(examples),
                "chance_accuracy": examples.chance_accuracy(), "eval_source": examples.source}

    def describe_results(self, results):
        return (f"eval results ({results['eval_source']}, {results['num_examples']} questions): "
                f"accuracy={results['accuracy']:.4f} (chance {results['chance_accuracy']:.4f})")

    def predict(self, model, context):
        """`predictions/predictions.txt`: the predicted choice's index (0-based), one question per line, in the
        predict file's order."""
        examples = self.read_split("test")
        predictions = np.argmax(self._logits(model, context, examples), axis=-1) if len(examples) else []
        path = predictions_path(context.results_dir, PREDICTIONS_FILE)
        with open(path, "w", encoding="utf-8") as f:
            f.writelines(f"{int(p)}\n" for p in predictions)
        logger.info("Wrote %d predicted choices to %s", len(predictions), path)


def _report_truncated(examples, packer, kind, max_seq_length):
    """Warns when some (context, choice) pairs of `examples` do not fit `max_seq_length` (`report_truncated`).

    Args:
        examples: the `MultipleChoiceExamples`; packer: the run's `Preprocessor`; kind: "training" or "".
    """
    from official_bert.text.preprocessing import report_truncated

    pairs = [(context, choice) for context, choices in zip(examples.contexts, examples.choices) for choice in choices]
    report_truncated(packer, [[c for c, _ in pairs], [c for _, c in pairs]], f"{kind} context-choice pairs".strip(),
                     f"--max_seq_length={max_seq_length}", examples.source)
