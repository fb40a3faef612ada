"""cuDNN fused attention with dropout under JAX: are its dropout masks fresh per step, and what does it save?

    python -m benchmarks.gpu_attention_dropout_masks                  # on a CUDA GPU with JAX (issue 48, point 1)
    python -m benchmarks.gpu_attention_dropout_masks --attention=einsum --timing_batch=2 --timing_seq=128
                                                                      # CPU smoke test of the readers and timers

Needs JAX only (no TensorFlow, no Keras). The attention under test is JAX's private
`jax._src.cudnn.fused_attention_stablehlo.dot_product_attention(..., dropout_rate=0.1)` (bf16, BTNH layout);
`--attention=einsum` swaps in the plain path with one fixed PRNG key (a control whose masks never change).

Reading a mask: with query = 0 every score is 0, so the softmax is uniform (1/S), and with value[b, s, n, :] the
one-hot row e_s (S == head_dim) the output is the dropped-and-rescaled probability matrix itself:
out[b, t, n, s] = keep[b, n, t, s] / (S (1 - rate)). So `out != 0` is the forward mask. The backward mask comes
from dV with the cotangent dO[b, t, n, h] = [t == h]: dV[b, s, n, t] = keep[b, n, t, s] / (S (1 - rate)).

Measured (each mask 4 x 128 x 4 x 128 = 262,144 positions; two independent masks with keep rate 0.9 differ at
2 * 0.9 * 0.1 = 18% of positions, identical ones at 0%):
  (a) consecutive calls of one jitted function, same inputs: forward-only and forward+backward;
  (b) the iterations of a `jax.lax.scan` (what a fori_loop with a fixed trip count lowers to) inside one call,
      with the key input shifted by the iteration index (k + i leaves every score 0 but stops XLA hoisting the
      call out of the loop), and once with loop-invariant inputs;
  (c) the kept share of every mask against 0.9, in standard errors sqrt(0.9 * 0.1 / n);
  (d) two attention calls in one program (two layers of a model: same seed, then seeds 42 and 43);
  (e) whether the backward pass drops the forward's positions, and the gradients against the einsum path given
      the forward's mask (random q, k, one-hot v, random cotangent; float32 reference).
Timing: forward+backward at BERT-Large shapes (batch 32, seq 384, 16 heads, head_dim 64, bf16) of cuDNN with
dropout 0.1, cuDNN without dropout, and the einsum path as `official_bert.layers.attention` computes it (float32
scores and softmax, bf16 probabilities, `jax.random.bernoulli` dropout with the default threefry key, and with an
rbg key): the median of --repeats jitted calls after warm-up, and per iteration of a --loop_iterations scan inside
one call (no dispatch overhead). Prints a table; writes $OUT/gpu_attention_dropout_masks.json when OUT is set
(`_masks` / `_timing` added to the name under --skip_timing / --skip_masks: run the parts as two processes so
that a crash in one keeps the other). --isolate runs each mask experiment in its own process, with XLA's default
flags and with XLA_FLAGS=--xla_gpu_enable_command_buffer= (no command buffers).

Seen on an H200 (JAX 0.11.2, cuDNN 9.19.0), with
`XLA_PYTHON_CLIENT_PREALLOCATE=false python3 -m benchmarks.gpu_attention_dropout_masks --isolate --skip_timing`
then `python3 -m benchmarks.gpu_attention_dropout_masks --skip_masks`: the masks change from call to call and
from scan iteration to scan iteration (17.9% of positions differ), the backward drops the forward's positions,
kept shares 0.8999-0.9007 (|z| <= 1.3); but every custom call restarts from its static seed in every process
(the same sequence of masks each run, and two calls with one seed in a program share their masks), and with
XLA's default command buffers a forward+backward inside a scan, or two such calls in one program, aborts the
process (`cuda_dnn.cc: Check failed: local_device_ordinal.has_value()`, CudnnGraph::PackOperands while recording
a command buffer); with --xla_gpu_enable_command_buffer= they run. Forward+backward at BERT-Large shapes,
ms per iteration of a loop: cuDNN dropout 0.466, cuDNN no dropout 0.362, einsum + threefry dropout 0.824.
"""

import argparse
import importlib
import inspect
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
import traceback

