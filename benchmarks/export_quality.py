"""What export and quantization cost a fine-tuned classifier: dev accuracy, file size and batch-1 latency.

Exports a `tasks.run_classifier` model_dir (e.g. SST-2) with `export.saved_model` (float32, and a bfloat16
SavedModel: `--precision=bfloat16`), converts the float32 one with `export.tflite` at every `--quantize` setting,
and runs the task's dev TSV through each: the SavedModels' `serving_default` (TF, CPU) and each .tflite in
LiteRT with tf-text's kernels, all from raw text. Prints
accuracy (and the change from the float32 SavedModel in points), size on disk, and batch-1 latency p50/p99 over
`--latency_texts` dev sentences (after a warm-up), plus how often each TFLite model's label agrees with
the float32 SavedModel's.

    python -m benchmarks.export_quality --model_dir=out/sst2 --dev_tsv=../shared/data/glue/SST-2/dev.tsv
    python -m benchmarks.export_quality --model_dir=out/tiny --dev_tsv=... --limit=64 --latency_texts=16  # smoke
"""

import argparse
import os
import tempfile

import numpy as np

from benchmarks.perf.timing import per_call_times, size_on_disk

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def _latencies(call, texts, warmup=5):
    """Batch-1 p50 and p99 milliseconds of `call` over `texts`."""
    times = per_call_times(call, texts, warmup)
    return 1000 * np.percentile(times, 50), 1000 * np.percentile(times, 99)


def _predict_in_batches(call, columns, batch_size):
    labels = []
    for start in range(0, len(columns[0]), batch_size):
        labels.append(call([np.array(c[start:start + batch_size], dtype=object) for c in columns]))
    return np.concatenate(labels)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model_dir", required=True, help="A tasks.run_classifier model_dir.")
    parser.add_argument("--dev_tsv", required=True, help="The task's GLUE dev TSV (task name from task.json).")
    parser.add_argument("--work_dir", default=None, help="Where the export and .tflite files go (default: temp).")
    parser.add_argument("--limit", type=int, default=None, help="Only the first N dev examples.")
    parser.add_argument("--latency_texts", type=int, default=200, help="Batch-1 requests timed per model.")
    parser.add_argument("--batch_size", type=int, default=32, help="Batch size of the accuracy runs.")
    args = parser.parse_args()

    import tensorflow as tf
    import tensorflow_text  # noqa: F401

    from export import tflite
    from export.saved_model import export
    from official_bert.data.glue import read_glue_tsv

    from official_bert.model_dir import read_task_info

    task = read_task_info(args.model_dir)
    examples = read_glue_tsv(task["task"], args.dev_tsv, "dev")
    columns = [list(examples.text_a)] + ([list(examples.text_b)] if examples.text_b is not None else [])
    labels = np.asarray(examples.labels)
    if args.limit:
        columns, labels = [c[:args.limit] for c in columns], labels[:args.limit]
    names = ["text", "text_b"][:len(columns)]
    timed = [[c[i] for c in columns] for i in range(min(args.latency_texts, len(labels)))]

    work_dir = args.work_dir or tempfile.mkdtemp(prefix="export_quality_")
    rows = []
    for precision in ("float32", "bfloat16"):  # float32 first: the reference, and the one TFLite converts
        precision_dir = export(args.model_dir, os.path.join(work_dir, f"export_{precision}"), precision=precision)
        saved = tf.saved_model.load(precision_dir).signatures["serving_default"]

        def saved_labels(batch, saved=saved):
            return saved(**{n: tf.constant(c) for n, c in zip(names, batch)})["label_id"].numpy()

        predicted = _predict_in_batches(saved_labels, columns, args.batch_size)
        if precision == "float32":
            reference, version_dir = predicted, precision_dir
        rows.append((f"SavedModel {precision}", np.mean(predicted == labels), size_on_disk(precision_dir),
                     np.mean(predicted == reference),
                     _latencies(lambda t, f=saved_labels: f([np.array([x], dtype=object) for x in t]), timed)))
    for quantize in tflite.QUANTIZATIONS:
        path = os.path.join(work_dir, f"model_{quantize}.tflite")
        with open(path, "wb") as f:
            f.write(tflite.convert(version_dir, "serving_default", quantize))
        runner = tflite.interpreter(model_path=path).get_signature_runner("serving_default")

        def lite_labels(batch, runner=runner):
            return runner(**dict(zip(names, batch)))["label_id"]

        predicted = _predict_in_batches(lite_labels, columns, args.batch_size)
        rows.append((f"TFLite {quantize}", np.mean(predicted == labels), size_on_disk(path),
                     np.mean(predicted == reference),
                     _latencies(lambda t: lite_labels([np.array([x], dtype=object) for x in t]), timed)))

    print(f"{task['task']} dev, {len(labels)} examples, model_dir {args.model_dir}, seq {task['max_seq_length']}")
    print(f"{'model':<20} {'accuracy':>9} {'vs SM (pt)':>10} {'agree':>7} {'size MiB':>9} {'p50 ms':>8} {'p99 ms':>8}")
    for name, accuracy, size, agree, (p50, p99) in rows:
        delta = 100 * (accuracy - rows[0][1])
        print(f"{name:<20} {accuracy:>9.4f} {delta:>+10.2f} {agree:>7.4f} {size / 2**20:>9.2f} {p50:>8.2f} {p99:>8.2f}")
    print(f"files in {work_dir}")


if __name__ == "__main__":
    main()
