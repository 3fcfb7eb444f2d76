"""Trajectory-Grounding Scores from elicited confidences (docs/methods.md §5; the paper's §4,
App. B.2/C.1).

* **TGS-self** = mean over items of ``E(rationale visible) - E(rationale masked)``, the rationale
  (vision + reasoning) hidden from every later position by attention masking, the answer kept
  visible. Positive: confidence reads the trajectory; ~0: blind; negative: masking raises it.
* **Masking curve**: mean ``E`` at masked shares r in {0, .25, .5, .75, 1} of rationale tokens,
  and its change from r = 0, on the items valid at every share (:func:`masking_curve`).
* **TGS-pair** per axis = mean of ``E(good) - E(bad)`` over pairs differing on that axis
  (within each benchmark, then over the benchmarks that have the axis); the averaged TGS-pair is
  the mean over the axes of those (:func:`clearsight.metrics.tgs_pair`), never a mean over
  axes inside each item.
* Aggregation: within each benchmark, then across benchmarks (each counts equally), with
  two-stage percentile bootstrap intervals (:func:`clearsight.metrics.two_stage_bootstrap`,
  5000 draws by default). ECE and AUROC of the visible self confidence likewise: each
  benchmark's own, averaged over the benchmarks, with the same two-stage bootstrap; beside
  them, labelled ``_pooled``, the same over all items pooled, and AURC and E-AURC, with an
  item bootstrap (:func:`calibration_scores`).

Inputs are plain arrays or a :class:`pandas.DataFrame` of elicitation read-outs with columns
``problem``, ``benchmark``, ``variant`` and ``expected`` (see
:class:`clearsight.grounding.results.GroundingResults`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from clearsight.metrics.bootstrap import (
    Interval,
    cluster_bootstrap,
    contain_estimate,
    percentile_interval,
    two_stage_bootstrap,
    two_stage_replicates,
    two_stage_statistic,
)
from clearsight.metrics.calibration import auroc, calibration_statistic, ece
from clearsight.metrics.selective import risk_coverage
from clearsight.metrics.tgs import benchmark_means, tgs_pair
from clearsight.validate import InputError

if TYPE_CHECKING:
    import pandas as pd

#: The masked shares of the masking curve.
MASK_RATIOS: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75, 1.0)
AXES: tuple[str, ...] = ("vision", "reasoning", "answer")


def self_variant(r: float) -> str:
    """Variant name of a self-trajectory elicitation with share ``r`` of rationale masked."""
    return f"self/r{r:.2f}"


def bench_variant(axis: str | None) -> str:
    """Variant name of the good side (``axis`` None) or of an axis's bad side."""
    return "bench/good" if axis is None else f"bench/{axis}/bad"


@dataclass(frozen=True)
class Score:
    """A score with its interval and how many items and benchmarks it rests on."""

    name: str
    interval: Interval
    n_items: int
    n_benchmarks: int
    sd_benchmarks: float = float("nan")
    """The SD (ddof 1) of the per-benchmark values the estimate averages (NaN with one)."""


def _nan_interval(n_boot: int) -> Interval:
    return Interval(float("nan"), float("nan"), float("nan"), n_boot, 0.95)


def two_stage_score(
    name: str,
    values: npt.ArrayLike,
    benchmarks: Sequence[str],
    n_boot: int = 5000,
    seed: int = 0,
) -> Score:
    """Mean over benchmarks of per-benchmark means of ``values``, two-stage bootstrap CI, and
    the SD across the benchmark means."""
    v = np.asarray(values, dtype=np.float64)
    keep = np.isfinite(v)
    b = np.asarray(list(benchmarks), dtype=object)
    if v.shape != b.shape:
        raise InputError(f"{len(b)} benchmark labels for {v.size} values")
    v, b = v[keep], b[keep]
    if v.size == 0:
        return Score(name, _nan_interval(n_boot), 0, 0)
    interval = two_stage_bootstrap(v, b.astype(str), n_boot=n_boot, seed=seed)
    sd = _sd(list(benchmark_means(b.astype(str), v).values()))
    return Score(name, interval, int(v.size), len(set(b.tolist())), sd)


def _sd(values: Sequence[float]) -> float:
    """Sample SD (ddof 1), NaN for fewer than two values."""
    return float(np.std(values, ddof=1)) if len(values) > 1 else float("nan")


