"""Timing helpers shared by the benchmark scripts: best-of-n wall time, printed as ratios."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


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


def report(name: str, value: float, digits: int = 3) -> None:
    """Print one ``name: value`` line, the format every benchmark script uses."""
    print(f"{name}: {value:.{digits}f}", flush=True)
