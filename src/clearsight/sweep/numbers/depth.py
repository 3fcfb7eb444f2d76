"""The depth of a sweep run's scene set (paper §III-B: "the median of per-image median depths"),
from the per-scene depth profiles the run stores.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["DepthSummary", "depth_summary"]


@dataclass(frozen=True)
class DepthSummary:
    """The depth of a run's scene set (paper §III-B: "the median of per-image median depths"):
    the median and quartiles over scenes of each scene's median depth (m), the mean over
    scenes of each scene's share of pixels at the clip bounds (at or below 0.5 m, at or
    beyond 80 m), and the number of scenes. NaN with ``n_scenes`` 0 where no profile is
    stored."""

    median_m: float
    q25_m: float
    q75_m: float
    near_share: float
    far_share: float
    n_scenes: int


def depth_summary(depth: pd.DataFrame) -> DepthSummary:
    """The :class:`DepthSummary` of per-scene depth profiles (``RunData.depth``; numpy's
    linear percentiles over the scenes' medians)."""
    if depth.empty:
        return DepthSummary(math.nan, math.nan, math.nan, math.nan, math.nan, 0)
    q25, med, q75 = np.percentile(depth["median_m"].to_numpy(dtype=float), [25, 50, 75])
    near, far = (float(depth[c].mean()) for c in ("near_share", "far_share"))
    return DepthSummary(float(med), float(q25), float(q75), near, far, len(depth))
