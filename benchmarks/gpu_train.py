"""GPU training throughput: ours against Hugging Face transformers (PyTorch), one GPU, one run.

    python -m benchmarks.gpu_train                                   # both workloads, every peer
    python -m benchmarks.gpu_train --workloads=pretrain --peers=ours --backend=jax

Workloads (random weights and synthetic full-length inputs: the speed does not depend on the values):
  pretrain  BERT-Base pre-training, seq 128, --pretrain_batch_size (256), 20 masked-LM predictions per
            sequence + next-sentence prediction. Ours: `BertPretrainer` (the heads gather the 20 positions);
            HF: `BertForPreTraining` (its masked-LM head scores all 128 positions, -100 labels elsewhere).
  squad     BERT-Large span labeling, seq 384, --squad_batch_size (32). Ours: `BertSpanLabeler`; HF:
            `BertForQuestionAnswering`. NVIDIA's published TF2 figure for this (A100 80GB, mixed precision):
            134 sequences/s.
Both peers: bf16 mixed precision (ours mixed_bfloat16 under XLA via `jit_compile=True`; HF `torch.autocast`
bf16, eager with SDPA attention, and again under `torch.compile`), AdamW with global-norm clipping at 1.0 and
dropout 0.1, one optimizer step per batch. Ours runs on the Keras backend given by --backend: TensorFlow is
the library's own; JAX runs the same Keras layers where no TensorFlow GPU build is installed (a machine with
JAX, torch and transformers needs only `keras`, `namex` and `optree` added for that).

Each peer runs in its own process. A figure is the median over --repeats timed `fit` calls (ours) or step
loops (HF) of --steps steps each, after a warm-up that compiles; the spread is (max - min) / median.
Model FLOPs count a multiply-add as 2 and a training step as 3x the forward pass (benchmarks/perf/shapes.py);
MFU divides the achieved model FLOP/s by the GPU's nominal dense bf16 peak (NOMINAL_BF16_TFLOPS) and, as
"% GEMM", by a bf16 8192^3 matmul measured at the start of the run. Results also go to --out as JSON.
"""

import argparse
import importlib.metadata
import json
import os
import statistics
import subprocess
import sys
import time

from benchmarks.perf.inputs import packed_inputs
from benchmarks.perf.shapes import SHAPES, VOCAB_SIZE, encoder_forward_flops
from benchmarks.perf.timing import measure

WORKLOADS = {
    # name: (shape, seq_length)
    "pretrain": ("base", 128),
    "squad": ("large", 384),
}
MAX_PREDICTIONS = 20  # masked-LM predictions per sequence at seq 128 (Google's pre-training recipe)
PEERS = ("ours", "hf_torch", "hf_torch_compile")
NOMINAL_BF16_TFLOPS = {"H100": 989.4, "H200": 989.4, "A100": 312.0}  # dense, SXM datasheets
NVIDIA_TF2_SQUAD_LARGE = 134.0  # sequences/s, A100 80GB, BERT-Large seq 384, mixed precision (NVIDIA's table)


def training_flops_per_sequence(workload):
    """Model FLOPs of one sequence through one training step (3x the forward pass)."""
    shape, seq_length = WORKLOADS[workload]
    hidden = SHAPES[shape][1]
    forward = encoder_forward_flops(shape, seq_length)
    if workload == "pretrain":  # transform dense + tied vocabulary projection, on the predicted positions
        forward += MAX_PREDICTIONS * (2 * hidden * hidden + 2 * hidden * VOCAB_SIZE)
    else:  # start/end dense on every position
        forward += seq_length * 2 * hidden * 2
    return 3 * forward


