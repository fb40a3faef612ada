"""Batch-1 latency of a time-series classifier, one side per process (`benchmarks.time_series` runs each):

    python -m benchmarks.time_series_latency --side=saved_model --path=out/export/motions/1 --out=saved_model.json
    python -m benchmarks.time_series_latency --side=tflite --path=out/motions.tflite --out=tflite.json
    python -m benchmarks.time_series_latency --side=torch --path=out/motions --out=torch.json

One sequence of the model's `max_time` steps, all real, answered `--repeats` times after `--warmup` calls; prints and
writes the median and the 90th percentile in milliseconds. `saved_model`: its `serving_default` through
`tf.saved_model.load`; `tflite`: LiteRT's signature runner; `torch`: the PyTorch peer (`TorchFeatureClassifier`)
of the model_dir's shape, eager, in eval mode under `torch.no_grad()`.
"""

import argparse
import json
import os
import time

import numpy as np


def _shape(model_dir):
    """(channels, max_time, classes, hidden, layers, heads) of one of our time-series model_dirs."""
    with open(os.path.join(model_dir, "task.json")) as f:
        info = json.load(f)
    with open(os.path.join(model_dir, "bert_config.json")) as f:
        config = json.load(f)
    return (info["input_channels"], info["max_seq_length"] - 1, len(info["label_names"]), config["hidden_size"],
            config["num_hidden_layers"], config["num_attention_heads"])


def _call(args, channels, max_time):
    """A function answering one (1, max_time, channels) sequence."""
    features = np.random.default_rng(0).normal(size=(1, max_time, channels)).astype(np.float32)
    lengths = np.array([max_time], np.int32)
    if args.side == "saved_model":
        import tensorflow as tf

        serve = tf.saved_model.load(args.path).signatures["serving_default"]
        inputs = {"features": tf.constant(features), "lengths": tf.constant(lengths)}
        return lambda: serve(**inputs)["label_id"].numpy()
    if args.side == "tflite":
        from export import tflite

        runner = tflite.interpreter(model_path=args.path).get_signature_runner("serving_default")
        return lambda: runner(features=features, lengths=lengths)["label_id"]
    import torch

    from benchmarks.time_series_torch import TorchFeatureClassifier

    _, _, classes, hidden, layers, heads = _shape(args.path)
    model = TorchFeatureClassifier(channels, hidden, layers, heads, 4 * hidden, max_time + 1, classes, True,
                                   1e-5).eval()
    x, mask = torch.tensor(features), torch.ones(1, max_time, dtype=torch.long)

    def call():
        with torch.no_grad():
            return model(x, mask).argmax(-1)

    return call


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--side", choices=("saved_model", "tflite", "torch"), required=True)
    parser.add_argument("--path", required=True, help="the export's version directory, the .tflite file, or (torch) "
                        "the model_dir whose shape the peer takes")
    parser.add_argument("--model_dir", help="the model_dir of the export (its shape); default: --path")
    parser.add_argument("--out", required=True)
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--threads", type=int, default=0, help="CPU threads (0: the library's default)")
    args = parser.parse_args()
    if args.threads:
        os.environ["TF_NUM_INTRAOP_THREADS"] = str(args.threads)  # (read when TensorFlow starts)
        if args.side == "torch":
            import torch

            torch.set_num_threads(args.threads)
    channels, max_time = _shape(args.model_dir or args.path)[:2]
    call = _call(args, channels, max_time)
    for _ in range(args.warmup):
        call()
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1000)
    result = {"side": args.side, "median_ms": float(np.median(times)), "p90_ms": float(np.percentile(times, 90))}
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2)
    print(result, flush=True)


if __name__ == "__main__":
    main()
