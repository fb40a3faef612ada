"""Does the SQuAD export answer long contexts as `tasks.run_squad --do_predict` does? Counts on real dev data.

Runs `python -m tasks.run_squad --do_train=false --do_predict` on `--predict_file` with a run_squad model_dir (its
own doc stride, query and answer lengths), exports the model_dir (`export.saved_model`), sends every question whose
context needs more than one doc-stride window to the export's `serving_default` (in batches of `--batch_size`,
short and long contexts mixed as they come), and counts the answers equal text for text. Also times the export per
window and on a 2,000-word context.

    python -m benchmarks.squad_export_windows --model_dir=out/squad128 --out=/tmp/squad_windows
    python -m benchmarks.squad_export_windows --model_dir=out/squad128 --out=/tmp/squad_windows --n_best_size=128

`--n_best_size` is run_squad's (default 20: the n-best list reads the 20 best starts and ends of each window);
the export reads every position, so an answer can differ where the best valid span is outside the 20 best of a
window; `--n_best_size` >= `max_seq_length` reads every position on both sides. Prints the counts and writes
`results.json` (with the differing questions) to `--out`; deletes its export and predictions afterwards.
"""

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import time

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

SHARED_DATA = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data"


def _python_path_predictions(model_dir, predict_file, n_best_size, work):
    """`tasks.run_squad --do_predict`'s predictions.json (qas_id -> text), run as a user runs it."""
    info = json.loads((pathlib.Path(model_dir) / "task.json").read_text(encoding="utf-8"))
    settings = [f"--{name}={info[name]}" for name in ("max_seq_length", "doc_stride", "max_query_length",
                                                      "max_answer_length")]  # the run's, not the flags' defaults
    if info.get("version_2_with_negative"):
        settings += ["--version_2_with_negative", f"--null_score_diff_threshold={info['null_score_diff_threshold']}"]
    command = [sys.executable, "-m", "tasks.run_squad", f"--model_dir={model_dir}", "--do_train=false",
               "--do_predict", f"--predict_file={predict_file}", f"--n_best_size={n_best_size}", *settings,
               f"--output_dir={work / 'predictions'}"]
    subprocess.run(command, check=True)
    found = sorted((work / "predictions").rglob("predictions.json"))
    if not found:
        raise FileNotFoundError(f"tasks.run_squad wrote no predictions.json under {work / 'predictions'}")
    return json.loads(found[0].read_text(encoding="utf-8"))


def _window_counts(model_dir, examples):
    """Each example's doc-stride windows, as `build_features` cuts them with the model_dir's settings."""
    from official_bert.data.squad import build_features
    from official_bert.model_dir import load_model_dir
    from official_bert.text.preprocessing import tokenizer_from_files

    loaded = load_model_dir(str(model_dir))
    info = loaded.info
    tokenizer = tokenizer_from_files(loaded.vocab_file, loaded.lower_case)
    features, _ = build_features(examples, tokenizer, loaded.max_seq_length, info["doc_stride"],
                                 info["max_query_length"], layout=loaded.config.packing_layout)
    return np.bincount(features.example_index, minlength=len(examples))


