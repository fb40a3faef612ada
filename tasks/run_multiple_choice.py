"""Fine-tunes and evaluates BERT on multiple choice (SWAG and the like), the BERT paper's SWAG recipe by default.

    python -m tasks.run_multiple_choice --train_file=swag/train.csv --eval_file=swag/val.csv \
        --init_checkpoint=../shared/data/all-MiniLM-L6-v2 --model_dir=out/swag
    python -m tasks.run_multiple_choice --model_dir=out/swag --do_train=false --do_eval=false --do_predict \
        --predict_file=swag/test.csv --output_dir=out/swag_test

Each (context, choice) pair is packed `[CLS] context [SEP] choice [SEP]` and scored by `BertMultipleChoice`
(dropout + dense(1) on the pooled output); a question's scores are its logits. Files: SWAG's CSV (the context is
`sent1`, choice i is `sent2 + " " + ending_i`, as transformers' `run_swag.py`; `test.csv` has no label), the same
rows as JSON lines, or generic JSON lines `{"context", "question", "choices": [...], "label"}` with any number of
choices, the context left out or empty for questions without one (CommonsenseQA: the question is then the first
segment; see `official_bert.data.multiple_choice`). Without files, --tfds_name=hellaswag reads tensorflow-datasets
(which has no SWAG builder). Defaults are the paper's SWAG recipe: 3 epochs, learning rate 2e-5, batch 16,
sequence length 128.

Writes to --model_dir: `bert_config.json`, `vocab.txt`, `task.json`, `checkpoints/` (resumed automatically),
`logs/`, `model.weights.h5`, `encoder/` (Hugging Face directory), `train_results.json`, `eval_results.json`
(accuracy, questions, chance level) and with --do_predict `predictions/predictions.txt` (the predicted choice's
0-based index, one question per line, in the predict file's order).
"""

from absl import flags

from tasks import common

FLAGS = flags.FLAGS
flags.DEFINE_string("train_file", None, "Training questions: SWAG CSV (.csv), SWAG or generic JSON lines.")
flags.DEFINE_string("eval_file", None, "Evaluation questions (labeled), in any of the train file's formats.")
flags.DEFINE_string("predict_file", None, "With --do_predict: questions to predict (labels optional); default: "
                    "--eval_file.")
flags.DEFINE_string("tfds_name", None, "tensorflow-datasets set for the splits without a file: hellaswag (TFDS has "
                    "no SWAG builder); train, validation (evaluated) and test (predicted).")
flags.DEFINE_string("tfds_data_dir", None, "tensorflow-datasets data_dir, used with --tfds_name.")
common.define_run_flags(skip=("train_on_real_tokens",), train_batch_size=16, learning_rate=2e-5, num_train_epochs=3.0,
                        max_seq_length=128,
                        helps={"train_batch_size": "Global training batch size, in questions (each packs one "
                                                   "sequence per choice).",
                               "eval_batch_size": "Evaluation / prediction batch size, in questions."})


def main(argv):
    from official_bert.cli import check_command_line
    from official_bert.runner import run
    from official_bert.tasks.multiple_choice import MultipleChoiceTask

    check_command_line(argv)
    task = MultipleChoiceTask(FLAGS.train_file, FLAGS.eval_file, FLAGS.predict_file, FLAGS.tfds_name,
                              FLAGS.tfds_data_dir, download=True)
    run(task, common.run_config())


if __name__ == "__main__":
    from official_bert.cli import run_main  # importing official_bert quiets TensorFlow's native start-up lines

    run_main(main)
