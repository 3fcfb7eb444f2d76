"""Timing helpers shared by the benchmark scripts: best-of-n wall time, printed as ratios.

Importing it also puts ``tests/`` on the path: the benchmarks share the tests' fixtures (the
tiny models of ``fixtures.hf_tiny``, the detector evaluation of ``fixtures.detector_eval``),
which are not shipped in the package.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))


def best_time(fn: Callable[[], Any], repeats: int = 7, warmup: int = 1) -> float:
    """Best wall time of ``fn()`` in seconds over ``repeats`` runs after ``warmup`` runs."""
    for _ in range(warmup):
        fn()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def best_times(
    fns: dict[str, Callable[[], Any]], repeats: int = 7, warmup: int = 1
) -> dict[str, float]:
    """Best wall time of each function, the functions run in turn within every repeat, so a
    ratio of two of them sees the same machine state (a slow spell of a shared machine hits
    both, not the one measured during it)."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def report(name: str, value: float, digits: int = 3) -> None:
    """Print one ``name: value`` line, the format every benchmark script uses."""
    print(f"{name}: {value:.{digits}f}", flush=True)
