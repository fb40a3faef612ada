"""Compression of a fine-tuned classifier: one table per GLUE task with a row per model, measured in one run.

Rows: the teacher (all-MiniLM-L6-v2 fine-tuned with `tasks.run_classifier`); a 3-layer student cut from it
(layers 0, 2, 4) fine-tuned on the labels only (`tasks.distill --alpha=1`); the same student distilled
(`tasks.distill --cache_teacher`, alpha 0.5, T 2), each over several seeds (mean ± sample sd); the teacher's int8
SavedModel (`export.saved_model --precision=int8`); its dynamic-int8 TFLite (`export.tflite
--quantize=dynamic_int8`) and full-int8 TFLite (`--quantize=full_int8`, calibrated on training texts); the teacher
with half its attention heads pruned by dev importance, and with half its layers pruned the same way, each
fine-tuned distilled from it (`tasks.prune --prune_heads=0.5`, `--keep_layers=3`).
Columns: dev accuracy and F1, size on disk of the export, parameters, raw-text batch-1 p50 latency and batch-32
throughput (SavedModels through `serving_default` in TF, the .tflite in LiteRT), and ratios to the teacher.

    python -m benchmarks.compression --out=out/bench/compression   # SST-2 and MRPC, 3 seeds
    python -m benchmarks.compression --out=/tmp/smoke --tasks=MRPC --seeds=1 --num_train_steps=4 --limit=64 \
        --max_seq_length=64 --latency_texts=10 --calibration_examples=10

Resumable: every training step is a model_dir of its own (resumed by the runner, skipped once evaluated),
every measured row is kept in `<out>/rows.json`; running the same command again continues where it stopped.
Once a row is in rows.json its model_dir's checkpoints are deleted, and so are a student's or pruned model's
weights (its export stays; the teacher keeps its weights, which later rows read), unless `--keep_checkpoints`.
The speed columns are measured last, every row one after the other, once all models are trained; keep the
machine quiet then (`--measure_speed_again` times every row again, e.g. after a run shared the machine).
"""

import argparse
import json
import os
import subprocess
import sys

import numpy as np

from benchmarks.cleanup import add_keep_checkpoints_flag, remove_checkpoints
from benchmarks.perf.timing import per_call_times, size_on_disk
from benchmarks.resumable import check_same_flags, read_json, write_json

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data")


def _cli(module, *flags):
    """Runs `python -m module flags` (raises on failure, with its last error lines)."""
    result = subprocess.run([sys.executable, "-m", module, *flags], capture_output=True, text=True)
    if result.returncode:
        raise RuntimeError(f"{module} failed:\n{result.stderr[-3000:]}")


def _train(module, model_dir, *flags):
    """A training CLI into `model_dir`, unless it was evaluated already; returns its eval results."""
    results = os.path.join(model_dir, "eval_results.json")
    if not os.path.isfile(results):
        _cli(module, f"--model_dir={model_dir}", *flags)
    return read_json(results)


def _quality(call, columns, labels):
    """Dev accuracy and F1 of `call(list of text columns) -> label ids`, in batches of 32."""
    from official_bert.metrics.glue import glue_metrics

    predicted = np.concatenate([call([c[i:i + 32] for c in columns]) for i in range(0, len(labels), 32)])
    metrics = glue_metrics(("accuracy", "f1"), labels, predicted)
    return {"accuracy": float(metrics["accuracy"]), "f1": float(metrics["f1"])}


def _speed(call, columns, latency_texts):
    """Batch-1 p50 ms over the first `latency_texts` dev examples and batch-32 examples/s over up to 8 batches."""
    count = len(columns[0])
    single = per_call_times(call, [[c[i:i + 1] for c in columns] for i in range(min(latency_texts, count))])
    full = [[c[i:i + 32] for c in columns] for i in range(0, min(count, 32 * 8) - 31, 32)]
    throughput = 32 / np.median(per_call_times(call, full, warmup=1))
    return {"p50_ms": float(1000 * np.median(single)), "examples_per_s": float(throughput)}


def _saved_model_call(version_dir, num_columns):
    """`call(list of text columns) -> label ids` through a SavedModel's `serving_default` in TensorFlow."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401

    serve = tf.saved_model.load(version_dir).signatures["serving_default"]
    names = ["text", "text_b"][:num_columns]

    def call(batch):
        return serve(**{n: tf.constant(np.array(c, dtype=object)) for n, c in zip(names, batch)})["label_id"].numpy()

    return call


def _tflite_call(path, num_columns):
    """`call(list of text columns) -> label ids` through a .tflite's `serving_default` in LiteRT."""
    from export import tflite

    runner = tflite.interpreter(model_path=path).get_signature_runner("serving_default")
    names = ["text", "text_b"][:num_columns]

    def call(batch):
        return runner(**{n: np.array(c, dtype=object) for n, c in zip(names, batch)})["label_id"]

    return call