def synthetic_batch(workload, batch_size, seed=0):
    """NumPy inputs and labels of one batch: the perf suite's packed (batch, seq) encoder inputs plus the labels."""
    import numpy as np

    _, seq_length = WORKLOADS[workload]
    ids, mask, types, binary_labels = packed_inputs(batch_size, seq_length, seed)  # (batch, seq) x3, (batch,)
    batch = {"input_word_ids": ids, "input_mask": mask, "input_type_ids": types}
    rng = np.random.default_rng(seed + 1)
    half = seq_length // 2
    if workload == "pretrain":
        positions = np.sort(np.stack([rng.choice(np.arange(1, seq_length - 1), MAX_PREDICTIONS, replace=False)
                                      for _ in range(batch_size)]), axis=1).astype(np.int32)  # (batch, preds)
        batch["masked_lm_positions"] = positions
        batch["masked_lm_ids"] = np.take_along_axis(ids, positions, axis=1)
        batch["masked_lm_weights"] = np.ones(positions.shape, np.float32)
        batch["next_sentence_labels"] = binary_labels
    else:
        batch["start_positions"] = rng.integers(half, seq_length - 1, size=(batch_size,), dtype=np.int32)
        batch["end_positions"] = np.minimum(batch["start_positions"] + 5, seq_length - 2).astype(np.int32)
    return batch


def _time_training(run, steps, repeats, batch_size, workload):
    """Times `run()`, which trains `steps` steps and returns the last loss: its first call (which compiles) alone,
    then `repeats` calls. Returns the compile time, the rate from the median call, the spread and model TFLOP/s."""
    losses = []
    start = time.perf_counter()
    losses.append(run())
    compile_seconds = time.perf_counter() - start
    seconds_per_step = [t / steps for t in measure(lambda: losses.append(run()), repeats, warmup=0)["times_s"]]
    median = statistics.median(seconds_per_step)
    rate = batch_size / median
    return {"compile_and_first_call_s": compile_seconds, "final_loss": float(losses[-1]), "sequences_per_s": rate,
            "spread": (max(seconds_per_step) - min(seconds_per_step)) / median,
            "tflops": rate * training_flops_per_sequence(workload) / 1e12, "seconds_per_step": seconds_per_step}


# ---- ours ----------------------------------------------------------------------------------------------------

def _ours(workload, batch_size, steps, repeats, steps_per_loop=1, dropout=0.1, attention_dropout=0.1,
          fused_attention=False):
    import keras
    import numpy as np

    from official_bert import BertConfig, BertEncoder, BertPretrainer
    from official_bert.models.pretrainer import split_features
    from official_bert.models import BertSpanLabeler
    from official_bert.optimization import create_optimizer

    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    layers, hidden, heads, intermediate = SHAPES[WORKLOADS[workload][0]]
    config = BertConfig(hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                        intermediate_size=intermediate, hidden_dropout_prob=dropout,
                        attention_probs_dropout_prob=attention_dropout)
    # fused_attention: keras.ops.dot_product_attention where attention dropout is 0
    encoder = BertEncoder(config, fused_attention=fused_attention)
    batch = synthetic_batch(workload, batch_size)
    optimizer = create_optimizer(1e-4, 10_000, 1_000, clip_norm=1.0)
    if workload == "pretrain":
        model = BertPretrainer(encoder)
        model.compile(optimizer=optimizer, jit_compile=True, steps_per_execution=steps_per_loop)
        x, y = split_features(batch)
    else:
        model = BertSpanLabeler(encoder)
        model.compile(optimizer=optimizer, jit_compile=True, steps_per_execution=steps_per_loop)
        x = {name: batch[name] for name in model.input}
        y = {"start_logits": batch["start_positions"], "end_logits": batch["end_positions"]}
    tile = lambda tree: {k: np.concatenate([v] * steps) for k, v in tree.items()}  # noqa: E731
    x, y = tile(x), tile(y)  # `steps` batches per fit call

    def fit():
        history = model.fit(x, y, batch_size=batch_size, epochs=1, shuffle=False, verbose=0)
        return history.history["loss"][-1]

    return {"keras": keras.__version__, "keras_backend": keras.backend.backend(),
            "backend_version": importlib.metadata.version(keras.backend.backend()), "steps_per_loop": steps_per_loop,
            **_time_training(fit, steps, repeats, batch_size, workload)}


# ---- Hugging Face transformers (PyTorch) ---------------------------------------------------------------------

