"""The visibility guard's estimate against the true visibility of a sweep, per guarded model
and arm (docs/guard.md).

A guarded model is one more model of a sweep, so the analysis already has its accuracy,
crossings, W and selective risk beside the bare model's. What it lacks is the guard's own
measurement: every ``guard:`` record keeps its estimate in ``extra["guard"]``
(:mod:`clearsight.guard.backend`), and on the fog and water levels the true V is the level.
Many questions share one shown image (one scene, target and level), so the estimate is counted
once per image.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Final

import numpy as np
import pandas as pd

from clearsight.sweep.results import ARMS

if TYPE_CHECKING:
    from clearsight.sweep.results import RunData

#: The prefix of a guarded model's name.
GUARD_PREFIX: Final = "guard:"
_IMAGE = ["model", "scene", "target", "condition", "level_m"]
_ESTIMATE_COLUMNS = [*_IMAGE, "visibility_hat_m", "decision"]
_TABLE_COLUMNS = [
    "model",
    "arm",
    "n_images",
    "n_finite",
    "median_decades",
    "q25_decades",
    "q75_decades",
    "iqr_decades",
    "abstain_share",
]


def guard_estimates(data: RunData) -> pd.DataFrame:
    """One row per guarded model and shown fog/water image: ``model``, ``scene``, ``target``,
    ``condition`` (the arm), ``level_m`` (true V), ``visibility_hat_m`` (the guard's V_hat; NaN
    where it had no depth map) and ``decision`` (abstain / pass)."""
    rec = data.records
    sub = rec[rec["model"].astype(str).str.startswith(GUARD_PREFIX) & rec["condition"].isin(ARMS)]
    sub = sub.drop_duplicates(subset=_IMAGE)
    if sub.empty:
        return pd.DataFrame(columns=_ESTIMATE_COLUMNS)
    raw = data.raw_outputs(sub["key"].astype(str).tolist())
    v_hat, decision = [], []
    for key in sub["key"]:
        info = (raw.get(str(key)) or {}).get("extra", {}).get("guard", {})
        v = info.get("visibility_m")
        v_hat.append(math.nan if v is None else float(v))
        decision.append(str(info.get("decision", "")))
    out = sub[_IMAGE].copy()
    out["visibility_hat_m"] = v_hat
    out["decision"] = decision
    return out.reset_index(drop=True)


def guard_estimate_table(data: RunData) -> pd.DataFrame:
    """The guard's error per guarded model and arm, in decades, ``log10(V_hat / V)``: its
    median, quartiles and IQR over the shown images (``n_images``) whose V_hat is finite and
    positive (``n_finite``: an image clearer than the estimate's usable range has V_hat = inf,
    an all-veil one V_hat = 0, and neither has an error in decades), and the share of images
    the guard abstained on. Empty for a run without guarded models."""
    est = guard_estimates(data)
    rows = []
    for (model, arm), g in est.groupby(["model", "condition"], sort=False):
        v_hat = g["visibility_hat_m"].to_numpy(float)
        ok = np.isfinite(v_hat) & (v_hat > 0)
        err = np.log10(v_hat[ok] / g["level_m"].to_numpy(float)[ok])
        q25, med, q75 = np.percentile(err, [25, 50, 75]) if err.size else (np.nan,) * 3
        rows.append(
            {
                "model": model,
                "arm": arm,
                "n_images": len(g),
                "n_finite": int(ok.sum()),
                "median_decades": float(med),
                "q25_decades": float(q25),
                "q75_decades": float(q75),
                "iqr_decades": float(q75 - q25),
                "abstain_share": float((g["decision"] == "abstain").mean()),
            }
        )
    return pd.DataFrame(rows, columns=_TABLE_COLUMNS)