# How each row's export is served: its "format" in rows.json.
CALLERS = {"saved_model": _saved_model_call, "tflite": _tflite_call}


def _params(model_dir):
    from official_bert.model_dir import load_model_dir

    return int(load_model_dir(model_dir).model.count_params())


def run_task(task, args, rows):
    """Trains and exports every row of one task, with its dev accuracy, size and parameters, into `rows` (name ->
    values), saving as it goes; the speed columns come later (`measure_speed`)."""
    from export import tflite
    from export.saved_model import export

    work, data_dir = os.path.join(args.out, task), os.path.join(args.data, "glue", task)
    steps = [f"--num_train_steps={args.num_train_steps}"] if args.num_train_steps else []
    common = [f"--data_dir={data_dir}", f"--max_seq_length={args.max_seq_length}", "--checkpoint_steps=50", *steps]
    columns, labels = _dev_set(task, args)

    def row(name, model_dir, make_export, export_format="saved_model"):
        key = f"{task}/{name}"
        if key not in rows:
            export_path = make_export()
            rows[key] = {**_quality(CALLERS[export_format](export_path, len(columns)), columns, labels),
                         "size_mb": size_on_disk(export_path) / 2**20, "params": _params(model_dir),
                         "export": export_path, "format": export_format}
            write_json(os.path.join(args.out, "rows.json"), rows)
            print(key, json.dumps(rows[key]), flush=True)
        if not args.keep_checkpoints:  # the row is written; the teacher's weights are read by later rows
            name = os.path.relpath(model_dir, work)
            remove_checkpoints(work, model_dirs=(name,), weights=() if model_dir == teacher else (name,))

    def saved(model_dir, name, precision="float32"):
        target = os.path.join(work, "export", name)
        done = os.path.join(target, "1")
        return done if os.path.isdir(done) else export(model_dir, target, version=1, precision=precision)

    teacher = os.path.join(work, "teacher")
    _train("tasks.run_classifier", teacher, f"--task={task}", f"--init_checkpoint={args.teacher_checkpoint}",
           *common)
    row("teacher", teacher, lambda: saved(teacher, "teacher"))
    for seed in range(42, 42 + args.seeds):
        for name, alpha in (("labels_only", 1.0), ("distilled", 0.5)):
            student = os.path.join(work, f"{name}_seed{seed}")
            _train("tasks.distill", student, f"--teacher={teacher}", "--student_layers=0,2,4", f"--alpha={alpha}",
                   "--cache_teacher", f"--seed={seed}", *common)
            row(f"{name}_seed{seed}", student, lambda s=student, n=f"{name}_seed{seed}": saved(s, n))
    row("int8_saved_model", teacher, lambda: saved(teacher, "teacher_int8", "int8"))
    for quantize in ("dynamic_int8", "full_int8"):
        lite = os.path.join(work, f"teacher_{quantize}.tflite")
        if not os.path.isfile(lite):
            examples = (_calibration_examples(task, data_dir, args.calibration_examples)
                        if quantize == "full_int8" else None)
            with open(lite + ".tmp", "wb") as f:
                f.write(tflite.convert(saved(teacher, "teacher"), "serving_default", quantize, examples))
            os.replace(lite + ".tmp", lite)
        row(f"{quantize}_tflite", teacher, lambda path=lite: path, "tflite")
    pruned = os.path.join(work, "layers_pruned_50")
    _train("tasks.prune", pruned, f"--teacher={teacher}", "--keep_layers=3", *common)
    row("layers_pruned_50", pruned, lambda: saved(pruned, "layers_pruned_50"))
    heads = os.path.join(work, "heads_pruned_50")
    _train("tasks.prune", heads, f"--teacher={teacher}", "--prune_heads=0.5", *common)
    row("heads_pruned_50", heads, lambda: saved(heads, "heads_pruned_50"))


def _calibration_examples(task, data_dir, count):
    """The first `count` training examples of a GLUE task, tuples of its text columns (full_int8's calibration)."""
    from official_bert.data.glue import read_glue_tsv

    train = read_glue_tsv(task, os.path.join(data_dir, "train.tsv"), "train")
    return list(zip(*[train.text_a] + ([train.text_b] if train.text_b is not None else [])))[:count]


