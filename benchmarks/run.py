"""The performance suite: ours against Hugging Face transformers (PyTorch) and keras-hub, one machine, one run.

    python -m benchmarks.run                                  # inference + train, MiniLM and BERT-Base, fp32 + bf16
    python -m benchmarks.run --suite=inference --shapes=minilm --precisions=fp32
    python -m benchmarks.run --suite=memory --shapes=base     # RSS of BERT-Base fine-tuning per epoch, every peer
    python -m benchmarks.run --suite=serving                  # raw text -> label: SavedModel, LiteRT vs HF pipeline

Every peer and precision runs in its own process (`benchmarks.perf.worker`), one after the other, on the
same synthetic full-length sequences (seq 128 by default). bf16: ours infers as a `--precision=bfloat16` export
serves (weights stored in bf16, LayerNorms and softmax in float32) and trains under mixed_bfloat16; keras-hub
runs mixed_bfloat16 (the same numerics); HF torch autocasts to bf16. Each figure is the median of --repeats timed runs
after 2 warm-up runs; the spread is (max - min) / median. Inference: one forward pass of the encoder
(sequence and pooled outputs fetched to host). Train: one optimizer step of sequence-pair classification
(AdamW, global-norm clipping). Serving: raw SST-2 dev sentences -> label through our exported SavedModel
(`serving_default`, in-graph WordPiece, at most 128 pieces, run at each request's longest text) against
transformers' text-classification `pipeline` (fast tokenizer, padding to the longest text), both
all-MiniLM-L6-v2 fine-tuned once a run on 4,000 SST-2 training sentences (`benchmarks/perf/serving_inputs.py`), in
fp32: batch-1 latency p50/p99 over --latency_texts requests and the throughput of batches of --train_batch_size;
LiteRT on --lite_threads threads. "ours/best" divides our rate by the fastest peer's. GFLOP/s counts the encoder's
matmul FLOPs (benchmarks/perf/shapes.py). "% peak" is against the nominal peak of the row's precision, "% GEMM"
against the GEMM ceiling measured at the start of the run: the speed of a large square matmul in fp32 or bf16
(benchmarks/perf/machine.py says how both are found). Results also go to --out as JSON.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

from benchmarks.perf import serving_inputs
from benchmarks.perf.shapes import encoder_forward_flops
from benchmarks.perf.timing import percentiles

PEER_ORDER = ("ours", "hf_torch", "keras_hub")
PEER_TITLES = {"ours": "ours", "hf_torch": "HF torch", "keras_hub": "keras-hub"}


def run_worker(peer, precision, suite, args, jit_compile=None, lite=None, serving_model=None):
    """Runs one peer's `benchmarks.perf.worker` in its own process; `jit_compile` ("true"/"false") overrides
    --jit_compile; `lite`: the serving suite's TFLite quantization of our export; `serving_model`: the serving suite's
    fine-tuned model. Returns its result dicts."""
    command = [sys.executable, "-m", "benchmarks.perf.worker", f"--peer={peer}", f"--precision={precision}",
               f"--suite={suite}", f"--shapes={args.shapes}", f"--seq_length={args.seq_length}",
               f"--jit_compile={jit_compile or args.jit_compile}",
               *([f"--lite={lite}", f"--lite_threads={args.lite_threads}"] if lite else [])]
    if suite == "inference":
        command += [f"--batch_sizes={args.batch_sizes}", f"--repeats={args.repeats}"]
    elif suite == "train":
        command += [f"--batch_sizes={args.train_batch_size}", f"--repeats={args.train_steps}"]
    elif suite == "serving":
        command += [f"--batch_sizes={args.train_batch_size}", f"--repeats={args.repeats}",
                    f"--latency_texts={args.latency_texts}", f"--serving_model={serving_model}"]
    else:
        command += [f"--batch_sizes={args.train_batch_size}", f"--repeats={args.train_steps}",
                    f"--epochs={args.epochs}"]
    print("running:", " ".join(command[2:]), file=sys.stderr, flush=True)
    process = subprocess.run(command, capture_output=True, text=True)
    if process.returncode != 0:
        print(process.stderr[-3000:], file=sys.stderr)
        raise RuntimeError(f"{peer} {precision} {suite} failed (exit {process.returncode})")
    return [json.loads(line[len("RESULT "):]) for line in process.stdout.splitlines() if line.startswith("RESULT ")]


def measure_machine():
    """Runs `benchmarks.perf.machine` in its own process; returns `(limits per precision, description)`, each
    precision's dict holding `nominal_gflops` and the measured GEMM ceiling `gflops`."""
    print("running: benchmarks.perf.machine", file=sys.stderr, flush=True)
    process = subprocess.run([sys.executable, "-m", "benchmarks.perf.machine"], capture_output=True, text=True)
    if process.returncode != 0:
        print(process.stderr[-3000:], file=sys.stderr)
        raise RuntimeError(f"benchmarks.perf.machine failed (exit {process.returncode})")
    lines = process.stdout.splitlines()
    limits = {r["precision"]: r for r in (json.loads(line[len("RESULT "):]) for line in lines
                                          if line.startswith("RESULT "))}
    return limits, "\n".join(line for line in lines if not line.startswith("RESULT "))