def _export_answers(version_dir, examples, batch_size):
    """serving_default's answer_text of each example, in batches; and the seconds per window."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401

    serve = tf.saved_model.load(version_dir).signatures["serving_default"]
    serve(question=tf.constant(["Who?"]), context=tf.constant(["Nobody."]))  # first call: graph set-up
    answers, windows, start = [], 0, time.perf_counter()
    for i in range(0, len(examples), batch_size):
        batch = examples[i:i + batch_size]
        out = serve(question=tf.constant([e.question for e in batch]), context=tf.constant([e.context for e in batch]))
        answers += [text.decode("utf-8") for text in out["answer_text"].numpy()]
        windows += int(out["num_windows"].numpy().sum())
    return answers, (time.perf_counter() - start) / max(windows, 1), serve


def _long_context_latency(serve, examples, words=2000, repeats=3):
    """Median seconds of one question on a context of `words` words (dev paragraphs joined)."""
    import tensorflow as tf

    text, i = [], 0
    while len(text) < words:
        text += examples[i].context.split()
        i += 1
    context = tf.constant([" ".join(text[:words])])
    question = tf.constant([examples[0].question])
    out = serve(question=question, context=context)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        serve(question=question, context=context)
        times.append(time.perf_counter() - start)
    return float(np.median(times)), int(out["num_windows"].numpy()[0])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model_dir", required=True, help="A tasks.run_squad model_dir.")
    parser.add_argument("--predict_file", default=str(SHARED_DATA / "squad" / "v1.1" / "dev-v1.1.json"))
    parser.add_argument("--out", required=True, help="Where results.json goes (and the scratch export meanwhile).")
    parser.add_argument("--n_best_size", type=int, default=20, help="tasks.run_squad's --n_best_size.")
    parser.add_argument("--batch_size", type=int, default=32, help="Questions a request to the export.")
    parser.add_argument("--limit", type=int, default=None, help="Only the first N questions.")
    args = parser.parse_args()

    from export.saved_model import export
    from official_bert.data.squad_examples import read_squad_json

    out = pathlib.Path(args.out)
    work = out / "scratch"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    try:
        predict_file = args.predict_file
        examples = read_squad_json(predict_file)
        if args.limit:
            examples = examples[:args.limit]
            subset = json.loads(pathlib.Path(predict_file).read_text(encoding="utf-8"))
            keep = {e.qas_id for e in examples}
            for article in subset["data"]:
                for paragraph in article["paragraphs"]:
                    paragraph["qas"] = [qa for qa in paragraph["qas"] if qa["id"] in keep]
            predict_file = str(work / "subset.json")
            pathlib.Path(predict_file).write_text(json.dumps(subset), encoding="utf-8")
        reference = _python_path_predictions(args.model_dir, predict_file, args.n_best_size, work)
        windows = _window_counts(args.model_dir, examples)
        version_dir = export(args.model_dir, str(work / "export"))
        answers, seconds_per_window, serve = _export_answers(version_dir, examples, args.batch_size)
        latency, long_windows = _long_context_latency(serve, examples)
    finally:  # the export and the predictions: a benchmark deletes what it wrote
        shutil.rmtree(work, ignore_errors=True)
    long = np.flatnonzero(windows > 1)
    differ = [{"qas_id": examples[i].qas_id, "windows": int(windows[i]), "run_squad": reference[examples[i].qas_id],
               "export": answers[i]} for i in long if answers[i] != reference[examples[i].qas_id]]
    all_differ = sum(answers[i] != reference[e.qas_id] for i, e in enumerate(examples))
    results = {"model_dir": str(args.model_dir), "predict_file": args.predict_file, "n_best_size": args.n_best_size,
               "questions": len(examples), "longer_than_one_window": int(len(long)),
               "equal_on_those": int(len(long) - len(differ)), "differ_in_all": int(all_differ),
               "max_windows_of_a_question": int(windows.max()), "ms_per_window": 1000 * seconds_per_window,
               "ms_for_2000_words": 1000 * latency, "windows_of_2000_words": long_windows, "differing": differ[:50]}
    (out / "results.json").write_text(json.dumps(results, indent=2), encoding="utf-8")
    print(f"{results['equal_on_those']} of {results['longer_than_one_window']} questions whose context needs more "
          f"than one window get run_squad --do_predict's answer (n_best_size={args.n_best_size}); "
          f"{all_differ} differ over all {len(examples)} questions")
    print(f"export: {results['ms_per_window']:.1f} ms a window in batches of {args.batch_size}; a 2,000-word context "
          f"({long_windows} windows): {results['ms_for_2000_words']:.0f} ms")


if __name__ == "__main__":
    main()
