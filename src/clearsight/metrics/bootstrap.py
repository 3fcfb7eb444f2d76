"""Seeded percentile bootstrap over clusters (images) and two-stage over benchmarks
(docs/methods.md §4).

Items from the same image (its sweep levels, tasks, wordings) are correlated, so the unit of
resampling is the image, not the item: resampling items would treat 8 levels x 2 tasks of one
image as 16 independent observations and give intervals that are too narrow.

A cluster bootstrap draw is a vector of counts ``w_c`` (how often cluster c was drawn, summing
to the number of clusters C). Any statistic built from per-cluster sums is then a matrix
product: for the mean, with per-cluster sums ``S_c`` and item counts ``n_c``, the n_boot
replicate means are ``(W @ S) / (W @ n)`` for the ``(n_boot, C)`` weight matrix W. No loop over
draws. ``W`` takes ``n_boot * C`` floats (2000 x 10 000 clusters = 160 MB).

Determinism: all randomness comes from ``numpy.random.default_rng(seed)``; no global state. The
same ``seed`` and number of clusters give the same W, so separate calls with one seed are paired
(the same resampled images) and their replicates may be combined row by row.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from clearsight.metrics._checks import (
    FloatArray,
    as_float_array,
    as_labels,
    check_finite,
    check_level,
    check_positive_int,
    check_same_length,
)
from clearsight.validate import InputError

__all__ = [
    "BootstrapResult",
    "ClusterSums",
    "Interval",
    "bootstrap_weights",
    "cluster_bootstrap",
    "cluster_bootstrap_mean",
    "cluster_sums",
    "contain_estimate",
    "percentile_interval",
    "two_stage_bootstrap",
    "two_stage_replicates",
    "two_stage_statistic",
]

Seed = int | np.random.Generator
IntArray = npt.NDArray[np.int64]

# Largest number of weight-matrix entries drawn at once in the two-stage bootstrap.
_CHUNK_ELEMENTS = 1 << 22

# Relative rounding width within which an interval bound and its estimate are "the same number".
# The estimate and the replicates are sums over up to ~10^4 clusters computed along different
# paths (a 1-row and a B-row matrix product, or a direct mean); their rounding error is bounded by
# about n * 2**-53 ~ 1e-12 of the magnitude. Real bootstrap spread is many orders larger.
_ROUNDING_RTOL = 1e-12
# Absolute floor of that width, for statistics whose exact value is 0 (a difference of two equal
# signals): rounding leaves them at +-1e-17, and no reported statistic is meaningful below 1e-15.
_ROUNDING_ATOL = 1e-15


@dataclass(frozen=True)
class Interval:
    """A point estimate and its percentile bootstrap interval at ``level`` (``n_boot`` draws)."""

    estimate: float
    low: float
    high: float
    n_boot: int
    level: float


@dataclass(frozen=True)
class BootstrapResult:
    """Replicates of a (possibly vector-valued) statistic and their percentile intervals.

    ``estimate``: the statistic on the original sample (all cluster weights 1), shape ``k``
    (``()`` for a scalar statistic). ``replicates``: shape ``(n_boot, *k)``. ``low``, ``high``:
    percentile bounds per component, NaN replicates ignored. ``n_undefined``: how many
    replicates were NaN per component (report it when it is not 0).
    """

    estimate: FloatArray
    replicates: FloatArray
    low: FloatArray
    high: FloatArray
    n_boot: int
    level: float
    n_undefined: npt.NDArray[np.int64]

    def interval(self, index: int | tuple[int, ...] = ()) -> Interval:
        """The :class:`Interval` of one component (``()`` for a scalar statistic)."""
        return Interval(
            estimate=float(self.estimate[index]),
            low=float(self.low[index]),
            high=float(self.high[index]),
            n_boot=self.n_boot,
            level=self.level,
        )


@dataclass(frozen=True)
class ClusterSums:
    """Per-cluster (and optionally per-column) sums and counts of item values.

    ``clusters``: the distinct cluster labels, sorted (``np.unique`` order): row c of ``sums``
    and ``counts`` and column c of a bootstrap weight matrix belong to ``clusters[c]``.
    ``columns``: the distinct column labels (e.g. sweep levels) or None. ``sums``/``counts``:
    shape ``(C,)``, or ``(C, K)`` with columns.
    """

    clusters: npt.NDArray[np.generic]
    columns: npt.NDArray[np.generic] | None
    sums: FloatArray
    counts: FloatArray


def _rng(seed: Seed) -> np.random.Generator:
    if seed is None or not isinstance(seed, int | np.integer | np.random.Generator):
        raise InputError(
            f"seed must be an int or a numpy Generator (explicit, reproducible), got {seed!r}"
        )
    return np.random.default_rng(seed)


def _multinomial_weights(rng: np.random.Generator, n: int, size: int) -> IntArray:
    """``size`` draws of how often each of n units is picked in n picks with replacement."""
    return rng.multinomial(n, np.full(n, 1.0 / n), size=size).astype(np.int64)


def bootstrap_weights(n_clusters: int, n_boot: int, seed: Seed) -> IntArray:
    """Resampling counts for a bootstrap over ``n_clusters`` clusters, shape (n_boot, n_clusters).

    Row b is ``Multinomial(C, (1/C, ..., 1/C))``: the number of times each cluster appears
    when C clusters are drawn uniformly with replacement, so each row sums to C. This is the
    same distribution as counting ``rng.integers(C, size=C)``, but a form that turns
    resampled statistics into matrix products. Drawn from ``np.random.default_rng(seed)``
    (a Generator passed as ``seed`` is used, and advanced, directly).
    """
    c = check_positive_int(n_clusters, "n_clusters")
    b = check_positive_int(n_boot, "n_boot")
    return _multinomial_weights(_rng(seed), c, b)


def _percentile_bounds(samples: FloatArray, level: float) -> tuple[FloatArray, FloatArray]:
    """NaN-ignoring percentile bounds along axis 0 (all-NaN components give NaN quietly)."""
    lv = check_level(level)
    q = [50.0 - 50.0 * lv, 50.0 + 50.0 * lv]  # not 50 * (1 - lv): 1 - 0.9 is 0.0999...98
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # "All-NaN slice encountered"
        low, high = np.nanpercentile(samples, q, axis=0)
    return np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)


def contain_estimate(
    estimate: npt.ArrayLike, low: npt.ArrayLike, high: npt.ArrayLike
) -> tuple[FloatArray, FloatArray]:
    """Bounds moved onto the estimate where they miss it by rounding alone.

    The estimate (all cluster weights 1) and the replicates are computed along different float
    paths, so a statistic that is constant across clusters gives replicates a few ulps away
    from its estimate and an interval that can exclude its own estimate by ~1e-16. With
    ``tol = 1e-12 * max(|estimate|, |low|, |high|) + 1e-15`` (rounding of a sum over up to
    ~10^4 clusters):

    - ``high - low <= tol`` and the estimate within ``tol`` of both: the interval is ``[e, e]``
      exactly (a constant statistic);
    - otherwise a bound beyond the estimate by at most ``tol`` is set to the estimate.

    A bound farther from the estimate is left alone: a percentile interval may exclude its
    estimate for real (a skewed or biased statistic). NaN components are returned unchanged.
    """
    est = np.asarray(estimate, dtype=np.float64)
    lo = np.array(low, dtype=np.float64, copy=True)
    hi = np.array(high, dtype=np.float64, copy=True)
    scale = np.maximum(np.maximum(np.abs(est), np.abs(lo)), np.abs(hi))
    tol = _ROUNDING_RTOL * scale + _ROUNDING_ATOL
    with np.errstate(invalid="ignore"):
        flat = (hi - lo <= tol) & (np.abs(est - lo) <= tol) & (np.abs(hi - est) <= tol)
        lo = np.where(flat | ((lo > est) & (lo - est <= tol)), est, lo)
        hi = np.where(flat | ((hi < est) & (est - hi <= tol)), est, hi)
    return lo, hi


def percentile_interval(samples: npt.ArrayLike, level: float = 0.95) -> tuple[float, float]:
    """Percentile interval ``(q_{(1-level)/2}, q_{(1+level)/2})`` of bootstrap replicates.

    Quantiles use numpy's default linear interpolation between order statistics (Hyndman &
    Fan type 7). NaN replicates (a statistic undefined on that resample, e.g. an AUROC of a
    resample with no wrong answers) are ignored: the interval is that of the defined
    replicates, i.e. conditional on the statistic being defined; count the NaNs and report
    them when they are more than a few. All NaN gives ``(nan, nan)``.
    """
    arr = as_float_array(samples, "samples")
    low, high = _percentile_bounds(arr, level)
    return float(low), float(high)


def cluster_sums(
    values: npt.ArrayLike, clusters: npt.ArrayLike, columns: npt.ArrayLike | None = None
) -> ClusterSums:
    """Sum and count ``values`` per cluster (and per column, if ``columns`` is given).

    ``values``: one number per item (bool or 0/1 for accuracy); ``clusters``: the item's
    cluster label (image id); ``columns``: an optional second label (e.g. sweep level index)
    to get ``(C, K)`` tables. With a bootstrap weight matrix W (n_boot, C), the resampled
    per-column means are ``(W @ sums) / (W @ counts)``.
    """
    vals = check_finite(as_float_array(values, "values"), "values")
    codes = as_labels(clusters, "clusters")
    check_same_length(vals, codes.astype(np.float64), "values", "clusters")
    labels = np.unique(np.asarray(clusters))
    n_c = labels.size
    if columns is None:
        counts = np.bincount(codes, minlength=n_c).astype(np.float64)
        sums = np.bincount(codes, weights=vals, minlength=n_c).astype(np.float64)
        return ClusterSums(clusters=labels, columns=None, sums=sums, counts=counts)
    col_codes = as_labels(columns, "columns")
    check_same_length(vals, col_codes.astype(np.float64), "values", "columns")
    col_labels = np.unique(np.asarray(columns))
    n_k = col_labels.size
    flat = codes * n_k + col_codes
    counts = np.bincount(flat, minlength=n_c * n_k).astype(np.float64).reshape(n_c, n_k)
    sums = np.bincount(flat, weights=vals, minlength=n_c * n_k).astype(np.float64).reshape(n_c, n_k)
    return ClusterSums(clusters=labels, columns=col_labels, sums=sums, counts=counts)


def _n_clusters(clusters: int | npt.ArrayLike) -> int:
    if isinstance(clusters, int | np.integer) and not isinstance(clusters, bool):
        return check_positive_int(int(clusters), "clusters")
    codes = as_labels(clusters, "clusters")
    return int(codes.max()) + 1


def _estimate_and_replicates(
    stat: Callable[[FloatArray], npt.ArrayLike], W: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """``stat`` of the original sample (every cluster weight 1: one row) and of the bootstrap
    weights ``W`` (one row each); InputError when ``stat`` does not return one row per weight
    row of one shape, since the interval would then mix up draws."""
    b, c = W.shape
    est = np.asarray(stat(np.ones((1, c))), dtype=np.float64)
    reps = np.asarray(stat(W), dtype=np.float64)
    if est.ndim == 0 or est.shape[0] != 1:
        raise InputError(f"stat must return one row per weight row: 1 row gave shape {est.shape}")
    if reps.shape[0] != b or reps.shape[1:] != est.shape[1:]:
        raise InputError(
            f"stat must return shape ({b}, *k) for {b} weight rows, got {reps.shape} "
            f"(and {est.shape} for one row)"
        )
    return est, reps


def cluster_bootstrap(
    stat: Callable[[FloatArray], npt.ArrayLike],
    clusters: int | npt.ArrayLike,
    n_boot: int = 2000,
    level: float = 0.95,
    seed: Seed = 0,
) -> BootstrapResult:
    """Percentile cluster bootstrap of any statistic written in terms of cluster weights.

    ``stat(W)`` receives a float ``(rows, C)`` matrix of cluster weights and returns one
    statistic per row, shape ``(rows, *k)``: the statistic of the sample in which cluster c
    appears ``W[r, c]`` times. It is called twice: once with ``W = ones((1, C))`` (the
    original sample, giving ``estimate``) and once with the ``(n_boot, C)`` multinomial
    weights of :func:`bootstrap_weights` (giving ``replicates``). Write ``stat`` with matrix
    products of per-cluster sums (:func:`cluster_sums`) and it is vectorised over draws.

    ``clusters``: the number of clusters C, or the cluster label of every item (then C is
    the number of distinct labels and column c is the c-th label in sorted order, the order
    of :func:`cluster_sums`).

    Example: an accuracy-vs-level curve, its crossing and W in one bootstrap::

        acc = cluster_sums(correct, image_id, columns=level_index)       # (C, L)
        def stat(W):
            curve = (W @ acc.sums) / (W @ acc.counts)                     # (rows, L)
            cr = crossing_visibility_batch(levels, curve, clean(W), floor(W))
            return np.column_stack([curve, np.log10(cr.visibility_m)])
        res = cluster_bootstrap(stat, acc.clusters.size, seed=seed)

    NaN replicates are ignored by the interval and counted in ``n_undefined``.
    """
    W = bootstrap_weights(_n_clusters(clusters), n_boot, seed).astype(np.float64)
    lv = check_level(level)
    est, reps = _estimate_and_replicates(stat, W)
    low, high = contain_estimate(est[0], *_percentile_bounds(reps, lv))
    return BootstrapResult(
        estimate=est[0],
        replicates=reps,
        low=low,
        high=high,
        n_boot=W.shape[0],
        level=lv,
        n_undefined=np.isnan(reps).sum(axis=0).astype(np.int64),
    )


def cluster_bootstrap_mean(
    values: npt.ArrayLike,
    clusters: npt.ArrayLike,
    n_boot: int = 2000,
    level: float = 0.95,
    seed: Seed = 0,
) -> Interval:
    """Mean of ``values`` with a percentile bootstrap interval that resamples clusters.

    Estimate: ``mean(values)``. Replicates: with per-cluster sums ``S_c``, item counts
    ``n_c`` and the ``(n_boot, C)`` weights W of :func:`bootstrap_weights`, the replicate
    means are ``(W @ S) / (W @ n)``: the mean over all items of the resampled clusters,
    clusters drawn with replacement (a cluster drawn twice counts twice). One matrix
    product, no loop over draws. Interval: :func:`percentile_interval` at ``level``.
    """
    cs = cluster_sums(values, clusters)
    b = check_positive_int(n_boot, "n_boot")
    lv = check_level(level)
    W = _multinomial_weights(_rng(seed), cs.clusters.size, b).astype(np.float64)
    reps = (W @ cs.sums) / (W @ cs.counts)
    return _interval(float(cs.sums.sum() / cs.counts.sum()), reps, lv)


def two_stage_bootstrap(
    values: npt.ArrayLike,
    benchmarks: npt.ArrayLike,
    n_boot: int = 5000,
    level: float = 0.95,
    seed: Seed = 0,
) -> Interval:
    """Mean over benchmarks of per-benchmark means, with a two-stage bootstrap interval.

    Estimate: ``(1/K) sum_k mean(values in benchmark k)``; each benchmark counts equally
    whatever its size. One replicate: draw K benchmarks with replacement (counts ``u_k``,
    multinomial); for each of the ``u_k`` copies of benchmark k draw its ``m_k`` items with
    replacement, independently per copy, and take the mean; the replicate is the mean of
    these K copy means: ``(1/K) sum_k sum_{j<=u_k} mean_kj``. This carries both sources of
    uncertainty: which benchmarks make the suite, and which items make a benchmark.

    Vectorised per benchmark: all copies of benchmark k over all draws get their item
    weights in one multinomial draw and their means in one matrix product (in chunks of at
    most 2**22 weights). The loop runs over benchmarks, not draws. Randomness: one
    ``default_rng(seed)``, benchmark counts first, then item counts per benchmark in sorted
    label order; with a single benchmark this equals :func:`cluster_bootstrap_mean` with
    every item its own cluster and the same seed.
    """
    lv = check_level(level)
    estimate, reps = two_stage_replicates(values, benchmarks, n_boot, seed)
    return _interval(estimate, reps, lv)


def _interval(estimate: float, reps: FloatArray, level: float) -> Interval:
    """``estimate`` with the percentile interval of its one-dimensional bootstrap replicates
    ``reps`` at ``level``, widened to contain the estimate (:func:`contain_estimate`)."""
    low, high = contain_estimate(estimate, *_percentile_bounds(reps, level))
    return Interval(estimate, float(low), float(high), n_boot=reps.size, level=level)


def two_stage_replicates(
    values: npt.ArrayLike, benchmarks: npt.ArrayLike, n_boot: int = 5000, seed: Seed = 0
) -> tuple[float, FloatArray]:
    """The estimate and the ``n_boot`` replicates of :func:`two_stage_bootstrap` (same draws
    for the same seed). Two calls with the same seed over the same set of benchmark labels
    draw the same benchmarks in every replicate (the benchmark counts come first from the
    generator), so averaging their replicates gives replicates of the averaged statistic."""
    vals = check_finite(as_float_array(values, "values"), "values")
    codes = as_labels(benchmarks, "benchmarks")
    check_same_length(vals, codes.astype(np.float64), "values", "benchmarks")
    n_bench = int(codes.max()) + 1
    order = np.argsort(codes, kind="stable")
    groups = np.split(vals[order], np.cumsum(np.bincount(codes, minlength=n_bench))[:-1])
    estimate = float(np.mean([g.mean() for g in groups]))
    stats = [_mean_statistic(g) for g in groups]
    reps = two_stage_statistic(stats, [g.size for g in groups], n_boot, seed)
    return estimate, reps[:, 0]


def _mean_statistic(items: FloatArray) -> Callable[[FloatArray], FloatArray]:
    """The mean of ``items`` as a statistic of item weights (one column)."""
    return lambda w: ((w @ items) / items.size)[:, None]


def two_stage_statistic(
    stats: Sequence[Callable[[FloatArray], FloatArray]],
    sizes: Sequence[int],
    n_boot: int = 5000,
    seed: Seed = 0,
) -> FloatArray:
    """Two-stage bootstrap replicates of any per-benchmark statistic averaged over benchmarks.

    Benchmark k has ``sizes[k]`` items and a statistic ``stats[k](W)`` of a ``(rows, m_k)``
    matrix of item weights returning ``(rows, j)`` values (the statistic of the sample in
    which item i appears ``W[r, i]`` times; e.g. ECE and AUROC from
    :func:`~clearsight.metrics.calibration_statistic` with every item its own cluster). One
    replicate draws K benchmarks with replacement (counts ``u_k``), then the items of each copy
    of benchmark k with replacement, independently per copy; column j of the replicate is the
    mean of ``s_j`` over the drawn copies where it is finite (NaN where it is in none, e.g.
    AUROC of copies with one class only). Returns the ``(n_boot, j)`` replicates.

    The draws are those of :func:`two_stage_bootstrap` for the same seed and benchmarks:
    benchmark counts first, then item counts per benchmark in order, in chunks of at most
    2**22 weights; the loop runs over benchmarks, not draws.
    """
    b = check_positive_int(n_boot, "n_boot")
    if len(stats) != len(sizes) or not stats:
        raise InputError(f"{len(stats)} statistics for {len(sizes)} benchmarks")
    rng = _rng(seed)
    bench_w = _multinomial_weights(rng, len(sizes), b)  # (n_boot, K)
    sums: list[FloatArray] = []  # per chunk: (n_boot, j) sums of finite values, then counts
    for k, (stat, m) in enumerate(zip(stats, sizes, strict=True)):
        draw_of_copy = np.repeat(np.arange(b), bench_w[:, k])  # draw index of every copy
        chunk = max(1, _CHUNK_ELEMENTS // m)
        for start in range(0, draw_of_copy.size, chunk):
            rows = draw_of_copy[start : start + chunk]
            item_w = _multinomial_weights(rng, m, rows.size).astype(np.float64)
            values = np.asarray(stat(item_w), dtype=np.float64)
            finite = np.isfinite(values)
            sums.append(_per_draw(rows, np.where(finite, values, 0.0), b))
            sums.append(_per_draw(rows, finite.astype(np.float64), b))
    totals, defined = sum(sums[0::2]), sum(sums[1::2])
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(np.where(defined > 0, totals / defined, np.nan), dtype=np.float64)


def _per_draw(rows: npt.NDArray[np.int64], values: FloatArray, n_boot: int) -> FloatArray:
    """``values`` (one row per copy) summed per draw ``rows``: shape ``(n_boot, j)``."""
    return np.column_stack(
        [np.bincount(rows, weights=values[:, j], minlength=n_boot) for j in range(values.shape[1])]
    )