def pair_score(d: pd.DataFrame, n_boot: int = 5000, seed: int = 0) -> Score:
    """TGS-pair as the paper averages it (:func:`clearsight.metrics.tgs_pair`: per benchmark
    and axis, per axis over benchmarks, then over the axes), from the per-axis columns of
    :func:`item_differences`; its interval from the per-axis two-stage replicates averaged
    over the axes (the same seed: the axes share the benchmark draw of each replicate when
    they cover the same benchmarks, else their draws are independent)."""
    cols = [f"tgs_pair_{a}" for a in AXES]
    long = d.melt(id_vars=["benchmark"], value_vars=cols, var_name="axis", value_name="diff")
    long = long[np.isfinite(long["diff"].to_numpy(float))]
    if long.empty:
        return Score("tgs_pair", _nan_interval(n_boot), 0, 0)
    zeros = np.zeros(len(long))
    pair = tgs_pair(long["benchmark"], long["axis"], long["diff"].to_numpy(float), zeros)
    reps = [
        two_stage_replicates(sub["diff"], sub["benchmark"].astype(str), n_boot, seed)[1]
        for _, sub in long.groupby("axis", sort=True)
    ]
    low, high = contain_estimate(pair.value, *percentile_interval(np.mean(reps, axis=0)))
    interval = Interval(pair.value, float(low), float(high), n_boot, 0.95)
    # each benchmark's own TGS-pair: the mean over its axes of its per-axis means
    per_bench = long.groupby(["benchmark", "axis"])["diff"].mean().groupby("benchmark").mean()
    return Score("tgs_pair", interval, len(long), len(per_bench), _sd(per_bench.tolist()))


#: The scores :func:`calibration_scores` gives, in order: ECE and AUROC averaged over
#: benchmarks (the paper's aggregation of every grounding number), the same two pooled over
#: items, and the selective-prediction AURC and E-AURC (pooled).
CALIBRATION_SCORES = ("ECE", "AUROC", "ECE_pooled", "AUROC_pooled", "AURC", "E_AURC")


def calibration_scores(
    confidence: npt.ArrayLike,
    correct: npt.ArrayLike,
    benchmarks: Sequence[str],
    n_boot: int = 5000,
    seed: int = 0,
) -> dict[str, Score]:
    """ECE (10 right-closed bins) and AUROC of ``confidence`` for ``correct``, keyed by
    :data:`CALIBRATION_SCORES`:

    * ``ECE``, ``AUROC``: the mean over benchmarks of each benchmark's own ECE / AUROC (the
      paper's aggregation: within each benchmark, then across, each counting equally; a
      benchmark whose answers are all right or all wrong has no AUROC and is left out of its
      mean), with the two-stage bootstrap interval of every other grounding score
      (:func:`~clearsight.metrics.two_stage_statistic`, the same draws as
      :func:`two_stage_score`) and the SD across the benchmark values;
    * ``ECE_pooled``, ``AUROC_pooled``: the same over all items pooled, item bootstrap;
    * ``AURC``, ``E_AURC``: selective prediction (:func:`~clearsight.metrics.risk_coverage`)
      over the pooled items, item bootstrap.

    NaN replicates (AUROC of a draw with one class) are ignored by the intervals."""
    c = np.asarray(confidence, dtype=np.float64)
    y = np.asarray(correct, dtype=np.float64)
    b = np.asarray(list(benchmarks), dtype=object)
    if not c.shape == y.shape == b.shape:
        raise InputError(f"{c.size} confidences, {y.size} outcomes, {b.size} benchmark labels")
    keep = np.isfinite(c)
    c, y, b = c[keep], y[keep], b[keep].astype(str)
    if c.size == 0:
        return {k: Score(k, _nan_interval(n_boot), 0, 0) for k in CALIBRATION_SCORES}
    return _averaged_calibration(c, y, b, n_boot, seed) | _pooled_calibration(c, y, n_boot, seed)


def _averaged_calibration(
    c: npt.NDArray[np.float64],
    y: npt.NDArray[np.float64],
    b: npt.NDArray[np.str_],
    n_boot: int,
    seed: int,
) -> dict[str, Score]:
    """``ECE`` and ``AUROC`` as means over benchmarks of per-benchmark values, two-stage
    bootstrap (see :func:`calibration_scores`)."""
    names = sorted(set(b.tolist()))
    stats = []
    for name in names:
        inside = b == name
        full = calibration_statistic(c[inside], y[inside], np.arange(int(inside.sum())))
        stats.append(_ece_auroc(full))
    sizes = [int((b == name).sum()) for name in names]
    per = np.vstack([stat(np.ones((1, m)))[0] for stat, m in zip(stats, sizes, strict=True)])
    reps = two_stage_statistic(stats, sizes, n_boot, seed)
    out = {}
    for j, key in enumerate(("ECE", "AUROC")):
        values = per[np.isfinite(per[:, j]), j]
        estimate = float(values.mean()) if values.size else float("nan")
        interval = _interval_of(estimate, reps[:, j], n_boot)
        n_items = sum(m for m, v in zip(sizes, per[:, j], strict=True) if np.isfinite(v))
        out[key] = Score(key, interval, n_items, int(values.size), _sd(values.tolist()))
    return out


def _ece_auroc(
    full: Callable[[npt.NDArray[np.float64]], npt.NDArray[np.float64]],
) -> Callable[[npt.NDArray[np.float64]], npt.NDArray[np.float64]]:
    """ECE and AUROC (columns 0 and 3 of :data:`~clearsight.metrics.CALIBRATION_STATS`) of a
    :func:`~clearsight.metrics.calibration_statistic`."""
    return lambda w: full(w)[:, [0, 3]]


