"""Fine-tunes and evaluates BERT on a GLUE task, or on your own labelled texts (CSV, TSV or JSON lines).

    python -m tasks.run_classifier   # no flags: the embedded demo (MiniLM on a small sentiment set)
    python -m tasks.run_classifier --train_file=train.csv --eval_file=dev.csv --model_dir=out/mine
    python -m tasks.run_classifier --task=MNLI   # all-MiniLM-L6-v2 on GLUE from tensorflow-datasets, out/mnli
    python -m tasks.run_classifier --task=MRPC --data_dir=../shared/data/glue/MRPC \
        --init_checkpoint=../shared/data/all-MiniLM-L6-v2 --model_dir=out/mrpc

Writes to --model_dir: `bert_config.json`, `vocab.txt`, `task.json` (label names, sequence length, casing),
`checkpoints/` (resumed automatically), `logs/` (TensorBoard), `model.weights.h5`, `encoder/` (the
fine-tuned encoder as a Hugging Face directory), `eval_results.json`, and with --do_predict
`predictions/<TASK>.tsv` in GLUE's submission format (your own data: the --test_file written back with the
predictions' columns, `predictions/<its name>`; docs/your-data.md).
"""

import os

from absl import app, flags

from tasks import common, demo

FLAGS = flags.FLAGS
flags.DEFINE_string("task", None, "GLUE task: CoLA, SST-2, MRPC, STS-B, QQP, MNLI, QNLI, RTE, WNLI or AX; "
                    "unset (and no other flag): the embedded demo run.")
flags.DEFINE_string("data_dir", None, "Directory with the task's GLUE TSV files; default: tensorflow-datasets "
                    "glue/<task>, downloaded and prepared in --tfds_data_dir when it is not there yet.")
flags.DEFINE_string("tfds_data_dir", None, "tensorflow-datasets data_dir, used when --data_dir is not given.")
flags.DEFINE_boolean("skip_bad_rows", False, "Skip (and count) malformed TSV rows instead of failing.")
flags.DEFINE_string("train_file", None, "Your own training data instead of --task: a .csv, .tsv or .jsonl (JSON "
                    "lines) file of texts and labels; its labels are the classifier's.")
flags.DEFINE_string("eval_file", None, "Your own labelled evaluation file (same format and columns).")
flags.DEFINE_string("test_file", None, "Your own file to predict with --do_predict: written back to "
                    "<output_dir>/predictions/ with the predicted label and probability columns.")
flags.DEFINE_string("text_column", None, "The text column (JSON field) of your files; default: text, sentence or "
                    "sentence1.")
flags.DEFINE_string("text_pair_column", None, "The second text of a pair task; default: text_pair or sentence2 when "
                    "the training file has one.")
flags.DEFINE_string("label_column", None, "The label column of your files; default: label.")
flags.DEFINE_boolean("multi_label", False, "Each example has any number of labels: a list in JSON lines, "
                     "';'-separated in CSV/TSV (sigmoid outputs, binary cross-entropy).")
flags.DEFINE_boolean("tune_threshold", False, "With --multi_label: the decision threshold with the best micro F1 on "
                     "--eval_file, saved with the model (default 0.5).")
flags.DEFINE_boolean("regression", None, "Scores, not classes (--noregression: classes, even for numbers); "
                     "default: scores when every training label is a number and one has a fraction.")
common.define_run_flags(helps={"init_checkpoint": "Hugging Face or Google BERT directory, a model_dir of ours, or a "
                                           "Hugging Face hub id; default: the demo's all-MiniLM-L6-v2."})


OWN_DATA_FLAGS = ("train_file", "eval_file", "test_file", "text_column", "text_pair_column", "label_column",
                  "multi_label", "tune_threshold", "regression")
GLUE_FLAGS = ("data_dir", "tfds_data_dir", "skip_bad_rows")


def own_data():
    """Whether the command runs on the user's files (`--train_file`, ...) rather than a GLUE `--task`."""
    return any(FLAGS[name].present for name in OWN_DATA_FLAGS)


def apply_defaults():
    """The bare command is the demo; `--task` alone fine-tunes the demo's checkpoint into out/<task>; `--train_file`
    into out/<its name>."""
    if own_data():
        glue = [name for name in ("task",) + GLUE_FLAGS if FLAGS[name].present]
        if glue:
            raise app.UsageError(f"--{glue[0]} is for a GLUE task; your own files are read with --train_file, "
                                 "--eval_file and --test_file")
        if not (FLAGS.train_file or FLAGS.eval_file or FLAGS.test_file):
            raise app.UsageError("--train_file (or, with --do_train=false, --eval_file / --test_file) names your data")
        if not FLAGS.model_dir:
            if not FLAGS.train_file:
                raise app.UsageError("--model_dir is required: the trained classifier to evaluate or predict with")
            FLAGS.model_dir = os.path.join("out", os.path.splitext(os.path.basename(FLAGS.train_file))[0])
    elif FLAGS.task is None:
        given = common.given_run_flags() + [name for name in GLUE_FLAGS if FLAGS[name].present]
        if given:
            raise app.UsageError(f"--task is required (given: --{', --'.join(sorted(given))}), or --train_file for "
                                 "your own data; the demo runs only with no flags at all")
        demo.apply_demo_defaults(FLAGS)
    if not FLAGS.init_checkpoint:
        FLAGS.init_checkpoint = demo.minilm_checkpoint()
    if not FLAGS.model_dir:
        FLAGS.model_dir = os.path.join("out", FLAGS.task.lower().replace("-", ""))


def own_data_task():
    """The `FileClassificationTask` of the flags."""
    from official_bert.data.labeled_text_files import Columns
    from official_bert.tasks.file_classification import FileClassificationTask

    columns = Columns(FLAGS.text_column, FLAGS.text_pair_column, FLAGS.label_column)
    return FileClassificationTask(FLAGS.train_file, FLAGS.eval_file, FLAGS.test_file, columns, FLAGS.multi_label,
                                  FLAGS.regression, FLAGS.tune_threshold)


def main(argv):
    from official_bert.cli import check_command_line
    from official_bert.runner import run
    from official_bert.tasks.classification import ClassificationTask

    check_command_line(argv)
    apply_defaults()
    if own_data():
        task = own_data_task()
    else:
        task = ClassificationTask(FLAGS.task, data_dir=FLAGS.data_dir, tfds_data_dir=FLAGS.tfds_data_dir,
                                  download=True, skip_bad_rows=FLAGS.skip_bad_rows)
    run(task, common.run_config())


if __name__ == "__main__":
    from official_bert.cli import run_main  # importing official_bert quiets TensorFlow's native start-up lines

    run_main(main)