def _dev_set(task, args):
    """`(text columns, labels)` of the task's dev split (the first --limit examples)."""
    from official_bert.data.glue import read_glue_tsv

    dev = read_glue_tsv(task, os.path.join(args.data, "glue", task, "dev.tsv"), "dev")
    columns = [list(dev.text_a)] + ([list(dev.text_b)] if dev.text_b is not None else [])
    labels = np.asarray(dev.labels)
    if args.limit:
        columns, labels = [c[:args.limit] for c in columns], labels[:args.limit]
    return columns, labels


def measure_speed(task, args, rows, again=False):
    """Batch-1 p50 latency and batch-32 throughput of each of the task's rows (those not measured yet, or all with
    `again`), one after the other in this process, after every model is trained: one machine state for the
    whole column."""
    columns, _ = _dev_set(task, args)
    for key, values in rows.items():
        if key.startswith(task + "/") and (again or "p50_ms" not in values):
            values.update(_speed(CALLERS[values["format"]](values["export"], len(columns)), columns,
                                 args.latency_texts))
            write_json(os.path.join(args.out, "rows.json"), rows)
            print(key, f"p50 {values['p50_ms']:.2f} ms, {values['examples_per_s']:.1f} examples/s at batch 32",
                  flush=True)


def print_table(rows, task):
    teacher = rows.get(f"{task}/teacher")
    if not teacher:
        return
    groups = {}
    for key, values in rows.items():
        if key.startswith(task + "/"):
            groups.setdefault(key.split("/")[1].split("_seed")[0], []).append(values)
    print(f"\n{task} dev ({teacher['accuracy']:.4f} teacher accuracy)")
    print(f"{'model':<20} {'accuracy':>15} {'f1':>15} {'% teacher':>9} {'size MiB':>9} {'params':>10} "
          f"{'p50 ms':>7} {'speedup':>7} {'ex/s b32':>9} {'smaller':>7}")
    for name, values in groups.items():
        def stat(field):
            v = np.array([x[field] for x in values])
            return f"{v.mean():.4f}" + (f"±{v.std(ddof=1):.4f}" if len(v) > 1 else "")  # mean ± sample sd

        fields = set.intersection(*(set(x) for x in values)) - {"export", "format"}
        mean = {f: float(np.mean([x[f] for x in values])) for f in fields}
        timed = "p50_ms" in mean and "p50_ms" in teacher
        speed = (f"{mean['p50_ms']:>7.2f} {teacher['p50_ms'] / mean['p50_ms']:>7.2f} {mean['examples_per_s']:>9.1f}"
                 if timed else f"{'-':>7} {'-':>7} {'-':>9}")
        print(f"{name + (f' (x{len(values)})' if len(values) > 1 else ''):<20} {stat('accuracy'):>15} {stat('f1'):>15} "
              f"{100 * mean['accuracy'] / teacher['accuracy']:>9.1f} {mean['size_mb']:>9.1f} {mean['params']:>10.0f} "
              f"{speed} {teacher['size_mb'] / mean['size_mb']:>7.2f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="Work directory (resumable).")
    parser.add_argument("--tasks", default="SST-2,MRPC", help="GLUE tasks.")
    parser.add_argument("--data", default=DATA, help="The shared data directory (glue/<task>/).")
    parser.add_argument("--teacher_checkpoint", default=os.path.join(DATA, "all-MiniLM-L6-v2"))
    parser.add_argument("--seeds", type=int, default=3, help="Student seeds (42, 43, ...); a resumed run may "
                        "raise it to add seeds.")
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--num_train_steps", type=int, default=None, help="Every training run's steps (default: "
                        "3 epochs).")
    parser.add_argument("--limit", type=int, default=None, help="Only the first N dev examples.")
    parser.add_argument("--latency_texts", type=int, default=100, help="Batch-1 requests timed per model.")
    parser.add_argument("--calibration_examples", type=int, default=200, help="Training texts full_int8 "
                        "calibrates on.")
    parser.add_argument("--measure_speed_again", action="store_true", help="Time every row again (e.g. on a quiet "
                        "machine), keeping the trained models and their accuracy.")
    parser.add_argument("--skip_speed", action="store_true", help="Train, export and score every row, and leave the "
                        "speed columns to a later run (e.g. with the machine quiet).")
    add_keep_checkpoints_flag(parser)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    # (a resumed run may add seeds: each seed's rows are trained on their own)
    check_same_flags(args.out, args, ignore=("out", "latency_texts", "measure_speed_again", "skip_speed", "seeds"))
    path = os.path.join(args.out, "rows.json")
    rows = read_json(path) if os.path.isfile(path) else {}
    for task in args.tasks.split(","):
        run_task(task, args, rows)
    for task in args.tasks.split(","):
        if not args.skip_speed:
            measure_speed(task, args, rows, again=args.measure_speed_again)
    for task in args.tasks.split(","):
        print_table(rows, task)


if __name__ == "__main__":
    main()
