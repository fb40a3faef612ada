"""SquadTask: extractive question answering on SQuAD v1.1 / v2.0 for the runner."""

import logging

from official_bert import model_dir as model_dirs
from official_bert import owned_files
from official_bert.tasks.base import TOKENIZER_KINDS, Task, check_training_examples
from official_bert.text_files import path_exists

logger = logging.getLogger(__name__)

# The answer settings a SQuAD model_dir's task.json records (the latest run's), which `export.saved_model` reads
# (its doc-stride windows: `doc_stride`, `max_query_length`).
ANSWER_SETTINGS = ("doc_stride", "max_query_length", "max_answer_length", "null_score_diff_threshold")
# What an evaluation of a finished model_dir reads from its task.json unless given (`SquadTask`'s recorded_settings).
RECORDED_SETTINGS = ("version_2_with_negative", *ANSWER_SETTINGS)


class SquadTask(Task):
    """Span labelling over `[CLS] question [SEP] context-window [SEP]` windows, as Google's `run_squad.py`
    (RoBERTa: `<s> question </s></s> context-window </s>`, as transformers' `run_qa.py` packs it; ALBERT: the
    former, with SentencePiece pieces and `AlbertTokenizerFast`'s offsets).

    Answers are read back with the n-best / max-context / null-score rules of the original and scored as the
    official evaluation scripts do. Training epochs count windows.

    Args:
        train_file / predict_file: SQuAD JSON files (None: the TFDS split, or nothing).
        tfds_name: "squad/v1.1" or "squad/v2.0" for the splits without a file (train; validation to predict).
        tfds_data_dir: TFDS's data directory (prepared beforehand).
        version_2_with_negative: SQuAD 2.0 (some questions have no answer).
        doc_stride: step, in pieces, between the starts of a context's windows.
        max_query_length: question pieces kept.
        n_best_size: start and end candidates per window.
        max_answer_length: longest answer, in pieces.
        null_score_diff_threshold: SQuAD 2.0: answer "" when the null score beats the best span by more.
        recorded_settings: names of the settings above (`RECORDED_SETTINGS`) the user left unset: evaluating a
            finished model_dir (`--do_train=false`) takes them from its task.json, as trained or last recorded,
            not the defaults (which would also overwrite the record the export reads).
    """

    kind = model_dirs.SQUAD
    uses_pooler = False  # HF question-answering checkpoints have none
    tokenizer_kinds = TOKENIZER_KINDS  # every family's tokenizer gives offsets

    def __init__(self, train_file=None, predict_file=None, tfds_name=None, tfds_data_dir=None,
                 version_2_with_negative=False, doc_stride=128, max_query_length=64, n_best_size=20,
                 max_answer_length=30, null_score_diff_threshold=0.0, recorded_settings=()):
        unknown = set(recorded_settings) - set(RECORDED_SETTINGS)
        if unknown:
            raise ValueError(f"recorded_settings: {sorted(unknown)} are not among {RECORDED_SETTINGS}")
        self.recorded_settings = tuple(recorded_settings)
        self.train_file, self.predict_file = train_file, predict_file
        self.tfds_name, self.tfds_data_dir = tfds_name, tfds_data_dir
        self.version_2_with_negative = version_2_with_negative
        self.doc_stride, self.max_query_length, self.n_best_size = doc_stride, max_query_length, n_best_size
        self.max_answer_length, self.null_score_diff_threshold = max_answer_length, null_score_diff_threshold
        self.train = self.train_source = self.predictions_of = self.predict_source = None
        self._results = None

    @classmethod
    def for_teacher(cls, info, flags):
        return cls(flags.train_file, flags.predict_file, version_2_with_negative=info["version_2_with_negative"],
                   doc_stride=flags.doc_stride, max_query_length=flags.max_query_length,
                   max_answer_length=info.get("max_answer_length", 30),
                   null_score_diff_threshold=info.get("null_score_diff_threshold", 0.0))

    def validate(self, config):
        if not config.do_train and model_dirs.is_model_dir(config.model_dir):
            info = model_dirs.read_task_info(config.model_dir)
            for name in self.recorded_settings:
                if name in info:
                    setattr(self, name, info[name])
        if config.do_train and not (self.train_file or self.tfds_name):
            raise ValueError("training needs --train_file or --tfds_name (or pass --do_train=false)")
        if not config.do_train and not (self.predict_file or self.tfds_name):
            raise ValueError("nothing to do: give --predict_file or --tfds_name")
        if config.do_eval and not (self.predict_file or self.tfds_name):
            logger.warning("No --predict_file (or --tfds_name): the run trains and is not evaluated; pass "
                           "--predict_file=dev-v1.1.json to score it, or --do_eval=false to say so")
        for flag, path in (("train_file", self.train_file if config.do_train else None),
                           ("predict_file", self.predict_file if config.do_eval or config.do_predict else None)):
            if path and not path_exists(path):
                raise FileNotFoundError(f"--{flag}={path}: no such file (SQuAD's JSON files: train-v1.1.json, "
                                        f"dev-v1.1.json, train-v2.0.json, dev-v2.0.json from "
                                        f"https://rajpurkar.github.io/SQuAD-explorer/; or --tfds_name=squad/v1.1)")
        if self.max_query_length >= config.max_seq_length - 3:
            raise ValueError(f"--max_query_length={self.max_query_length} leaves no room for the context in "
                             f"--max_seq_length={config.max_seq_length}")

    def _read(self, split):
        """`(examples, source)` of "train" or "predict" from its file or TFDS; `(None, None)` when neither."""
        path = self.train_file if split == "train" else self.predict_file
        if not (path or self.tfds_name):
            return None, None
        from official_bert.data.squad_examples import examples_from_tfds, read_squad_json

        if path:
            examples, source = read_squad_json(path), path
        else:
            tfds_split = "train" if split == "train" else "validation"
            examples = examples_from_tfds(self.tfds_name, tfds_split, self.tfds_data_dir)
            source = f"{self.tfds_name}[{tfds_split}]"
        impossible = sum(e.is_impossible for e in examples)
        if impossible and not self.version_2_with_negative:
            raise ValueError(f"{source}: {impossible} questions are marked is_impossible (SQuAD 2.0); pass "
                             f"--version_2_with_negative")
        logger.info("Read %d questions (%d unanswerable) from %s", len(examples), impossible, source)
        return examples, source

    def read_data(self, config, bert_config):
        if config.do_train:
            self.train, self.train_source = self._read("train")
        if config.do_eval or config.do_predict:
            self.predictions_of, self.predict_source = self._read("predict")

    def labeled_eval_batches(self, loaded, num_examples, batch_size=32):
        """`(inputs, {"start_logits", "end_logits"} targets)` batches of the windows of the predict split's first
        `num_examples` questions (those whose answer is found), for the `model_dir.LoadedModelDir` `loaded`."""
        import tensorflow as tf

        from official_bert.text.preprocessing import tokenizer_from_files

        examples, source = self._read("predict")
        if examples is None:
            raise ValueError("the importance of SQuAD layers and heads is measured on --predict_file (or --tfds_name)")
        tokenizer = tokenizer_from_files(loaded.vocab_file, loaded.lower_case)
        features, _ = self._features(examples[:num_examples], tokenizer, loaded.max_seq_length,
                                     loaded.config.packing_layout, source, is_training=True)
        targets = {"start_logits": features.start_positions, "end_logits": features.end_positions}
        return tf.data.Dataset.from_tensor_slices((features.inputs, targets)).batch(batch_size)

    def task_info(self):
        return {"task": "squad", "version_2_with_negative": self.version_2_with_negative}

    def run_settings(self):
        return {name: getattr(self, name) for name in ANSWER_SETTINGS}

    def train_sources(self):
        return [self.train_file or f"tfds:{self.tfds_name}[train]"]

    def training_settings(self):
        return {"doc_stride": self.doc_stride, "max_query_length": self.max_query_length}

    def _features(self, examples, tokenizer, max_seq_length, layout, source, is_training):
        from official_bert.data.squad import build_features

        features, stats = build_features(examples, tokenizer, max_seq_length, self.doc_stride, self.max_query_length,
                                         is_training=is_training, layout=layout)
        logger.info("%s: %s", source, ", ".join(f"{k}={v}" for k, v in stats.items() if k != "mismatched_qas_ids"))
        return features, stats

    def train_dataset(self, context):
        from official_bert.data.squad import squad_dataset

        features, stats = self._features(self.train, context.tokenizer, context.config.max_seq_length,
                                         context.bert_config.packing_layout, self.train_source, is_training=True)
        check_training_examples(self.train_source, stats["examples"] - stats["skipped_examples"], stats["examples"],
                                what="questions", why="answer not found in the context")
        config = context.config

        def make_dataset(batch_size):
            return squad_dataset(features, batch_size, is_training=True, seed=config.seed)

        return len(features), make_dataset

    def _predict_and_score(self, model, context):
        """Writes the predictions of the predict split; returns the official figures when it has gold answers."""
        from official_bert.data.squad import squad_dataset
        from official_bert.data.squad_examples import has_gold_answers, squad_articles
        from official_bert.data.squad_postprocessing import PREDICTION_FILES, postprocess, write_predictions
        from official_bert.metrics.squad import evaluate

        examples = self.predictions_of
        features, stats = self._features(examples, context.tokenizer, context.config.max_seq_length,
                                         context.bert_config.packing_layout, self.predict_source, is_training=False)
        outputs = model.predict(squad_dataset(features, context.config.eval_batch_size, is_training=False), verbose=0)
        predictions = postprocess(examples, features, outputs["start_logits"], outputs["end_logits"],
                                  n_best_size=self.n_best_size, max_answer_length=self.max_answer_length,
                                  version_2_with_negative=self.version_2_with_negative,
                                  null_score_diff_threshold=self.null_score_diff_threshold)
        for name in PREDICTION_FILES:
            owned_files.claim(context.results_dir, name)
        write_predictions(predictions, context.results_dir)
        logger.info("Wrote predictions of %d questions to %s", len(predictions.predictions), context.results_dir)
        if not has_gold_answers(examples):
            return None
        version = "2.0" if self.version_2_with_negative else "1.1"
        results = evaluate(squad_articles(examples), predictions.predictions, na_probs=predictions.null_odds,
                           version=version)
        results.update(predict_file=self.predict_source, num_examples=len(examples), num_windows=len(features),
                       mismatched_answers=stats["mismatched_answers"])
        return results

    def evaluate(self, model, context):
        if self.predictions_of is None:
            return None
        self._results = self._predict_and_score(model, context)
        return self._results

    def describe_results(self, results):
        keys = ("exact_match", "f1") if "exact_match" in results else (
            "exact", "f1", "HasAns_exact", "HasAns_f1", "NoAns_exact", "NoAns_f1", "best_f1", "best_f1_thresh")
        return (f"eval results ({results['predict_file']}, {results['num_examples']} questions): "
                + " ".join(f"{k}={results[k]:.2f}" for k in keys if k in results))

    def predict(self, model, context):
        """`predictions.json`, `nbest_predictions.json` and (v2.0) `null_odds.json` (written by `evaluate` when
        the run evaluates)."""
        if self.predictions_of is not None and not context.config.do_eval:
            self._predict_and_score(model, context)