def _hf_torch(workload, batch_size, steps, repeats, compiled, dropout=0.1, attention_dropout=0.1):
    import torch
    import transformers

    layers, hidden, heads, intermediate = SHAPES[WORKLOADS[workload][0]]
    config = transformers.BertConfig(vocab_size=VOCAB_SIZE, hidden_size=hidden, num_hidden_layers=layers,
                                     num_attention_heads=heads, intermediate_size=intermediate,
                                     hidden_dropout_prob=dropout, attention_probs_dropout_prob=attention_dropout,
                                     attn_implementation="sdpa")
    model_class = transformers.BertForPreTraining if workload == "pretrain" else transformers.BertForQuestionAnswering
    model = model_class(config).cuda().train()
    batch = {k: torch.from_numpy(v).cuda() for k, v in synthetic_batch(workload, batch_size).items()}
    inputs = {"input_ids": batch["input_word_ids"].long(), "attention_mask": batch["input_mask"].long(),
              "token_type_ids": batch["input_type_ids"].long()}
    if workload == "pretrain":
        labels = torch.full_like(inputs["input_ids"], -100)
        labels.scatter_(1, batch["masked_lm_positions"].long(), batch["masked_lm_ids"].long())
        inputs.update(labels=labels, next_sentence_label=batch["next_sentence_labels"].long())
    else:
        inputs.update(start_positions=batch["start_positions"].long(), end_positions=batch["end_positions"].long())
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, eps=1e-6, weight_decay=0.01, fused=True)
    scheduler = transformers.get_linear_schedule_with_warmup(optimizer, 1_000, 10_000)

    def loss_fn():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            return model(**inputs).loss

    forward = torch.compile(loss_fn) if compiled else loss_fn

    def run():
        for _ in range(steps):
            loss = forward()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        return loss.item()

    return {"torch": torch.__version__, "transformers": transformers.__version__,
            **_time_training(run, steps, repeats, batch_size, workload)}


def gemm_ceiling_tflops(size=8192, repeats=10):
    """bf16 matmul speed of a `size`^3 product on the GPU (PyTorch; median of `repeats` after warm-up)."""
    import torch

    a = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        a @ b
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return 2 * size ** 3 / statistics.median(times) / 1e12, torch.cuda.get_device_name()


# ---- driver --------------------------------------------------------------------------------------------------

def _worker(args):
    if args.peer == "ours":
        result = _ours(args.workload, args.batch_size, args.steps, args.repeats, args.steps_per_loop, args.dropout,
                       _attention_dropout(args), args.fused_attention)
    elif args.peer == "gemm":
        tflops, name = gemm_ceiling_tflops()
        result = {"tflops": tflops, "device": name}
    else:
        result = _hf_torch(args.workload, args.batch_size, args.steps, args.repeats,
                           compiled=args.peer == "hf_torch_compile", dropout=args.dropout,
                           attention_dropout=_attention_dropout(args))
    print("RESULT " + json.dumps(result), flush=True)


def _attention_dropout(args):
    return args.dropout if args.attention_dropout is None else args.attention_dropout


def _run_worker(peer, workload, batch_size, args):
    env = dict(os.environ, KERAS_BACKEND=args.backend)
    command = [sys.executable, "-m", "benchmarks.gpu_train", "--worker", f"--peer={peer}",
               f"--workload={workload}", f"--batch_size={batch_size}", f"--steps={args.steps}",
               f"--repeats={args.repeats}", f"--steps_per_loop={args.steps_per_loop}", f"--dropout={args.dropout}"]
    if args.attention_dropout is not None:
        command.append(f"--attention_dropout={args.attention_dropout}")
    if args.fused_attention:
        command.append("--fused_attention")
    print("running:", " ".join(command[2:]), file=sys.stderr, flush=True)
    process = subprocess.run(command, capture_output=True, text=True, env=env)
    for line in process.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    tail = process.stderr[-2500:]
    print(tail, file=sys.stderr)
    return {"error": f"exit {process.returncode}: {tail.strip().splitlines()[-1] if tail.strip() else ''}"}


def _nominal_peak(device_name):
    return next((peak for key, peak in NOMINAL_BF16_TFLOPS.items() if key in device_name), None)


