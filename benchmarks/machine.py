"""What bench_engine and bench_layers share: the settings that make a benchmark about the code rather than the
machine, and the interleaved timing loop with its paired ratios.

- One BLAS thread by default (`--threads N` on the command line to change it). BLAS reads its thread count when
  NumPy is first imported, so `use_blas_threads_from_argv()` must run before that import.
- glibc's allocator told to keep freed memory (`keep_freed_memory`). By default it hands blocks above 128 KiB back
  to the OS and faults them in again on the next allocation, so a step's ~1 MB arrays cost page faults or not
  depending on what the process allocated before (the same NumPy step measured 3.2 ms in one process, 6.5 ms in
  another).
- Contenders timed in turn within each repetition (`time_interleaved`), so that a noisy moment on a shared
  machine slows all of them alike, and ratios taken within a repetition (`paired_ratio`), so that drift cancels.
"""

from __future__ import annotations

import ctypes
import gc
import os
import statistics
import sys
import time


def threads_from_argv(default: int = 1) -> int:
    """The value of `--threads N` (or `--threads=N`) on the command line, else `default`."""
    for i, arg in enumerate(sys.argv):
        if arg == "--threads" and i + 1 < len(sys.argv):
            return int(sys.argv[i + 1])
        if arg.startswith("--threads="):
            return int(arg.split("=", 1)[1])
    return default


def use_blas_threads_from_argv(default: int = 1) -> int:
    """Set BLAS's thread count from `--threads` (call before NumPy is imported); returns it."""
    threads = threads_from_argv(default)
    for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[variable] = str(threads)
    return threads


def keep_freed_memory() -> bool:
    """Ask glibc to keep freed memory for reuse instead of returning it to the OS; False where that is not glibc."""
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return False
    m_trim_threshold, m_mmap_threshold = -1, -3
    return bool(libc.mallopt(m_mmap_threshold, 64 << 20) and libc.mallopt(m_trim_threshold, 512 << 20))


CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}  # this process's CPU time, or elapsed time


def time_interleaved(contenders: dict, repeats: int, steps: int, clock=time.process_time, warmup: int = 3):
    """Seconds per step of each contender, one entry per repetition: {name: [seconds, ...]}.

    Python's cycle collector runs before each timed block, so that no contender pays for another's garbage
    (micrograd's closures make reference cycles: collecting 10,000 of them took up to 100 ms in the middle of
    whichever contender came next)."""
    for step in contenders.values():
        for _ in range(warmup):
            step()
    samples = {name: [] for name in contenders}
    for _ in range(repeats):
        for name, step in contenders.items():
            gc.collect()
            start = clock()
            for _ in range(steps):
                step()
            samples[name].append((clock() - start) / steps)
    return samples


def paired_ratios(samples: dict[str, list[float]], name: str, baseline: str) -> list[float]:
    """name's time / baseline's time, repetition by repetition."""
    return [a / b for a, b in zip(samples[name], samples[baseline])]


def paired_ratio(samples: dict[str, list[float]], name: str, baseline: str) -> float:
    """The median over repetitions of name's time / baseline's time in the same repetition (drift cancels)."""
    return statistics.median(paired_ratios(samples, name, baseline))
