"""Fine-tunes and evaluates BERT for named-entity recognition on CoNLL-format data (CoNLL-2003).

    python -m tasks.run_ner --data_dir=../shared/data/conll2003/hf-iob2 \
        --init_checkpoint=../shared/data/all-MiniLM-L6-v2 --model_dir=out/ner
    python -m tasks.run_ner --data_dir=../shared/data/conll2003/original-iob1 --tag_scheme=iob1 ...

The label set is read from the training file ("O" first, then sorted; IOB1 converted to IOB2) and saved in
`task.json`. Each word's first word piece carries its label; sentences longer than --max_seq_length are
cut into windows of whole words and put back together (see `official_bert.tasks.tagging`).

Writes to --model_dir: `bert_config.json`, `vocab.txt`, `task.json` (label names, sequence length, casing),
`checkpoints/` (resumed automatically), `logs/`, `model.weights.h5`, `encoder/` (Hugging Face directory),
`train_results.json`, `eval_results.json` (entity precision/recall/F1, conlleval counting, and per type),
and with --do_predict `predictions/<split>.txt` (word, gold tag, predicted tag per line, conlleval's input)
and, with --predict_text_file, `predictions/<name>.jsonl` (entities with character spans per input line).
Tagging only a text file with a trained model_dir needs no --data_dir:

    python -m tasks.run_ner --model_dir=out/ner --do_train=false --do_eval=false --do_predict \
        --predict_text_file=texts.txt
"""

from absl import flags

from tasks import common

FLAGS = flags.FLAGS
flags.DEFINE_string("data_dir", None, "Directory with the CoNLL files: train.txt/valid.txt/test.txt or "
                    "eng.train/eng.testa/eng.testb. Not needed to tag only --predict_text_file with a trained "
                    "--model_dir (--do_train=false --do_eval=false --do_predict).")
flags.DEFINE_enum("tag_scheme", "iob2", ["iob1", "iob2"], "Tagging of the files; IOB1 is converted to IOB2.")
flags.DEFINE_enum("eval_split", "test", ["valid", "test"], "Split evaluated (and predicted with --do_predict).")
flags.DEFINE_string("predict_text_file", None, "With --do_predict: a UTF-8 file of raw texts, one per line, "
                    "whose entities go to predictions/<name>.jsonl.")
common.define_run_flags()


def main(argv):
    from official_bert.cli import check_command_line
    from official_bert.runner import run
    from official_bert.tasks.tagging import TaggingTask

    check_command_line(argv)
    run(TaggingTask(FLAGS.data_dir, FLAGS.tag_scheme, FLAGS.eval_split, FLAGS.predict_text_file), common.run_config())


if __name__ == "__main__":
    from official_bert.cli import run_main  # importing official_bert quiets TensorFlow's native start-up lines

    run_main(main)
