"""Resident memory of this process, for the memory suite (Linux `/proc/self/status`)."""


def rss_mib(field="VmRSS"):
    """`VmRSS` (resident now) or `VmHWM` (the peak so far) in MiB; NaN where /proc has no such field."""
    with open("/proc/self/status", encoding="utf-8") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def memory_result(batch_size, after_epoch, **extra):
    """The memory suite's result dict: RSS after each epoch and the peak (MiB, rounded to 0.1)."""
    return {"batch_size": batch_size, **extra, "rss_after_epoch_mib": [round(m, 1) for m in after_epoch],
            "peak_rss_mib": round(rss_mib("VmHWM"), 1)}
