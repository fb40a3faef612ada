"""TaggingTask: named-entity recognition on CoNLL-format files (CoNLL-2003) for the runner."""

import json
import logging
import os

from official_bert import model_dir as model_dirs
from official_bert.tasks.base import TOKENIZER_KINDS, Task, check_training_examples, predictions_path
from official_bert.text_files import path_exists, read_lines

logger = logging.getLogger(__name__)


class TaggingTask(Task):
    """Token classification with IOB2 tags, scored by entity (conlleval's counting).

    The label set is read from the training file ("O" first, then sorted; IOB1 converted to IOB2), or without
    one (evaluation only) from the model_dir's task.json. Each word's first piece carries its label; sentences
    longer than the sequence length are cut into windows of whole words and put back together. BERT and
    DistilBERT tag WordPiece words in `[CLS] pieces [SEP]`; RoBERTa tags each word tokenized after a space in
    `<s> pieces </s>`, as transformers' `RobertaTokenizerFast(add_prefix_space=True)` with `is_split_into_words`;
    ALBERT tags SentencePiece words in `[CLS] pieces [SEP]`, as `AlbertTokenizerFast` with `is_split_into_words`.

    Args:
        data_dir: the CoNLL files (train.txt/valid.txt/test.txt, or eng.train/eng.testa/eng.testb); None to tag
            only predict_text_file with a trained model_dir (its task.json's labels).
        tag_scheme: "iob2", or "iob1" (converted to IOB2).
        eval_split: "test" or "valid": evaluated, and predicted with do_predict.
        predict_text_file: with do_predict, a UTF-8 file of raw texts (one per line) whose entities go to
            `predictions/<name>.jsonl`.
    """

    kind = model_dirs.TAGGING
    uses_pooler = False  # HF token-classification checkpoints have none
    tokenizer_kinds = TOKENIZER_KINDS  # every family's tokenizer gives offsets

    def __init__(self, data_dir, tag_scheme="iob2", eval_split="test", predict_text_file=None):
        self.data_dir = data_dir
        self.tag_scheme = tag_scheme
        self.eval_split = eval_split
        self.predict_text_file = predict_text_file
        self.train = self.examples = self.labels = None
        self._predicted = None  # tags of the eval split, once computed
        self._texts = None  # the lines of predict_text_file, once read

    @classmethod
    def for_teacher(cls, info, flags):
        return cls(flags.data_dir, flags.tag_scheme, flags.eval_split)

    def validate(self, config):
        """Without data_dir, only --predict_text_file is tagged (no training, evaluation or split predictions), with
        the labels of the model_dir's task.json."""
        if self.data_dir:
            return
        if config.do_train or config.do_eval or not self.predict_text_file:
            raise ValueError("--data_dir is required to train, evaluate or predict the eval split (tagging only "
                             "--predict_text_file with a trained --model_dir: --do_train=false --do_eval=false "
                             "--do_predict)")
        if not model_dirs.is_model_dir(config.model_dir):
            raise ValueError(f"--data_dir is required: --model_dir={config.model_dir} holds no trained run "
                             f"({model_dirs.TASK_FILE}) whose labels would tag --predict_text_file")

    def _read(self, split, label_set=None):
        from official_bert.data.conll import conll_file_path, read_conll

        return read_conll(conll_file_path(self.data_dir, split), self.tag_scheme, label_set=label_set)

    def read_data(self, config, bert_config):
        from official_bert.data.conll import label_names

        if not self.data_dir:  # tagging only predict_text_file (validate); another task's model_dir fails its check
            self.labels = model_dirs.read_task_info(config.model_dir).get("label_names")
        else:
            try:
                self.train = self._read("train")
                self.labels = label_names(self.train.tags)
            except FileNotFoundError:
                if config.do_train or not model_dirs.is_model_dir(config.model_dir):
                    raise
                self.labels = model_dirs.read_task_info(config.model_dir)["label_names"]
            if config.do_eval or config.do_predict:  # a tag outside the label set fails before training
                self.examples = self._read(self.eval_split, label_set=self.labels)
        if config.do_predict and self.predict_text_file:  # and so does a text file that is not UTF-8
            self._predict_texts()

    def _predict_texts(self):
        if self._texts is None:
            if not path_exists(self.predict_text_file):
                raise FileNotFoundError(f"--predict_text_file={self.predict_text_file}: no such file")
            self._texts = [line.rstrip("\r\n") for _, line in read_lines(self.predict_text_file)]
        return self._texts

    def labeled_eval_batches(self, loaded, num_examples, batch_size=32):
        """`(inputs, labels)` batches of the windows of the eval split's first `num_examples` sentences, for the
        `model_dir.LoadedModelDir` `loaded` (labels on each word's first piece, `IGNORE_LABEL` elsewhere)."""
        import tensorflow as tf

        from official_bert.text.preprocessing import tokenizer_from_files

        examples = self._read(self.eval_split, label_set=loaded.info["label_names"])
        windows = self._labeled_windows(tokenizer_from_files(loaded.vocab_file, loaded.lower_case),
                                        loaded.config.packing_layout, loaded.max_seq_length,
                                        examples.words[:num_examples], examples.tags[:num_examples],
                                        loaded.info["label_names"])
        return tf.data.Dataset.from_tensor_slices((windows.inputs, windows.labels)).batch(batch_size)

    @staticmethod
    def _labeled_windows(tokenizer, layout, seq_length, words, tags, labels):
        """`tagging_dataset.build_windows` of sentences `words` with their `tags` (label ids from `labels`)."""
        from official_bert.data.tagging_dataset import build_windows, word_pieces

        label_ids = {tag: i for i, tag in enumerate(labels)}
        return build_windows(word_pieces(tokenizer, words, layout=layout), seq_length,
                             tokenizer.get_special_tokens_dict(),
                             labels=[[label_ids[t] for t in sentence_tags] for sentence_tags in tags])

    def task_info(self):
        return {"task": "ner", "label_names": self.labels, "num_labels": len(self.labels)}

    def train_sources(self):
        from official_bert.data.conll import conll_file_path

        return [conll_file_path(self.data_dir, "train")]

    def training_settings(self):
        return {"tag_scheme": self.tag_scheme}

    def train_dataset(self, context):
        from official_bert.data.padding import training_length_multiple
        from official_bert.data.tagging_dataset import tagging_dataset

        config = context.config
        check_training_examples(self.train_sources()[0], len(self.train), len(self.train), what="sentences")
        windows = self._labeled_windows(context.tokenizer, context.bert_config.packing_layout, config.max_seq_length,
                                        self.train.words, self.train.tags, self.labels)
        logger.info("%d training sentences make %d windows", len(self.train), len(windows))

        def make_dataset(batch_size):
            return tagging_dataset(windows, batch_size, is_training=True, seed=config.seed,
                                   length_multiple=training_length_multiple(config.uses_xla()))

        return len(windows), make_dataset

    def _tagger(self, model, context):
        from official_bert.pipelines.entity_tagger import EntityTagger

        return EntityTagger(model, context.tokenizer, self.labels, context.config.max_seq_length,
                            context.config.eval_batch_size, layout=context.bert_config.packing_layout)

    def _predicted_tags(self, tagger):
        if self._predicted is None:
            self._predicted = tagger.tag_words(self.examples.words)
        return self._predicted

    def evaluate(self, model, context):
        from official_bert.metrics.tagging import entity_scores

        predicted = self._predicted_tags(self._tagger(model, context))
        return {"split": self.eval_split, "num_sentences": len(self.examples),
                **entity_scores(self.examples.tags, predicted)}

    def describe_results(self, results):
        return (f"eval results ({results['split']}): precision={results['precision']:.4f} "
                f"recall={results['recall']:.4f} f1={results['f1']:.4f}; "
                + ", ".join(f"{t} f1={s['f1']:.4f}" for t, s in results["per_type"].items()))

    def predict(self, model, context):
        """`predictions/<split>.txt` (word, gold, predicted tag per line; with a data_dir) and, with a
        predict_text_file, `predictions/<name>.jsonl` (the entities of each line)."""
        tagger = self._tagger(model, context)
        if self.examples is not None:
            self._write_split_predictions(tagger, context.results_dir)
        if self.predict_text_file:
            self._write_text_predictions(tagger, context.results_dir)

    def _write_split_predictions(self, tagger, out_dir):
        path = predictions_path(out_dir, f"{self.eval_split}.txt")
        predicted = self._predicted_tags(tagger)
        with open(path, "w", encoding="utf-8") as f:
            for words, gold, tags in zip(self.examples.words, self.examples.tags, predicted):
                f.writelines(f"{w} {g} {p}\n" for w, g, p in zip(words, gold, tags))
                f.write("\n")
        logger.info("Wrote %d predicted sentences to %s", len(predicted), path)

    def _write_text_predictions(self, tagger, out_dir):
        texts = self._predict_texts()
        name = os.path.splitext(os.path.basename(self.predict_text_file))[0]
        path = predictions_path(out_dir, f"{name}.jsonl")
        with open(path, "w", encoding="utf-8") as f:
            for text, entities in zip(texts, tagger(texts)):
                f.write(json.dumps({"text": text, "entities": entities}, ensure_ascii=False) + "\n")
        logger.info("Wrote entities of %d texts to %s", len(texts), path)