import numpy as np

import jax
import jax.numpy as jnp

RATE = 0.1
KEEP = 1.0 - RATE


def _cudnn_module():
    return importlib.import_module("jax._src.cudnn.fused_attention_stablehlo")


def make_cudnn_attention(rate, scale, seed=None):
    """`(q, k, v) -> out` through JAX's cuDNN fused attention (BTNH), keyword names read off its signature."""
    module = _cudnn_module()
    params = inspect.signature(module.dot_product_attention).parameters
    kwargs = {"scale": scale, "dropout_rate": rate}
    if "qkv_layout" in params:
        kwargs["qkv_layout"] = "BTNH"
    if seed is not None:
        kwargs["seed"] = seed

    def attend(q, k, v):
        return module.dot_product_attention(q, k, v, **kwargs)

    return attend


def einsum_attention(q, k, v, scale, rate, key):
    """`official_bert.layers.attention`'s path: float32 scores and softmax, bf16 probabilities, then dropout."""
    scores = jnp.einsum("bqnd,bknd->bnqk", q * jnp.asarray(scale, q.dtype), k).astype(jnp.float32)
    probs = jax.nn.softmax(scores, axis=-1).astype(v.dtype)
    if rate > 0:
        keep = jax.random.bernoulli(key, 1.0 - rate, probs.shape)
        probs = jnp.where(keep, probs / jnp.asarray(1.0 - rate, probs.dtype), jnp.zeros_like(probs))
    return jnp.einsum("bnqk,bknd->bqnd", probs, v)


def make_attention(kind, rate, scale, seed=None):
    if kind == "cudnn":
        return make_cudnn_attention(rate, scale, seed)
    key = jax.random.key(0 if seed is None else seed)  # fixed at trace time: the control whose masks never change
    return lambda q, k, v: einsum_attention(q, k, v, scale, rate, key)


# ---------------------------------------------------------------------------------------------------------------
# Masks


def mask_inputs(batch, seq, heads):
    """q = 0, k random, v[b, s, n, :] = e_s, the cotangent g[b, t, n, h] = [t == h]; all bf16 (B, S, N, S)."""
    q = jnp.zeros((batch, seq, heads, seq), jnp.bfloat16)
    k = jax.random.normal(jax.random.key(1), (batch, seq, heads, seq), jnp.bfloat16)
    eye = jnp.broadcast_to(jnp.eye(seq, dtype=jnp.bfloat16)[None, :, None, :], (batch, seq, heads, seq))
    return q, k, eye, eye


def fwd_mask(out):
    """Kept positions from the output: (B, T, N, S) bool."""
    return out != 0


def bwd_mask(dv):
    """Kept positions from dV under the identity cotangent: dV[b, s, n, t] -> (B, T, N, S) bool."""
    return jnp.transpose(dv, (0, 3, 2, 1)) != 0


def make_train_masks(attend):
    """`(q, k, v, g) -> (forward mask, backward mask, kept values)` of one forward+backward."""
    def train(q, k, v, g):
        out, pullback = jax.vjp(attend, q, k, v)
        _, _, dv = pullback(g)
        return fwd_mask(out), bwd_mask(dv), out
    return train


def share_stats(mask):
    mask = np.asarray(mask)
    n = mask.size
    share = float(mask.mean())
    se = math.sqrt(KEEP * RATE / n)
    return {"kept_share": share, "n": n, "z": (share - KEEP) / se, "within_4_se": abs(share - KEEP) <= 4 * se}


def diff_fraction(a, b):
    return float(np.mean(np.asarray(a) != np.asarray(b)))


def kept_values(out):
    values = np.asarray(out.astype(jnp.float32))
    nonzero = values[values != 0]
    return {"min": float(nonzero.min()) if nonzero.size else None, "max": float(nonzero.max()) if nonzero.size else None}


def mask_header(batch, seq, heads):
    return {"shape": {"batch": batch, "seq": seq, "heads": heads, "head_dim": seq, "dtype": "bfloat16",
                      "layout": "BTNH"},
            "expected": {"kept_value": 1.0 / (seq * KEEP), "diff_if_independent": 2 * KEEP * RATE,
                         "se_of_share": math.sqrt(KEEP * RATE / (batch * seq * heads * seq))}}