def _cell(result):
    if result is None:
        return f"{'-':>17s}"
    rate = result["batch_size"] / result["median_s"]
    spread = (result["max_s"] - result["min_s"]) / result["median_s"]
    return f"{rate:10.2f} ±{spread * 100:4.1f}%"


def print_speed_table(results, suite, seq_length, limits):
    multiplier = 1 if suite == "inference" else 3
    keys = sorted({(r["shape"], r["precision"], r["batch_size"]) for r in results if r["suite"] == suite},
                  key=lambda k: (k[0] != "minilm", k[1], k[2]))
    if not keys:
        return
    unit = "sequences/s" if suite == "inference" else "training examples/s"
    print(f"\n{suite} ({unit}, seq {seq_length}; median ± spread)")
    header = f"{'shape':8s}{'prec':6s}{'batch':>6s}" + "".join(f"{PEER_TITLES[p]:>18s}" for p in PEER_ORDER)
    print(header + f"{'ours/best':>11s}{'ours GFLOP/s':>14s}{'% peak':>8s}{'% GEMM':>8s}")
    for shape, precision, batch in keys:
        row = {r["peer"]: r for r in results if r["suite"] == suite and
               (r["shape"], r["precision"], r["batch_size"]) == (shape, precision, batch)}
        line = f"{shape:8s}{precision:6s}{batch:6d}" + "".join(_cell(row.get(p)) + " " for p in PEER_ORDER)
        ours = row.get("ours")
        peers = [batch / row[p]["median_s"] for p in PEER_ORDER[1:] if p in row]
        if ours:
            rate = batch / ours["median_s"]
            gflops = rate * multiplier * encoder_forward_flops(shape, seq_length) / 1e9
            ratio = f"{rate / max(peers):10.2f}x" if peers else f"{'-':>11s}"
            limit = limits[precision]
            line += (f"{ratio}{gflops:14.1f}{gflops / limit['nominal_gflops'] * 100:7.1f}%"
                     f"{gflops / limit['gflops'] * 100:7.1f}%")
        print(line)


SERVING_ROWS = (("ours", "ours SavedModel"), ("ours_jit", "ours --jit_compile"),
                ("ours_lite_none", "ours LiteRT float32"), ("ours_lite_dynamic_int8", "ours LiteRT dyn. int8"),
                ("ours_lite_full_int8", "ours LiteRT full int8"), ("hf_torch", "HF pipeline"))
LITE_QUANTIZATIONS = ("none", "dynamic_int8", "full_int8")  # export.tflite --quantize of the LiteRT rows


def print_serving(results):
    rows = {r["peer"] + ("_jit" if r.get("jit_compile") else "") + (f"_lite_{r['lite']}" if r.get("lite") else ""): r
            for r in results if r["suite"] == "serving"}
    if not rows:
        return
    first = next(iter(rows.values()))
    print(f"\nserving (raw text -> label, all-MiniLM-L6-v2 fine-tuned on SST-2, {first['num_texts']} SST-2 dev "
          f"sentences, fp32; batch 1: {len(first['latencies_s'])} requests; batch {first['batch_size']}: median ± "
          "spread of passes over all texts)")
    print(f"{'':26s}{'batch-1 p50 ms':>16s}{'batch-1 p99 ms':>16s}{'texts/s':>20s}")
    figures = {}
    for key, title in SERVING_ROWS:
        if key not in rows:
            continue
        r = rows[key]
        points = percentiles(r["latencies_s"])
        figures[key] = (points[50], points[99], r["num_texts"] / r["median_s"])
        spread = (r["max_s"] - r["min_s"]) / r["median_s"]
        print(f"{title:26s}{points[50] * 1000:16.2f}{points[99] * 1000:16.2f}"
              f"{figures[key][2]:12.1f} ±{spread * 100:4.1f}%")
    for key, title in SERVING_ROWS[:-1]:
        if key in figures and "hf_torch" in figures:
            ours, hf = figures[key], figures["hf_torch"]
            agree = sum(a == b for a, b in zip(rows[key]["labels"], rows["hf_torch"]["labels"]))
            same = ""
            if key != "ours" and "ours" in rows:  # against our float SavedModel
                saved = sum(a == b for a, b in zip(rows[key]["labels"], rows["ours"]["labels"]))
                same = f"; the SavedModel's on {saved}"
            print(f"{title.replace('ours', 'vs HF,', 1):26s}{hf[0] / ours[0]:15.2f}x{hf[1] / ours[1]:15.2f}x"
                  f"{ours[2] / hf[2]:19.2f}x   (speed-up; labels agree with HF on {agree}/{len(rows[key]['labels'])} "
                  f"texts{same})")


