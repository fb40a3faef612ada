"""Distils a fine-tuned model_dir (the teacher) into a smaller student of the same task.

    python -m tasks.distill --teacher=out/sst2 --student_layers=0,2,4 --data_dir=../shared/data/glue/SST-2 \
        --model_dir=out/sst2_student
    python -m tasks.distill --teacher=out/conll --student_layers=0,3 --data_dir=../shared/data/conll2003 \
        --model_dir=out/conll_student
    python -m tasks.distill --teacher=out/squad --student_config=student.json --train_file=train-v1.1.json \
        --predict_file=dev-v1.1.json --model_dir=out/squad_student

The teacher's task.json says the task (a GLUE task, CoNLL tagging or SQuAD), its casing and sequence length;
the student reads the teacher's vocab. The student is cut from the teacher (`--student_layers`: its embeddings,
those layers, pooler and head) or fresh from a `--student_config`, and trained on
`alpha * task loss + (1 - alpha) * T^2 * KL(teacher || student)` (+ `--hidden_weight` x hidden-state MSE,
+ `--attention_weight` x attention-score MSE between mapped layers, TinyBERT's). The teacher runs in every step,
or once over the first epoch with `--cache_teacher` (the logits losses only).
--model_dir gets a normal model_dir of the teacher's kind (resumable, evaluated like every run), which
`export.saved_model`, `export.tflite` and the task's own entry point (`--do_train=false`) take.
"""

import dataclasses

from absl import app, flags

from tasks import common

FLAGS = flags.FLAGS
REQUIRED_FLAGS = ("teacher", "model_dir")  # (tasks.prune's too)
flags.DEFINE_string("teacher", None, "The fine-tuned model_dir to distil (classification, tagging or SQuAD).")
flags.DEFINE_string("student_layers", None, "Teacher layers the student keeps, e.g. 0,2,4 (DistilBERT: every "
                    "other one).")
flags.DEFINE_string("student_config", None, "Instead of --student_layers: bert_config.json of a fresh student "
                    "(the teacher's vocab_size; any depth and width).")
flags.DEFINE_float("alpha", 0.5, "Weight of the task loss; 1 - alpha weighs the soft-target KL.")
flags.DEFINE_float("temperature", 2.0, "Softmax temperature T of the soft targets (the KL is scaled by T^2).")
flags.DEFINE_float("hidden_weight", 0.0, "Weight of the MSE between the student's and mapped teacher layers' hidden "
                   "states (through a learned projection when the widths differ); 0: off.")
flags.DEFINE_float("attention_weight", 0.0, "Weight of the MSE between the student's and mapped teacher layers' "
                   "attention scores before the softmax (TinyBERT; the same number of heads on both sides); 0: off.")
flags.DEFINE_bool("cache_teacher", False, "Run the teacher once over the first epoch and train on its stored logits "
                  "(faster over several epochs; not with --hidden_weight or --attention_weight).")
flags.DEFINE_string("data_dir", None, "Classification: the GLUE task's TSV directory (default: tensorflow-datasets). "
                    "Tagging: the CoNLL directory.")
flags.DEFINE_enum("tag_scheme", "iob2", ["iob1", "iob2"], "Tagging: the CoNLL files' scheme.")
flags.DEFINE_enum("eval_split", "test", ["valid", "test"], "Tagging: the split evaluated.")
flags.DEFINE_string("train_file", None, "SQuAD: the JSON file to train on.")
flags.DEFINE_string("predict_file", None, "SQuAD: the JSON file to evaluate.")
flags.DEFINE_integer("doc_stride", 128, "SQuAD: step between a context's windows.")
flags.DEFINE_integer("max_query_length", 64, "SQuAD: question word pieces kept.")
common.define_run_flags(skip=("init_checkpoint", "vocab_file", "do_lower_case"), max_seq_length=None,
                        helps={"max_seq_length": "Packed sequence length; default: the teacher's."})


def teacher_task(info):
    """The task object of the teacher's task.json `info` (its kind's Task class, `Task.for_teacher`), with this
    command's data flags."""
    from official_bert.task_kinds import resolve, task_kind

    task = resolve(task_kind(info["kind"]).task_class).for_teacher(info, FLAGS)
    if task is None:
        raise app.UsageError(f"--teacher={FLAGS.teacher} is a {info['kind']} model_dir; distillation takes "
                             "classification, tagging and SQuAD model_dirs")
    return task


def check_command_line(argv):
    """The usage errors of this entry point and `tasks.prune`: stray arguments, no --teacher or --model_dir."""
    from official_bert.cli import check_command_line as check_common

    check_common(argv, required=REQUIRED_FLAGS)


def student_run_config(teacher_seq_length):
    """The run flags, starting from the teacher, at its sequence length unless --max_seq_length says otherwise."""
    return dataclasses.replace(common.run_config(), init_checkpoint=FLAGS.teacher,
                               max_seq_length=FLAGS.max_seq_length or int(teacher_seq_length))


def main(argv):
    from official_bert import model_dir as model_dirs
    from official_bert.runner import run
    from official_bert.tasks.distillation import DistillationTask

    check_command_line(argv)
    info = model_dirs.read_task_info(FLAGS.teacher)
    task = DistillationTask(teacher_task(info), FLAGS.teacher, student_layers=FLAGS.student_layers,
                            student_config=FLAGS.student_config, alpha=FLAGS.alpha, temperature=FLAGS.temperature,
                            hidden_weight=FLAGS.hidden_weight, attention_weight=FLAGS.attention_weight,
                            cache_teacher=FLAGS.cache_teacher)
    run(task, student_run_config(info["max_seq_length"]))


if __name__ == "__main__":
    from official_bert.cli import run_main  # importing official_bert quiets TensorFlow's native start-up lines

    run_main(main, required=REQUIRED_FLAGS)