EXPERIMENTS = ("a_consecutive_forward_only", "a_consecutive_forward_backward", "b_scan_forward_backward",
               "b_scan_forward_only", "b_scan_forward_backward_loop_invariant_inputs", "d_two_calls_same_seed",
               "d_two_calls_seeds_42_43", "d_unrolled_chain", "e_gradient_parity")


def masks_experiments(kind, batch, seq, heads, calls, loop_iterations, only=EXPERIMENTS):
    """(a)-(e) above, those named in `only`. Returns a dict of results; each experiment catches its own Python
    error (an abort inside XLA ends the process: see --isolate)."""
    scale = 1.0 / math.sqrt(seq)
    attend = make_attention(kind, RATE, scale)
    q, k, v, g = mask_inputs(batch, seq, heads)
    results = mask_header(batch, seq, heads)

    def run(name, fn):
        if name not in only:
            return
        print(f"--- {name}", flush=True)
        try:
            results[name] = fn()
        except Exception as error:  # report and go on: each experiment stands alone
            results[name] = {"error": f"{type(error).__name__}: {error}"[:2000]}
            traceback.print_exc()
        print(f"RESULT {name} {json.dumps(results[name], default=str)}", flush=True)

    def consecutive_forward():
        fwd = jax.jit(lambda q, k, v: fwd_mask(attend(q, k, v)))
        masks = [fwd(q, k, v) for _ in range(calls)]
        out = jax.jit(attend)(q, k, v)
        return {"consecutive_diff": [diff_fraction(a, b) for a, b in zip(masks, masks[1:])],
                "first_vs_last_diff": diff_fraction(masks[0], masks[-1]),
                "shares": [share_stats(m) for m in masks], "kept_values": kept_values(out),
                "batch0_vs_batch1_diff": diff_fraction(masks[0][0], masks[0][1]),
                "head0_vs_head1_diff": diff_fraction(masks[0][:, :, 0], masks[0][:, :, 1])}

    def consecutive_train():
        train = jax.jit(make_train_masks(attend))
        runs = [train(q, k, v, g) for _ in range(calls)]
        fwd = [r[0] for r in runs]
        bwd = [r[1] for r in runs]
        return {"consecutive_fwd_diff": [diff_fraction(a, b) for a, b in zip(fwd, fwd[1:])],
                "consecutive_bwd_diff": [diff_fraction(a, b) for a, b in zip(bwd, bwd[1:])],
                "fwd_vs_bwd_diff": [diff_fraction(a, b) for a, b in zip(fwd, bwd)],
                "fwd_shares": [share_stats(m) for m in fwd], "bwd_shares": [share_stats(m) for m in bwd],
                "kept_values": kept_values(runs[0][2])}

    def scan_train(invariant):
        train = make_train_masks(attend)

        def program(q, k, v, g):
            def body(carry, i):
                shifted = k if invariant else k + i.astype(k.dtype)  # scores stay 0: q = 0
                f, b, _ = train(q, shifted, v, g)
                return carry, (f, b)
            _, (f, b) = jax.lax.scan(body, 0, jnp.arange(loop_iterations))
            return f, b

        f, b = jax.jit(program)(q, k, v, g)
        return {"iterations": loop_iterations,
                "consecutive_fwd_diff": [diff_fraction(f[i], f[i + 1]) for i in range(loop_iterations - 1)],
                "consecutive_bwd_diff": [diff_fraction(b[i], b[i + 1]) for i in range(loop_iterations - 1)],
                "fwd_vs_bwd_diff": [diff_fraction(f[i], b[i]) for i in range(loop_iterations)],
                "fwd_shares": [share_stats(f[i])["kept_share"] for i in range(loop_iterations)],
                "fwd_z": [share_stats(f[i])["z"] for i in range(loop_iterations)]}

    def scan_forward():
        def program(q, k, v):
            def body(carry, i):
                return carry, fwd_mask(attend(q, k + i.astype(k.dtype), v))
            return jax.lax.scan(body, 0, jnp.arange(loop_iterations))[1]

        f = jax.jit(program)(q, k, v)
        return {"iterations": loop_iterations,
                "consecutive_fwd_diff": [diff_fraction(f[i], f[i + 1]) for i in range(loop_iterations - 1)]}

    def two_calls(seeds):
        first = make_attention(kind, RATE, scale, seeds[0])
        second = make_attention(kind, RATE, scale, seeds[1])

        def program(q, k, v, g):
            f1, b1, _ = make_train_masks(first)(q, k, v, g)
            f2, b2, _ = make_train_masks(second)(q, k + jnp.ones_like(k), v, g)
            return f1, b1, f2, b2

        f1, b1, f2, b2 = jax.jit(program)(q, k, v, g)
        return {"seeds": list(seeds), "fwd_diff": diff_fraction(f1, f2), "bwd_diff": diff_fraction(b1, b2),
                "fwd_vs_bwd_diff": [diff_fraction(f1, b1), diff_fraction(f2, b2)]}

    def gradient_parity():
        """Random q, k, one-hot v, random cotangent: the kernel's out reveals its mask (out = P * keep / 0.9);
        the float32 einsum path with that mask gives the reference out, dq, dk, dv."""
        keys = jax.random.split(jax.random.key(2), 3)
        rq = jax.random.normal(keys[0], q.shape, jnp.bfloat16)
        rk = jax.random.normal(keys[1], k.shape, jnp.bfloat16)
        rg = jax.random.normal(keys[2], q.shape, jnp.bfloat16)

        def program(q, k, v, g):
            out, pullback = jax.vjp(attend, q, k, v)
            return (out, *pullback(g))

        out, dq, dk, dv = jax.jit(program)(rq, rk, v, rg)
        keep = jnp.transpose(out != 0, (0, 2, 1, 3))  # (B, N, T, S)

        def reference(q, k, v):
            scores = jnp.einsum("bqnd,bknd->bnqk", q, k) * scale
            probs = jax.nn.softmax(scores, axis=-1)
            return jnp.einsum("bnqk,bknd->bqnd", jnp.where(keep, probs / KEEP, 0.0), v)

        f32 = [x.astype(jnp.float32) for x in (rq, rk, v, rg)]
        ref_out, pullback = jax.vjp(reference, *f32[:3])
        refs = (ref_out, *pullback(f32[3]))
        errors = {}
        for name, got, ref in zip(("out", "dq", "dk", "dv"), (out, dq, dk, dv), refs):
            got = np.asarray(got.astype(jnp.float32))
            ref = np.asarray(ref)
            errors[name] = {"max_abs_err": float(np.abs(got - ref).max()), "max_abs_ref": float(np.abs(ref).max()),
                            "rel": float(np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-30))}
        errors["mask_share"] = share_stats(keep)["kept_share"]
        return errors

    def unrolled_chain(length=6):
        """`length` attention calls, same seed, in one program without a loop (a model's layers): forward+backward,
        each call's keys shifted by its index."""
        train = make_train_masks(attend)

        def program(q, k, v, g):
            return [train(q, k + jnp.asarray(i, k.dtype), v, g)[:2] for i in range(length)]

        masks = jax.jit(program)(q, k, v, g)
        return {"calls": length,
                "consecutive_fwd_diff": [diff_fraction(masks[i][0], masks[i + 1][0]) for i in range(length - 1)],
                "consecutive_bwd_diff": [diff_fraction(masks[i][1], masks[i + 1][1]) for i in range(length - 1)],
                "fwd_vs_bwd_diff": [diff_fraction(f, b) for f, b in masks]}

    run("a_consecutive_forward_only", consecutive_forward)
    run("a_consecutive_forward_backward", consecutive_train)
    run("b_scan_forward_backward", lambda: scan_train(False))
    run("b_scan_forward_only", scan_forward)
    run("b_scan_forward_backward_loop_invariant_inputs", lambda: scan_train(True))
    run("d_two_calls_same_seed", lambda: two_calls((None, None)))
    run("d_two_calls_seeds_42_43", lambda: two_calls((42, 43)))
    run("d_unrolled_chain", unrolled_chain)
    run("e_gradient_parity", gradient_parity)
    return results


