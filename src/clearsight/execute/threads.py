"""How many CPU threads a run's process computes with: one unless told otherwise.

torch, the BLAS library and numba each start a thread per core by default. On a shared
two-core machine (load 7-8) SmolLM2 generated four 48-token replies in 9.6-9.9 s with one torch
thread and in 102-148 s with two (README, "On a CPU"): threads that wait for a busy core stall
each other. So every process of a run — the serial executor's, and
each pool worker — uses one thread unless ``--threads N`` (``threads=N``) says otherwise or
``OMP_NUM_THREADS`` is set; the run's manifest records the number (``cpu_threads``).
"""

from __future__ import annotations

import os
import sys

#: The variables the thread pools read when their library is imported.
THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "NUMBA_NUM_THREADS",
)


def run_threads(requested: int | None) -> int:
    """The threads a run's process uses: ``requested``, else a positive ``OMP_NUM_THREADS``,
    else 1."""
    if requested is not None:
        return requested
    given = os.environ.get("OMP_NUM_THREADS", "").strip()
    return int(given) if given.isdigit() and int(given) > 0 else 1


def use_threads(threads: int) -> None:
    """Make this process (and the processes it spawns) compute with ``threads`` threads: the
    variables for libraries imported later, and torch, numba and BLAS where already imported
    (numba up to the pool it started with).

    Once numba is imported its ``NUMBA_NUM_THREADS`` is left as it is: numba reads it again
    before every compilation and refuses to compile when it no longer names the pool it
    launched (a second run of another thread count in one process would stop every later
    compilation), so the running pool is narrowed with ``set_num_threads`` instead."""
    numba = sys.modules.get("numba")
    for name in THREAD_VARIABLES:
        if not (numba is not None and name == "NUMBA_NUM_THREADS"):
            os.environ[name] = str(threads)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(threads)
    if numba is not None:
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # without threadpoolctl a BLAS already loaded keeps its threads
        return
    threadpool_limits(threads)
