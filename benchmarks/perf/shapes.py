"""Model shapes the performance suite measures, their FLOPs, and this machine's peak.

FLOPs count a multiply-add as 2. Encoder forward per sequence of length s, per layer:
  projections q, k, v, output: 4 * 2 * s * h^2; feed-forward: 2 * 2 * s * h * i;
  attention scores and the weighted sum: 2 * 2 * s^2 * h.
Embeddings, LayerNorm, softmax, GELU and the pooler are left out (under 1% at these shapes).
A training step is counted as 3x the forward pass (backward = 2x forward), the usual convention.
"""

import os
import re

SHAPES = {
    # name: (layers, hidden, heads, intermediate)
    "minilm": (6, 384, 12, 1536),       # all-MiniLM-L6-v2
    "base": (12, 768, 12, 3072),        # BERT-Base
}
VOCAB_SIZE = 30522


def encoder_forward_flops(shape, seq_length):
    """FLOPs of one sequence through the encoder (see the module notes)."""
    layers, hidden, _, intermediate = SHAPES[shape]
    per_layer = 8 * seq_length * hidden ** 2 + 4 * seq_length * hidden * intermediate + 4 * seq_length ** 2 * hidden
    return layers * per_layer


def _cpu_flags():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return set(), None
    flags = set(re.search(r"^flags\s*:\s*(.*)$", text, re.M).group(1).split()) if "flags" in text else set()
    mhz = re.search(r"^cpu MHz\s*:\s*([\d.]+)", text, re.M)
    return flags, float(mhz.group(1)) if mhz else None


def machine_peak():
    """`(fp32 GFLOP/s, description)`: cores x GHz x FMA units (2) x fp32 lanes x 2 FLOPs per FMA.

    Lanes: 16 with AVX-512, 8 with AVX2 (two 256-bit FMA pipes per core assumed, as on Zen 3/4 and
    Skylake-SP and later). The clock is /proc/cpuinfo's current MHz, so turbo can make the real peak higher.
    """
    flags, mhz = _cpu_flags()
    cores = len(os.sched_getaffinity(0))
    lanes = 16 if "avx512f" in flags else 8 if "avx2" in flags else 4
    ghz = (mhz or 2000.0) / 1000
    peak = cores * ghz * 2 * lanes * 2
    extras = [f for f in ("avx512_bf16", "amx_bf16", "avx512_vnni") if f in flags]
    isa = "AVX-512" if lanes == 16 else "AVX2" if lanes == 8 else "SSE"
    note = (f"{cores} cores x {ghz:.2f} GHz x 2 FMA pipes x {lanes} fp32 lanes ({isa}) x 2 = {peak:.0f} GFLOP/s fp32; "
            f"bf16 hardware: {', '.join(extras) or 'none (bf16 is converted to fp32 for the arithmetic)'}")
    return peak, note