# ---------------------------------------------------------------------------------------------------------------
# Timing


def timing_variants(kind):
    """name -> (rate, attention factory taking (scale, key) -> (q, k, v) -> out)."""
    variants = {}
    if kind == "cudnn":
        variants["cudnn dropout 0.1"] = (RATE, lambda scale, key: make_cudnn_attention(RATE, scale))
        variants["cudnn no dropout"] = (0.0, lambda scale, key: make_cudnn_attention(0.0, scale))
    variants["einsum dropout 0.1 (threefry)"] = (RATE, lambda scale, key: (
        lambda q, k, v: einsum_attention(q, k, v, scale, RATE, key)))
    variants["einsum dropout 0.1 (rbg key)"] = ("rbg", lambda scale, key: (
        lambda q, k, v: einsum_attention(q, k, v, scale, RATE, key)))
    variants["einsum no dropout"] = (0.0, lambda scale, key: (
        lambda q, k, v: einsum_attention(q, k, v, scale, 0.0, key)))
    return variants


def time_variants(kind, batch, seq, heads, head_dim, repeats, warmup, loop_iterations):
    scale = 1.0 / math.sqrt(head_dim)
    keys = jax.random.split(jax.random.key(3), 4)
    shape = (batch, seq, heads, head_dim)
    q, k, v, g = (jax.random.normal(key, shape, jnp.bfloat16) for key in keys)
    fwd_flops = 4 * batch * heads * seq * seq * head_dim  # two matmuls, a multiply-add counted 2
    results = {"shape": {"batch": batch, "seq": seq, "heads": heads, "head_dim": head_dim, "dtype": "bfloat16"},
               "forward_flops": fwd_flops, "rows": {}}

    for name, (rate, factory) in timing_variants(kind).items():
        impl = "rbg" if rate == "rbg" else None

        def step(q, k, v, g, key, factory=factory):
            attend = factory(scale, key)
            out, pullback = jax.vjp(attend, q, k, v)
            return pullback(g)

        def single(q, k, v, g, seed):
            return step(q, k, v, g, jax.random.key(seed, impl=impl))

        def looped(q, k, v, g, seed):
            base = jax.random.key(seed, impl=impl)

            def body(i, q):
                dq, dk, dv = step(q, k, v, g, jax.random.fold_in(base, i))
                return (q + dq * jnp.asarray(1e-3, q.dtype)).astype(q.dtype)  # a true dependency: nothing hoisted
            return jax.lax.fori_loop(0, loop_iterations, body, q)

        row = {}
        try:
            single_fn = jax.jit(single)
            looped_fn = jax.jit(looped)
            start = time.perf_counter()
            jax.block_until_ready(single_fn(q, k, v, g, 0))
            jax.block_until_ready(looped_fn(q, k, v, g, 0))
            row["compile_and_first_s"] = time.perf_counter() - start
            for i in range(warmup):
                jax.block_until_ready(single_fn(q, k, v, g, i))
            times = []
            for i in range(repeats):
                start = time.perf_counter()
                jax.block_until_ready(single_fn(q, k, v, g, i))
                times.append(time.perf_counter() - start)
            row["single_call_median_ms"] = 1e3 * statistics.median(times)
            row["single_call_min_ms"] = 1e3 * min(times)
            jax.block_until_ready(looped_fn(q, k, v, g, 1))
            loop_times = []
            for i in range(max(3, repeats // 2)):
                start = time.perf_counter()
                jax.block_until_ready(looped_fn(q, k, v, g, i))
                loop_times.append(time.perf_counter() - start)
            row["per_iteration_in_loop_ms"] = 1e3 * statistics.median(loop_times) / loop_iterations
            row["model_tflops_per_s"] = 3 * fwd_flops / (row["per_iteration_in_loop_ms"] * 1e-3) / 1e12
        except Exception as error:
            row["error"] = f"{type(error).__name__}: {error}"[:2000]
            traceback.print_exc()
        results["rows"][name] = row
    return results


# ---------------------------------------------------------------------------------------------------------------


NO_COMMAND_BUFFERS = "--xla_gpu_enable_command_buffer="


def isolated_masks(args, only):
    """Runs each experiment in `only` in a child process (`--only NAME`), with XLA's default flags and again
    without command buffers; collects the children's RESULT lines, or their exit status and last log lines."""
    results = {}
    for name in only:
        for suffix, extra in (("", ""), ("@no_command_buffers", NO_COMMAND_BUFFERS)):
            env = dict(os.environ)
            env.pop("OUT", None)
            env["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"  # the parent holds a client too
            if extra:
                env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " " + extra).strip()
            command = [sys.executable, "-m", "benchmarks.gpu_attention_dropout_masks", "--skip_timing",
                       f"--only={name}", f"--attention={args.attention}", f"--mask_batch={args.mask_batch}",
                       f"--mask_seq={args.mask_seq}", f"--mask_heads={args.mask_heads}", f"--calls={args.calls}",
                       f"--loop_iterations={args.loop_iterations}"]
            start = time.perf_counter()
            try:
                child = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
            except subprocess.TimeoutExpired as expired:
                child = subprocess.CompletedProcess(command, "timed out after 120 s", expired.stdout or "",
                                                    expired.stderr or "")
                child.stdout = child.stdout if isinstance(child.stdout, str) else child.stdout.decode()
                child.stderr = child.stderr if isinstance(child.stderr, str) else child.stderr.decode()
            found = None
            for line in child.stdout.splitlines():
                if line.startswith(f"RESULT {name} "):
                    found = json.loads(line[len(f"RESULT {name} "):])
            if found is None:
                log = [line for line in (child.stdout + child.stderr).splitlines()
                       if "Check failed" in line or "Error" in line or "error" in line]
                found = {"error": f"process exited {child.returncode}", "log": log[-5:]}
            found["process_s"] = round(time.perf_counter() - start, 1)
            results[name + suffix] = found
            print(f"ISOLATED {name + suffix} {json.dumps(found, default=str)[:1500]}", flush=True)
    return {**mask_header(args.mask_batch, args.mask_seq, args.mask_heads), **results}


def environment():
    info = {"jax": jax.__version__, "python": platform.python_version(), "backend": jax.default_backend(),
            "devices": [str(d) for d in jax.devices()]}
    try:
        import jaxlib
        info["jaxlib"] = jaxlib.__version__
    except Exception as error:
        info["jaxlib"] = repr(error)
    try:
        info["device_kind"] = jax.devices()[0].device_kind
        info["compute_capability"] = getattr(jax.devices()[0], "compute_capability", None)
    except Exception as error:
        info["device_kind"] = repr(error)
    try:
        module = _cudnn_module()
        info["dot_product_attention_signature"] = str(inspect.signature(module.dot_product_attention))
        try:
            info["cudnn_version"] = module.check_cudnn_version()
        except Exception as error:
            info["cudnn_version"] = repr(error)
    except Exception as error:
        info["dot_product_attention_signature"] = repr(error)
    try:
        te = importlib.import_module("transformer_engine.jax")
        info["transformer_engine_jax"] = getattr(importlib.import_module("transformer_engine"), "__version__", "?")
        fused = getattr(te, "fused_attn", None) or getattr(importlib.import_module("transformer_engine.jax.attention"),
                                                              "fused_attn", None)
        info["transformer_engine_fused_attn_signature"] = str(inspect.signature(fused)) if fused else None
    except Exception as error:
        info["transformer_engine_jax"] = f"not importable: {type(error).__name__}: {error}"[:300]
    return info


def _fmt(values):
    return "[" + ", ".join(f"{x:.4f}" for x in values) + "]"


def print_report(report):
    env = report["environment"]
    print(f"\nJAX {env['jax']} (jaxlib {env.get('jaxlib')}), {env.get('device_kind')}, cuDNN {env.get('cudnn_version')}")
    print(f"signature: dot_product_attention{env.get('dot_product_attention_signature')}")
    print(f"transformer_engine.jax: {env.get('transformer_engine_jax')}")
    masks = report.get("masks", {})
    if masks:
        print(f"\nMasks ({report['attention']}; {masks['shape']}); independent masks differ at "
              f"{masks['expected']['diff_if_independent']:.2f}, kept share 0.9 +- {masks['expected']['se_of_share']:.5f} (1 SE)")
        for name, value in masks.items():
            if name in ("shape", "expected"):
                continue
            if "error" in value:
                print(f"  {name}: ERROR {value['error'][:300]} {value.get('log', '')}")
                continue
            parts = []
            for field, item in value.items():
                if isinstance(item, list) and item and isinstance(item[0], float):
                    parts.append(f"{field}={_fmt(item)}")
                elif isinstance(item, list) and item and isinstance(item[0], dict):
                    parts.append(f"{field}: shares={_fmt([s['kept_share'] for s in item])} "
                                 f"z={_fmt([s['z'] for s in item])}")
                elif isinstance(item, float):
                    parts.append(f"{field}={item:.4f}")
                else:
                    parts.append(f"{field}={item}")
            print(f"  {name}:\n    " + "\n    ".join(parts))
    timing = report.get("timing")
    if timing:
        print(f"\nForward+backward timing, {timing['shape']}; per iteration of a "
              f"{report['args']['loop_iterations']}-iteration fori_loop inside one call, and single jitted calls")
        print(f"  {'variant':<32}{'loop ms/iter':>14}{'model TFLOP/s':>15}{'call median ms':>16}{'call min ms':>13}")
        for name, row in timing["rows"].items():
            if "error" in row:
                print(f"  {name:<32}ERROR {row['error'][:200]}")
                continue
            print(f"  {name:<32}{row['per_iteration_in_loop_ms']:>14.3f}{row['model_tflops_per_s']:>15.1f}"
                  f"{row['single_call_median_ms']:>16.3f}{row['single_call_min_ms']:>13.3f}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--attention", choices=("cudnn", "einsum"), default="cudnn",
                        help="attention whose masks are read (einsum: a fixed-key control, runs on CPU)")
    parser.add_argument("--mask_batch", type=int, default=4)
    parser.add_argument("--mask_seq", type=int, default=128, help="also the head_dim (one-hot values)")
    parser.add_argument("--mask_heads", type=int, default=4)
    parser.add_argument("--calls", type=int, default=4, help="consecutive calls in (a)")
    parser.add_argument("--loop_iterations", type=int, default=4, help="scan iterations in (b); timing loop")
    parser.add_argument("--timing_batch", type=int, default=32)
    parser.add_argument("--timing_seq", type=int, default=384)
    parser.add_argument("--timing_heads", type=int, default=16)
    parser.add_argument("--timing_head_dim", type=int, default=64)
    parser.add_argument("--timing_loop_iterations", type=int, default=24, help="iterations a timed loop (24 layers)")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--skip_timing", action="store_true")
    parser.add_argument("--skip_masks", action="store_true")
    parser.add_argument("--only", default="", help="comma-separated mask experiments (default: all)")
    parser.add_argument("--isolate", action="store_true",
                        help="each mask experiment in its own process, with XLA's default flags and again with "
                             "XLA_FLAGS+=--xla_gpu_enable_command_buffer= (an XLA abort ends only that process)")
    args = parser.parse_args(argv)

    report = {"attention": args.attention, "environment": environment(),
              "args": {**vars(args), "loop_iterations": args.timing_loop_iterations}}
    print(json.dumps(report["environment"], indent=1), flush=True)
    only = tuple(args.only.split(",")) if args.only else EXPERIMENTS
    if not args.skip_masks and args.isolate:
        start = time.perf_counter()
        report["masks"] = isolated_masks(args, only)
        report["masks_s"] = time.perf_counter() - start
    elif not args.skip_masks:
        start = time.perf_counter()
        report["masks"] = masks_experiments(args.attention, args.mask_batch, args.mask_seq, args.mask_heads,
                                            args.calls, args.loop_iterations, only)
        report["masks_s"] = time.perf_counter() - start
    if not args.skip_timing:
        start = time.perf_counter()
        report["timing"] = time_variants(args.attention, args.timing_batch, args.timing_seq, args.timing_heads,
                                         args.timing_head_dim, args.repeats, args.warmup,
                                         args.timing_loop_iterations)
        report["timing_s"] = time.perf_counter() - start
    print_report(report)
    if os.environ.get("OUT"):
        part = "_timing" if args.skip_masks else "_masks" if args.skip_timing else ""
        path = os.path.join(os.environ["OUT"], f"gpu_attention_dropout_masks{part}.json")
        with open(path, "w") as f:
            json.dump(report, f, indent=1, default=str)
        print(f"\nwrote {path}")
    return report


if __name__ == "__main__":
    main()
