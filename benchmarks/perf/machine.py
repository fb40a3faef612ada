"""This machine's limits: the nominal peak from the CPU's features, and the measured GEMM ceiling.

    python -m benchmarks.perf.machine        # prints both, and RESULT lines for benchmarks.run

Nominal fp32 peak = cores x GHz x FMA pipes (2) x fp32 lanes x 2 FLOPs per FMA. Lanes: 16 with AVX-512, 8 with
AVX2. Two full-width FMA pipes per core is right for Zen 5 and Xeon Scalable; Zen 4 runs AVX-512 on 256-bit
pipes, so there the figure is 2x too high. The clock is /proc/cpuinfo's current MHz, which under turbo is below
the real one, so a well-tuned kernel can pass 100%. bf16: AVX512_BF16's dot product does 2 bf16 FMAs per fp32
lane (2x fp32); AMX tiles do 1024 bf16 FLOPs per cycle per core.

The GEMM ceiling is what the machine really delivers to a dense (2048 x 2048) @ (2048 x 2048) matmul on all
cores, the best of TensorFlow (oneDNN) and PyTorch, per precision: the practical roof for an encoder whose
FLOPs are almost all such matmuls.
"""

import json
import os
import re
import time

GEMM_SIZE = 2048


def _cpu_flags():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return set(), None
    flags = set(re.search(r"^flags\s*:\s*(.*)$", text, re.M).group(1).split()) if "flags" in text else set()
    mhz = re.search(r"^cpu MHz\s*:\s*([\d.]+)", text, re.M)
    return flags, float(mhz.group(1)) if mhz else None


def nominal_peaks():
    """`({"fp32": GFLOP/s, "bf16": GFLOP/s}, description)` from the CPU's flags and clock (see the module notes)."""
    flags, mhz = _cpu_flags()
    cores = len(os.sched_getaffinity(0))
    lanes = 16 if "avx512f" in flags else 8 if "avx2" in flags else 4
    ghz = (mhz or 2000.0) / 1000
    fp32 = cores * ghz * 2 * lanes * 2
    if "amx_bf16" in flags:
        bf16, bf16_how = cores * ghz * 1024, "AMX: 1024 FLOPs/cycle/core"
    elif "avx512_bf16" in flags:
        bf16, bf16_how = 2 * fp32, "AVX512_BF16: 2x fp32"
    else:
        bf16, bf16_how = fp32, "no bf16 arithmetic: as fp32"
    isa = "AVX-512" if lanes == 16 else "AVX2" if lanes == 8 else "SSE"
    note = (f"{cores} cores x {ghz:.2f} GHz (cpuinfo) x 2 FMA pipes x {lanes} fp32 lanes ({isa}) x 2 = {fp32:.0f} "
            f"GFLOP/s fp32; bf16 {bf16:.0f} GFLOP/s ({bf16_how})")
    return {"fp32": fp32, "bf16": bf16}, note


def _best_seconds(fn, repeats=5):
    fn()  # warm-up: kernel selection, allocation
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def _tensorflow_gemm(precision, size):
    import tensorflow as tf

    dtype = tf.float32 if precision == "fp32" else tf.bfloat16
    a = tf.cast(tf.random.normal((size, size)), dtype)
    b = tf.cast(tf.random.normal((size, size)), dtype)
    return _best_seconds(lambda: tf.linalg.matmul(a, b).numpy())


def _torch_gemm(precision, size):
    import torch

    dtype = torch.float32 if precision == "fp32" else torch.bfloat16
    a, b = torch.randn(size, size).to(dtype), torch.randn(size, size).to(dtype)
    return _best_seconds(lambda: torch.matmul(a, b))


def gemm_ceiling(precision, size=GEMM_SIZE):
    """GFLOP/s of the fastest square matmul TensorFlow or PyTorch runs here.

    Args:
        precision: "fp32" or "bf16".
        size: the matrices' side.
    Returns: dict of `gflops` (the best), and `tensorflow` / `pytorch` GFLOP/s.
    """
    flops = 2 * size ** 3
    rates = {"tensorflow": flops / _tensorflow_gemm(precision, size) / 1e9,
             "pytorch": flops / _torch_gemm(precision, size) / 1e9}
    return {"gflops": max(rates.values()), **rates}


def main():
    peaks, note = nominal_peaks()
    print(f"nominal peak: {note}")
    for precision in ("fp32", "bf16"):
        ceiling = gemm_ceiling(precision)
        print(f"GEMM ceiling {precision}: {ceiling['gflops']:.0f} GFLOP/s (TensorFlow {ceiling['tensorflow']:.0f}, "
              f"PyTorch {ceiling['pytorch']:.0f}; {ceiling['gflops'] / peaks[precision] * 100:.0f}% of nominal)")
        print("RESULT " + json.dumps({"precision": precision, "nominal_gflops": peaks[precision], **ceiling}))


if __name__ == "__main__":
    main()
