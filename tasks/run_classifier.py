"""Fine-tunes and evaluates BERT on a GLUE task.

    python -m tasks.run_classifier   # no flags: the embedded demo (MiniLM on a small sentiment set)
    python -m tasks.run_classifier --task=MNLI   # all-MiniLM-L6-v2 on GLUE from tensorflow-datasets, out/mnli
    python -m tasks.run_classifier --task=MRPC --data_dir=../shared/data/glue/MRPC \
        --init_checkpoint=../shared/data/all-MiniLM-L6-v2 --model_dir=out/mrpc

Writes to --model_dir: `bert_config.json`, `vocab.txt`, `task.json` (label names, sequence length, casing),
`checkpoints/` (resumed automatically), `logs/` (TensorBoard), `model.weights.h5`, `encoder/` (the
fine-tuned encoder as a Hugging Face directory), `eval_results.json`, and with --do_predict
`predictions/<TASK>.tsv` in GLUE's submission format.
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
common.define_run_flags(helps={"init_checkpoint": "Hugging Face or Google BERT directory, or a model_dir of ours; "
                                           "default: the demo's all-MiniLM-L6-v2."})


def apply_defaults():
    """The bare command is the demo; `--task` alone fine-tunes the demo's checkpoint into out/<task>."""
    if FLAGS.task is None:
        given = common.given_run_flags() + [name for name in ("data_dir", "tfds_data_dir", "skip_bad_rows")
                                            if FLAGS[name].present]
        if given:
            raise app.UsageError(f"--task is required (given: --{', --'.join(sorted(given))}); the demo runs only "
                                 "with no flags at all")
        demo.apply_demo_defaults(FLAGS)
    if not FLAGS.init_checkpoint:
        FLAGS.init_checkpoint = demo.minilm_checkpoint()
    if not FLAGS.model_dir:
        FLAGS.model_dir = os.path.join("out", FLAGS.task.lower().replace("-", ""))


def main(argv):
    from official_bert.cli import check_command_line
    from official_bert.runner import run
    from official_bert.tasks.classification import ClassificationTask

    check_command_line(argv)
    apply_defaults()
    task = ClassificationTask(FLAGS.task, data_dir=FLAGS.data_dir, tfds_data_dir=FLAGS.tfds_data_dir, download=True,
                              skip_bad_rows=FLAGS.skip_bad_rows)
    run(task, common.run_config())


if __name__ == "__main__":
    from official_bert.cli import run_main  # importing official_bert quiets TensorFlow's native start-up lines

    run_main(main)