def _interval_of(estimate: float, reps: npt.NDArray[np.float64], n_boot: int) -> Interval:
    """``estimate`` with the 95 % percentile interval of its finite replicates ``reps``."""
    finite = reps[np.isfinite(reps)]
    if not np.isfinite(estimate) or finite.size == 0:
        return _nan_interval(n_boot)
    low, high = contain_estimate(estimate, *percentile_interval(finite))
    return Interval(estimate, float(low), float(high), n_boot, 0.95)


def _pooled_calibration(
    c: npt.NDArray[np.float64], y: npt.NDArray[np.float64], n_boot: int, seed: int
) -> dict[str, Score]:
    """``ECE_pooled``, ``AUROC_pooled``, ``AURC`` and ``E_AURC`` over the pooled items, item
    bootstrap (see :func:`calibration_scores`)."""
    keys = ("ECE_pooled", "AUROC_pooled", "AURC", "E_AURC")

    def stat(w: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        out = np.empty((w.shape[0], len(keys)))
        for r, row in enumerate(w):
            reps = row.astype(np.int64)
            cc, yy = np.repeat(c, reps), np.repeat(y, reps)
            rc = risk_coverage(cc, yy)
            out[r, 0] = ece(cc, yy)
            out[r, 1] = auroc(cc, yy) if 0 < yy.sum() < yy.size else np.nan
            out[r, 2:] = rc.aurc, rc.e_aurc
        return out

    res = cluster_bootstrap(stat, c.size, n_boot=n_boot, seed=seed)
    n = int(c.size)
    return {k: Score(k, res.interval(i), n, 1) for i, k in enumerate(keys)}


def _wide(frame: pd.DataFrame) -> pd.DataFrame:
    """Expected confidence per problem (rows) and variant (columns), with the benchmark."""
    need = {"problem", "benchmark", "variant", "expected"}
    if not need <= set(frame.columns):
        raise InputError(f"elicitation frame lacks columns {sorted(need - set(frame.columns))}")
    wide = frame.pivot_table(
        index=["problem", "benchmark"], columns="variant", values="expected", aggfunc="first"
    )
    return wide.reset_index()


def item_differences(frame: pd.DataFrame) -> pd.DataFrame:
    """Per problem: TGS-self difference, each axis's pair difference and their mean over the
    axes present, and the expected confidence at every masking ratio (NaN where missing)."""
    import pandas as pd

    wide = _wide(frame)
    out = pd.DataFrame({"problem": wide["problem"], "benchmark": wide["benchmark"]})

    def col(name: str) -> pd.Series:
        return wide[name] if name in wide else pd.Series(np.nan, index=wide.index)

    out["tgs_self"] = col(self_variant(0.0)) - col(self_variant(1.0))
    for axis in AXES:
        out[f"tgs_pair_{axis}"] = col(bench_variant(None)) - col(bench_variant(axis))
    for r in MASK_RATIOS:
        out[f"E_r{r:.2f}"] = col(self_variant(r))
    return out


def masking_curve(d: pd.DataFrame, n_boot: int = 5000, seed: int = 0) -> dict[str, Score]:
    """The masking curve on one **common-valid population** (the items with an expected
    confidence at every masked share, so each share averages the same items; the paper's
    n = 729 / 904): ``E_r<r>`` the mean E at share r and ``dE_r<r>`` the mean change
    ``E(r) - E(0)``, each within then across benchmarks with its two-stage interval."""
    cols = [f"E_r{r:.2f}" for r in MASK_RATIOS]
    common = d[np.isfinite(d[cols].to_numpy(float)).all(axis=1)]
    bench = common["benchmark"].astype(str).tolist()
    base = common[cols[0]].to_numpy(float)
    out: dict[str, Score] = {}
    for col in cols:
        e = common[col].to_numpy(float)
        out[col] = two_stage_score(col, e, bench, n_boot, seed)
        out[f"d{col}"] = two_stage_score(f"d{col}", e - base, bench, n_boot, seed)
    return out


def scores(
    frame: pd.DataFrame,
    correct: pd.DataFrame | None = None,
    n_boot: int = 5000,
    seed: int = 0,
) -> dict[str, Score]:
    """TGS-self, TGS-pair per axis and averaged, the masking curve (mean E per r), and — when
    ``correct`` (columns ``problem``, ``correct``) is given — ECE, AUROC, AURC and E-AURC of
    the visible self confidences (:func:`calibration_scores`), all with bootstrap intervals."""
    d = item_differences(frame)
    bench = d["benchmark"].astype(str).tolist()
    out: dict[str, Score] = {}
    for name in ["tgs_self", *(f"tgs_pair_{a}" for a in AXES)]:
        out[name] = two_stage_score(name, d[name].to_numpy(float), bench, n_boot, seed)
    out["tgs_pair"] = pair_score(d, n_boot, seed)
    out |= masking_curve(d, n_boot, seed)
    if correct is not None and len(correct):
        merged = d.merge(correct[["problem", "correct"]], on="problem")
        out |= calibration_scores(
            merged[f"E_r{0:.2f}"].to_numpy(float),
            merged["correct"].to_numpy(float),
            merged["benchmark"].astype(str).tolist(),
            n_boot,
            seed,
        )
    return out
