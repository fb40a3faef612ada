"""Fine-tunes and evaluates BERT for named-entity recognition on CoNLL-format data (CoNLL-2003).

    python -m tasks.run_ner --data_dir=../shared/data/conll2003/hf-iob2 \
        --init_checkpoint=../shared/data/all-MiniLM-L6-v2 --model_dir=out/ner
    python -m tasks.run_ner --data_dir=../shared/data/conll2003/original-iob1 --tag_scheme=iob1 ...

The label set is read from the training file ("O" first, then sorted; IOB1 converted to IOB2) and saved in
`task.json`. Each word's first word piece carries its label; sentences longer than --max_seq_length are
cut into windows of whole words and put back together (see `official_bert.data.tagging_dataset`).

Writes to --model_dir: `bert_config.json`, `vocab.txt`, `task.json` (label names, sequence length, casing),
`checkpoints/` (resumed automatically), `logs/`, `model.weights.h5`, `encoder/` (Hugging Face directory),
`train_results.json`, `eval_results.json` (entity precision/recall/F1, conlleval counting, and per type),
and with --do_predict `predictions/<split>.txt` (word, gold tag, predicted tag per line, conlleval's input)
and, with --predict_text_file, `predictions/<name>.jsonl` (entities with character spans per input line).
"""

import json
import logging
import os

from absl import app, flags

from tasks import common

FLAGS = flags.FLAGS
flags.DEFINE_string("data_dir", None, "Directory with the CoNLL files: train.txt/valid.txt/test.txt or "
                    "eng.train/eng.testa/eng.testb.")
flags.DEFINE_enum("tag_scheme", "iob2", ["iob1", "iob2"], "Tagging of the files; IOB1 is converted to IOB2.")
flags.DEFINE_enum("eval_split", "test", ["valid", "test"], "Split evaluated (and predicted with --do_predict).")
flags.DEFINE_string("predict_text_file", None, "With --do_predict: a UTF-8 file of raw texts, one per line, "
                    "whose entities go to predictions/<name>.jsonl.")
common.define_common_flags()


def read_split(split, label_set=None):
    from official_bert.data.conll import conll_file_path, read_conll

    return read_conll(conll_file_path(FLAGS.data_dir, split), FLAGS.tag_scheme, label_set=label_set)


def read_train_and_labels():
    """The training examples (None when there is no training file and --do_train=false) and the label set:
    from the training file, or without one from the model_dir's task.json."""
    from official_bert.data.conll import label_names

    try:
        train = read_split("train")
        return train, label_names(train.tags)
    except FileNotFoundError:
        task_path = os.path.join(FLAGS.model_dir, "task.json")
        if FLAGS.do_train or not os.path.isfile(task_path):
            raise
        with open(task_path, encoding="utf-8") as f:
            return None, json.load(f)["label_names"]


def build_model(num_labels, config):
    """The token classifier, its weights loaded from --init_checkpoint."""
    from official_bert import BertEncoder
    from official_bert.checkpoints import load_task_weights
    from official_bert.models.token_classifier import BertTokenClassifier

    model = BertTokenClassifier(BertEncoder(config), num_labels)
    head_loaded = load_task_weights(model.encoder, model.head_specs(),
                                    common.resolve_init_checkpoint(FLAGS.init_checkpoint), optional_pooler=True)
    logging.info("Loaded %s (head %s)", FLAGS.init_checkpoint, "loaded" if head_loaded else "freshly initialised")
    return model


def write_conll_predictions(path, examples, predicted):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for words, gold, tags in zip(examples.words, examples.tags, predicted):
            f.writelines(f"{w} {g} {p}\n" for w, g, p in zip(words, gold, tags))
            f.write("\n")
    logging.info("Wrote %d predicted sentences to %s", len(predicted), path)