def print_table(results):
    gemm, device = results["gemm"]["tflops"], results["gemm"]["device"]
    peak = _nominal_peak(device)
    print(f"device: {device}; bf16 GEMM ceiling {gemm:.0f} TFLOP/s (8192^3 matmul); nominal dense bf16 peak "
          f"{peak or 'unknown'} TFLOP/s")
    print(f"{'workload':<9} {'peer':<17} {'batch':>5} {'seq/s':>9} {'spread':>7} {'TFLOP/s':>8} "
          f"{'MFU':>6} {'% GEMM':>7} {'ours/this':>9}")
    for row in results["rows"]:
        if "error" in row:
            print(f"{row['workload']:<9} {row['peer']:<17} {row['batch_size']:>5}  failed: {row['error'][:80]}")
            continue
        ours = next((r for r in results["rows"] if r["workload"] == row["workload"] and r["peer"] == "ours"
                     and "error" not in r), None)
        ratio = f"{ours['sequences_per_s'] / row['sequences_per_s']:.2f}x" if ours else "-"
        mfu = f"{100 * row['tflops'] / peak:.1f}%" if peak else "-"
        print(f"{row['workload']:<9} {row['peer']:<17} {row['batch_size']:>5} {row['sequences_per_s']:>9.1f} "
              f"{100 * row['spread']:>6.1f}% {row['tflops']:>8.1f} {mfu:>6} {100 * row['tflops'] / gemm:>6.1f}% "
              f"{ratio:>9}")
    squad = [r for r in results["rows"] if r["workload"] == "squad" and "error" not in r]
    if squad:
        print(f"NVIDIA's published TF2 BERT-Large SQuAD seq 384 (A100 80GB, mixed precision): "
              f"{NVIDIA_TF2_SQUAD_LARGE:.0f} seq/s; " + ", ".join(
                  f"{r['peer']} {r['sequences_per_s'] / NVIDIA_TF2_SQUAD_LARGE:.2f}x of it" for r in squad))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", default="pretrain,squad")
    parser.add_argument("--peers", default=",".join(PEERS))
    parser.add_argument("--backend", default="tensorflow", choices=("tensorflow", "jax"),
                        help="Keras backend ours runs on")
    parser.add_argument("--pretrain_batch_size", type=int, default=256)
    parser.add_argument("--squad_batch_size", type=int, default=32)
    parser.add_argument("--steps", type=int, default=20, help="steps per timed repeat")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps_per_loop", type=int, default=1,
                        help="ours: optimizer steps per host call (Keras steps_per_execution); divides --steps")
    parser.add_argument("--dropout", type=float, default=0.1, help="hidden and attention dropout, both peers")
    parser.add_argument("--attention_dropout", type=float, default=None,
                        help="attention dropout alone, both peers (default: --dropout)")
    parser.add_argument("--fused_attention", action="store_true",
                        help="ours: keras.ops.dot_product_attention (flash attention on JAX GPU); it has no dropout, "
                             "so it applies with --attention_dropout=0 only")
    parser.add_argument("--out", default=None, help="JSON file for the results")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--peer", help=argparse.SUPPRESS)
    parser.add_argument("--workload", help=argparse.SUPPRESS)
    parser.add_argument("--batch_size", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return _worker(args)
    for name in args.workloads.split(","):
        if name not in WORKLOADS:
            parser.error(f"--workloads: unknown workload {name!r}; known: {', '.join(WORKLOADS)}")
    if args.steps % args.steps_per_loop:
        parser.error(f"--steps ({args.steps}) must be a multiple of --steps_per_loop ({args.steps_per_loop})")
    for name in args.peers.split(","):
        if name not in PEERS:
            parser.error(f"--peers: unknown peer {name!r}; known: {', '.join(PEERS)}")
    results = {"gemm": _run_worker("gemm", "pretrain", 0, args), "backend": args.backend, "rows": []}
    if "error" in results["gemm"]:
        raise SystemExit(f"no GPU to measure: {results['gemm']['error']}")
    for workload in args.workloads.split(","):
        batch_size = args.pretrain_batch_size if workload == "pretrain" else args.squad_batch_size
        for peer in args.peers.split(","):
            row = {"workload": workload, "peer": peer, "batch_size": batch_size,
                   **_run_worker(peer, workload, batch_size, args)}
            results["rows"].append(row)
            if args.out:
                with open(args.out, "w") as f:
                    json.dump(results, f, indent=1)
    print_table(results)


if __name__ == "__main__":
    main()
