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

from absl import flags

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
common.define_run_flags(max_seq_length=384)


def main(argv):
    from official_bert.cli import check_command_line
    from official_bert.runner import run
    from official_bert.tasks.squad import RECORDED_SETTINGS, SquadTask

    check_command_line(argv)
    task = SquadTask(FLAGS.train_file, FLAGS.predict_file, FLAGS.tfds_name, FLAGS.tfds_data_dir,
                     FLAGS.version_2_with_negative, FLAGS.doc_stride, FLAGS.max_query_length, FLAGS.n_best_size,
                     FLAGS.max_answer_length, FLAGS.null_score_diff_threshold,
                     recorded_settings=[name for name in RECORDED_SETTINGS if not FLAGS[name].present])
    run(task, common.run_config())


if __name__ == "__main__":
    from official_bert.cli import run_main  # importing official_bert quiets TensorFlow's native start-up lines

    run_main(main)
