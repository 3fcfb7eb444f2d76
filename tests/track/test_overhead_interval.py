"""The interval ``benchmarks/trackers.py`` prints beside its median overhead share: the sign
test's distribution-free interval of a median, checked against SciPy's binomial distribution."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from scipy.stats import binom

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def trackers_benchmark() -> ModuleType:
    """``benchmarks/trackers.py`` imported (its ``_timing`` from the benchmarks' folder)."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        spec = importlib.util.spec_from_file_location(
            "trackers_benchmark", BENCHMARKS / "trackers.py"
        )
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCHMARKS))
    return module


def _coverage(k: int, n: int) -> float:
    """P(k <= B <= n - k) for B ~ Binomial(n, 1/2): how often [x(k), x(n+1-k)] holds the
    median."""
    return float(binom.cdf(n - k, n, 0.5) - binom.cdf(k - 1, n, 0.5))


@pytest.mark.parametrize("n", range(1, 41))
def test_the_interval_is_the_narrowest_order_statistics_with_95_percent(
    trackers_benchmark: ModuleType, n: int
) -> None:
    values = np.random.default_rng(n).permutation(n).astype(float) * 0.01 - 0.05
    low, high = trackers_benchmark.median_interval(list(values))
    ordered = sorted(values)
    k = ordered.index(low) + 1
    assert high == ordered[n - k]
    assert k == 1 or _coverage(k, n) >= 0.95
    assert k + 1 > (n + 1) / 2 or _coverage(k + 1, n) < 0.95


def test_known_sizes(trackers_benchmark: ModuleType) -> None:
    values = [float(v) for v in range(20)]
    assert trackers_benchmark.median_interval(values) == (5.0, 14.0)  # x(6), x(15): 95.9 %
    assert trackers_benchmark.median_interval(values[:6]) == (0.0, 5.0)  # the range: 96.9 %
    assert trackers_benchmark.median_interval(values[:9]) == (1.0, 7.0)  # x(2), x(8): 96.1 %
