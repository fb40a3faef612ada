"""One dense layer (matmul + bias) at serving sizes: TensorFlow against PyTorch, each in its own process.

    python -m benchmarks.perf.matmul_latency                     # MiniLM's three weight shapes, 1 / 25 / 128 rows
    python -m benchmarks.perf.matmul_latency --hidden=768 --intermediate=3072 --rows=1,32

A batch-1 request of a short text is a handful of such matmuls per layer on 1-50 rows. This says what each
framework's CPU kernel costs there, outside any model: TensorFlow's is `MatMul` + `BiasAdd` in a `tf.function`
on variables (the pair its oneDNN rewrite fuses, as in our exports), PyTorch's is `nn.Linear` under
`inference_mode`. Ten chained layers per call, so the call overhead is spread over ten; microseconds per layer,
the median of --repeats calls after 20 warm-up calls, fp32.
"""

import argparse
import json
import subprocess
import sys

from benchmarks.perf.timing import measure


def _median_us(call, repeats):
    return measure(call, repeats=repeats, warmup=20)["median_s"] * 1e6


def _time_tensorflow(shapes, rows, repeats, chain):
    import numpy as np
    import tensorflow as tf

    results = {}
    for inputs, outputs in shapes:
        kernel = tf.Variable(np.random.default_rng(0).normal(0, 0.02, (inputs, outputs)).astype("float32"))
        bias = tf.Variable(np.zeros(outputs, "float32"))

        @tf.function
        def layers(x):
            for _ in range(chain):  # (rows, inputs) -> (rows, outputs) -> back to (rows, inputs)
                y = tf.nn.bias_add(tf.matmul(x, kernel), bias)
                x = y[:, :inputs] if outputs >= inputs else tf.tile(y, [1, inputs // outputs])
            return x

        for n in rows:
            x = tf.constant(np.random.default_rng(1).normal(size=(n, inputs)).astype("float32"))
            results[f"{inputs}x{outputs}/{n}"] = _median_us(lambda: layers(x).numpy(), repeats) / chain
    return results


def _time_torch(shapes, rows, repeats, chain):
    import torch

    results = {}
    for inputs, outputs in shapes:
        linear = torch.nn.Linear(inputs, outputs)

        def layers(x):
            for _ in range(chain):
                y = linear(x)
                x = y[:, :inputs] if outputs >= inputs else y.repeat(1, inputs // outputs)
            return x

        for n in rows:
            x = torch.randn(n, inputs)
            with torch.inference_mode():
                results[f"{inputs}x{outputs}/{n}"] = _median_us(lambda: layers(x), repeats) / chain
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hidden", type=int, default=384)
    parser.add_argument("--intermediate", type=int, default=1536)
    parser.add_argument("--rows", default="1,25,128", help="rows of the activation (batch x sequence)")
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--framework", choices=["tensorflow", "torch"], default=None,
                        help="time one framework in this process (what the default run starts for each)")
    args = parser.parse_args(argv)
    shapes = [(args.hidden, args.hidden), (args.hidden, args.intermediate), (args.intermediate, args.hidden)]
    rows = [int(n) for n in args.rows.split(",")]
    chain = 10
    if args.framework:
        timer = _time_tensorflow if args.framework == "tensorflow" else _time_torch
        print("RESULT " + json.dumps(timer(shapes, rows, args.repeats, chain)), flush=True)
        return
    results = {}
    for framework in ("tensorflow", "torch"):
        command = [sys.executable, "-m", "benchmarks.perf.matmul_latency", f"--framework={framework}",
                   f"--hidden={args.hidden}", f"--intermediate={args.intermediate}", f"--rows={args.rows}",
                   f"--repeats={args.repeats}"]
        out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
        results[framework] = json.loads(next(line for line in out.splitlines() if line.startswith("RESULT "))[7:])
    print(f"one dense layer, fp32, microseconds (median of {args.repeats} calls of {chain} chained layers)")
    print(f"{'weights':>12} {'rows':>5} {'TensorFlow':>11} {'PyTorch':>9} {'TF / PyTorch':>13}")
    for inputs, outputs in shapes:
        for n in rows:
            key = f"{inputs}x{outputs}/{n}"
            ours, theirs = results["tensorflow"][key], results["torch"][key]
            print(f"{inputs:>5}x{outputs:<6} {n:>5} {ours:>11.1f} {theirs:>9.1f} {ours / theirs:>12.2f}x")


if __name__ == "__main__":
    main()
