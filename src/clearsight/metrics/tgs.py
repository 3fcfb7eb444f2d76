"""Trajectory-grounding scores aggregated as the paper does (its §4; docs/methods.md §5):
within each benchmark first, then across benchmarks, each benchmark counting equally; for
TGS-pair, per axis first and then over the axes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from clearsight.metrics._checks import as_float_array, check_same_length
from clearsight.validate import InputError

__all__ = ["TgsPair", "benchmark_means", "tgs_pair", "tgs_self"]


def _labels(values: npt.ArrayLike, n: int, name: str) -> npt.NDArray[np.str_]:
    labels = np.asarray(values).astype(str)
    if labels.shape != (n,):
        raise InputError(f"{name}: {labels.size} labels for {n} values")
    return labels


def benchmark_means(benchmark: npt.ArrayLike, values: npt.ArrayLike) -> dict[str, float]:
    """The mean of the finite ``values`` of each benchmark (benchmarks with none left out)."""
    v = as_float_array(values, "values")
    b = _labels(benchmark, v.size, "benchmark")
    keep = np.isfinite(v)
    return {str(k): float(v[keep & (b == k)].mean()) for k in sorted(set(b[keep].tolist()))}


def tgs_self(benchmark: npt.ArrayLike, e_visible: npt.ArrayLike, e_masked: npt.ArrayLike) -> float:
    r"""TGS-self: how much the expected confidence falls when the model's own trajectory is
    hidden from the confidence slot,

    .. math::

        \mathrm{TGS}_\text{self} = \frac{1}{K} \sum_{k=1}^{K} \frac{1}{n_k}
        \sum_{i \in k} \big(E_i^\text{visible} - E_i^\text{masked}\big),

    over the K benchmarks with at least one item where both are finite (NaN with none).
    """
    vis = as_float_array(e_visible, "e_visible")
    masked = as_float_array(e_masked, "e_masked")
    check_same_length(vis, masked, "e_visible", "e_masked")
    means = benchmark_means(benchmark, vis - masked)
    return float(np.mean(list(means.values()))) if means else float("nan")


@dataclass(frozen=True)
class TgsPair:
    """TGS-pair: ``value`` the mean of ``per_axis`` over the axes present; ``per_axis[a]`` the
    mean over the benchmarks that have axis a of their mean ``E(good) - E(bad)``."""

    value: float
    per_axis: Mapping[str, float]


def tgs_pair(
    benchmark: npt.ArrayLike, axis: npt.ArrayLike, e_good: npt.ArrayLike, e_bad: npt.ArrayLike
) -> TgsPair:
    r"""TGS-pair from one row per good / bad pair (its benchmark, axis and the two expected
    confidences), aggregated per (benchmark, axis), then per axis, then over the axes:

    .. math::

        \mathrm{TGS}_a = \frac{1}{|K_a|} \sum_{k \in K_a} \frac{1}{n_{k,a}}
        \sum_{i \in (k, a)} \big(E_i^\text{good} - E_i^\text{bad}\big), \qquad
        \mathrm{TGS}_\text{pair} = \frac{1}{|A|} \sum_{a \in A} \mathrm{TGS}_a,

    :math:`K_a` the benchmarks with a finite pair on axis a and A the axes with any. An axis
    missing from some benchmarks (text answers have no answer edit) and unequal pair counts
    therefore weigh neither items nor benchmarks unequally, unlike averaging the axes within
    each item first.
    """
    good = as_float_array(e_good, "e_good")
    bad = as_float_array(e_bad, "e_bad")
    check_same_length(good, bad, "e_good", "e_bad")
    bench = _labels(benchmark, good.size, "benchmark")
    axes = _labels(axis, good.size, "axis")
    per_axis: dict[str, float] = {}
    for a in sorted(set(axes.tolist())):
        on = axes == a
        means = benchmark_means(bench[on], good[on] - bad[on])
        if means:
            per_axis[a] = float(np.mean(list(means.values())))
    value = float(np.mean(list(per_axis.values()))) if per_axis else float("nan")
    return TgsPair(value, per_axis)
