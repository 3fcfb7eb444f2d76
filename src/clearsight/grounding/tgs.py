"""Trajectory-Grounding Scores from elicited confidences (METHODS.md §5, paper §4, App. B.2/C.1).

* **TGS-self** = mean over items of ``E(rationale visible) - E(rationale masked)``, the rationale
  (vision + reasoning) hidden from every later position by attention masking, the answer kept
  visible. Positive: confidence reads the trajectory; ~0: blind; negative: masking raises it.
* **Masking curve**: mean ``E`` at masked shares r in {0, .25, .5, .75, 1} of rationale tokens.
* **TGS-pair** per axis = mean of ``E(good) - E(bad)`` over pairs differing on that axis;
  the averaged TGS-pair is the mean over axes.
* Aggregation: within each benchmark, then across benchmarks (each counts equally), with
  two-stage percentile bootstrap intervals (:func:`clearsight.metrics.two_stage_bootstrap`,
  5000 draws by default); ECE, AUROC, AURC and E-AURC of the same confidences with an item
  bootstrap.

Inputs are plain arrays or a :class:`pandas.DataFrame` of elicitation read-outs with columns
``problem``, ``benchmark``, ``variant`` and ``expected`` (see
:class:`clearsight.grounding.results.GroundingResults`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from clearsight.metrics.bootstrap import Interval, cluster_bootstrap, two_stage_bootstrap
from clearsight.metrics.calibration import auroc, ece
from clearsight.metrics.selective import risk_coverage
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

    def to_json(self) -> dict[str, Any]:
        i = self.interval
        return {
            "name": self.name,
            "estimate": i.estimate,
            "low": i.low,
            "high": i.high,
            "n_boot": i.n_boot,
            "level": i.level,
            "n_items": self.n_items,
            "n_benchmarks": self.n_benchmarks,
        }


def _nan_interval(n_boot: int) -> Interval:
    return Interval(float("nan"), float("nan"), float("nan"), n_boot, 0.95)


def two_stage_score(
    name: str,
    values: npt.ArrayLike,
    benchmarks: Sequence[str],
    n_boot: int = 5000,
    seed: int = 0,
) -> Score:
    """Mean over benchmarks of per-benchmark means of ``values``, two-stage bootstrap CI."""
    v = np.asarray(values, dtype=np.float64)
    keep = np.isfinite(v)
    b = np.asarray(list(benchmarks), dtype=object)
    if v.shape != b.shape:
        raise InputError(f"{len(b)} benchmark labels for {v.size} values")
    v, b = v[keep], b[keep]
    if v.size == 0:
        return Score(name, _nan_interval(n_boot), 0, 0)
    interval = two_stage_bootstrap(v, b.astype(str), n_boot=n_boot, seed=seed)
    return Score(name, interval, int(v.size), len(set(b.tolist())))


#: The confidence read-outs :func:`calibration_scores` gives, in order.
CALIBRATION_SCORES = ("ECE", "AUROC", "AURC", "E_AURC")


def calibration_scores(
    confidence: npt.ArrayLike, correct: npt.ArrayLike, n_boot: int = 5000, seed: int = 0
) -> dict[str, Score]:
    """ECE (10 right-closed bins), AUROC, and the selective-prediction AURC and E-AURC
    (:func:`~clearsight.metrics.risk_coverage`) of ``confidence`` for ``correct``, each with a
    percentile item bootstrap (NaN replicates, e.g. AUROC of a draw with one class, ignored);
    keyed by :data:`CALIBRATION_SCORES`."""
    c = np.asarray(confidence, dtype=np.float64)
    y = np.asarray(correct, dtype=np.float64)
    keep = np.isfinite(c)
    c, y = c[keep], y[keep]
    if c.size == 0:
        return {k: Score(k, _nan_interval(n_boot), 0, 0) for k in CALIBRATION_SCORES}

    def stat(w: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        out = np.empty((w.shape[0], len(CALIBRATION_SCORES)))
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
    return {k: Score(k, res.interval(i), n, 1) for i, k in enumerate(CALIBRATION_SCORES)}


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
    out["tgs_pair"] = out[[f"tgs_pair_{a}" for a in AXES]].mean(axis=1, skipna=True)
    for r in MASK_RATIOS:
        out[f"E_r{r:.2f}"] = col(self_variant(r))
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
    names = ["tgs_self", *(f"tgs_pair_{a}" for a in AXES), "tgs_pair"]
    names += [f"E_r{r:.2f}" for r in MASK_RATIOS]
    for name in names:
        out[name] = two_stage_score(name, d[name].to_numpy(float), bench, n_boot, seed)
    if correct is not None and len(correct):
        merged = d.merge(correct[["problem", "correct"]], on="problem")
        out |= calibration_scores(
            merged[f"E_r{0:.2f}"].to_numpy(float),
            merged["correct"].to_numpy(float),
            n_boot,
            seed,
        )
    return out