def write_text_predictions(tagger, text_path):
    with open(text_path, encoding="utf-8") as f:
        texts = [line.rstrip("\r\n") for line in f]
    name = os.path.splitext(os.path.basename(text_path))[0]
    path = os.path.join(FLAGS.model_dir, "predictions", f"{name}.jsonl")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for text, entities in zip(texts, tagger(texts)):
            f.write(json.dumps({"text": text, "entities": entities}, ensure_ascii=False) + "\n")
    logging.info("Wrote entities of %d texts to %s", len(texts), path)


def main(_):
    import keras

    from official_bert import training
    from official_bert.data.tagging_dataset import build_windows, tagging_dataset, word_pieces
    from official_bert.metrics.tagging import entity_scores
    from official_bert.models.entity_tagger import EntityTagger
    from official_bert.models.token_classifier import token_classification_loss
    from official_bert.optimization import create_optimizer
    from official_bert.text import BertTokenizer

    for name in ("data_dir", "model_dir"):
        if not getattr(FLAGS, name):
            raise app.UsageError(f"--{name} is required")
    train, labels = read_train_and_labels()
    if FLAGS.do_eval or FLAGS.do_predict:  # read first: a tag outside the label set fails before training
        examples = read_split(FLAGS.eval_split, label_set=labels)
    config, vocab_file, lower_case = common.prepare_model_dir(
        FLAGS.model_dir, {"task": "ner", "label_names": labels, "num_labels": len(labels)})
    keras.utils.set_random_seed(FLAGS.seed)
    training.set_mixed_precision(FLAGS.mixed_precision)
    strategy = training.get_strategy(FLAGS.distribution_strategy, FLAGS.tpu)
    tokenizer = BertTokenizer(vocab_file=vocab_file, lower_case=lower_case)

    with strategy.scope():
        model = build_model(len(labels), config)
        if FLAGS.do_train:
            label_ids = {tag: i for i, tag in enumerate(labels)}
            windows = build_windows(word_pieces(tokenizer, train.words), FLAGS.max_seq_length,
                                    tokenizer.get_special_tokens_dict(),
                                    labels=[[label_ids[t] for t in tags] for tags in train.tags])
            total_steps, warmup_steps = common.train_steps(len(windows))
            logging.info("Training on %d sentences (%d windows): %d steps (%d warmup), batch %d", len(train),
                         len(windows), total_steps, warmup_steps, FLAGS.train_batch_size)
            optimizer = create_optimizer(FLAGS.learning_rate, total_steps, warmup_steps, FLAGS.optimizer,
                                         FLAGS.weight_decay, FLAGS.adam_epsilon)
        else:
            optimizer = "adam"  # unused: compile only to predict
        model.compile(optimizer=optimizer, loss=token_classification_loss(), jit_compile=common.jit_compile())

    if FLAGS.do_train:
        def make_dataset(skip_batches):
            dataset = tagging_dataset(windows, FLAGS.train_batch_size, is_training=True, seed=FLAGS.seed)
            return dataset.skip(skip_batches)

        common.fit_and_save(model, make_dataset, total_steps, vocab_file)
    else:
        common.load_trained_weights(model)

    tagger = EntityTagger(model, tokenizer, labels, FLAGS.max_seq_length, FLAGS.eval_batch_size)
    if FLAGS.do_eval or FLAGS.do_predict:
        predicted = tagger.tag_words(examples.words)
    if FLAGS.do_eval:
        results = {"split": FLAGS.eval_split, "num_sentences": len(examples),
                   **entity_scores(examples.tags, predicted)}
        training.write_json(os.path.join(FLAGS.model_dir, "eval_results.json"), results)
        print(f"eval results ({FLAGS.eval_split}): precision={results['precision']:.4f} "
              f"recall={results['recall']:.4f} f1={results['f1']:.4f}; "
              + ", ".join(f"{t} f1={s['f1']:.4f}" for t, s in results["per_type"].items()))
    if FLAGS.do_predict:
        write_conll_predictions(os.path.join(FLAGS.model_dir, "predictions", f"{FLAGS.eval_split}.txt"),
                                examples, predicted)
        if FLAGS.predict_text_file:
            write_text_predictions(tagger, FLAGS.predict_text_file)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    app.run(main)
