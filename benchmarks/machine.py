"""Settings that make a benchmark about the code rather than the machine, shared by bench_engine and bench_layers.

- One BLAS thread by default (`--threads N` on the command line to change it). BLAS reads its thread count when
  NumPy is first imported, so `use_blas_threads_from_argv()` must run before that import.
- glibc's allocator told to keep freed memory (`keep_freed_memory`). By default it hands blocks above 128 KiB back
  to the OS and faults them in again on the next allocation, so a step's ~1 MB arrays cost page faults or not
  depending on what the process allocated before (the same NumPy step measured 3.2 ms in one process, 6.5 ms in
  another).
"""

from __future__ import annotations

import ctypes
import os
import sys


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