def print_memory(results):
    rows = [r for r in results if r["suite"] == "memory"]
    if rows:
        print(f"\nmemory: fine-tuning (sequence-pair classification), seq {rows[0]['seq_length']}; resident MiB")
        print(f"{'peer':10s} {'shape':6s} {'prec':5s} {'batch':>5s} {'after each epoch':>28s} {'peak':>8s} "
              f"{'peak / ours':>11s}")
    for r in rows:
        ours = [o for o in rows if o["peer"] == "ours" and all(o[k] == r[k] for k in ("shape", "precision",
                                                                                        "batch_size"))]
        ratio = f"{r['peak_rss_mib'] / ours[0]['peak_rss_mib']:.2f}x" if ours else ""
        epochs = ", ".join(f"{m:.0f}" for m in r["rss_after_epoch_mib"])
        print(f"{r['peer']:10s} {r['shape']:6s} {r['precision']:5s} {r['batch_size']:5d} {epochs:>28s} "
              f"{r['peak_rss_mib']:8.0f} {ratio:>11s}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--suite", default="inference,train", help="comma list of inference, train, memory, serving")
    parser.add_argument("--peers", default=",".join(PEER_ORDER))
    parser.add_argument("--shapes", default="minilm,base")
    parser.add_argument("--precisions", default="fp32,bf16")
    parser.add_argument("--batch_sizes", default="1,8,32", help="inference batch sizes")
    parser.add_argument("--train_batch_size", type=int, default=32)
    parser.add_argument("--seq_length", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=5, help="timed inference runs per case")
    parser.add_argument("--train_steps", type=int, default=4, help="timed training steps per case (memory: per epoch)")
    parser.add_argument("--epochs", type=int, default=3, help="memory suite epochs")
    parser.add_argument("--latency_texts", type=int, default=200, help="serving suite: single-text requests timed")
    parser.add_argument("--lite_threads", type=int, default=0,
                        help="serving suite: LiteRT's threads (0: as many as the process has cores, as TensorFlow and "
                             "PyTorch use; LiteRT's own default is one)")
    parser.add_argument("--jit_compile", choices=["auto", "true", "false"], default="auto",
                        help="ours: auto = the library default for this device")
    parser.add_argument("--out", default=None, help="write all results as JSON here")
    args = parser.parse_args()

    limits, limits_note = measure_machine()
    print(limits_note)
    results = []
    with tempfile.TemporaryDirectory(prefix="benchmarks_run_") as work_dir:  # the serving model
        for suite in args.suite.split(","):
            peers = args.peers.split(",")
            precisions = args.precisions.split(",")
            model = {}
            if suite == "serving":  # exports serve in float32; keras-hub has no raw-text SavedModel to compare
                peers, precisions = [p for p in peers if p in ("ours", "hf_torch")], ["fp32"]
                model["serving_model"] = os.path.join(work_dir, "serving_model")
                accuracy = serving_inputs.fine_tune(model["serving_model"])
                print(f"serving model: all-MiniLM-L6-v2 fine-tuned one epoch on {serving_inputs.TRAINING_TEXTS} SST-2 "
                      f"training sentences, SST-2 dev accuracy {accuracy:.4f}", flush=True)
            for precision in precisions:
                for peer in peers:
                    if suite == "serving" and peer == "ours":  # the plain export, --jit_compile, and its LiteRT forms
                        results += run_worker(peer, precision, suite, args, jit_compile="false", **model)
                        results += run_worker(peer, precision, suite, args, jit_compile="true", **model)
                        for quantize in LITE_QUANTIZATIONS:
                            results += run_worker(peer, precision, suite, args, jit_compile="false", lite=quantize,
                                                  **model)
                    else:
                        results += run_worker(peer, precision, suite, args, **model)
    for suite in ("inference", "train"):
        print_speed_table(results, suite, args.seq_length, limits)
    print_serving(results)
    print_memory(results)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump({"machine": limits, "machine_note": limits_note, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
