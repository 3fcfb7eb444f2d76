"""ImageNet-C fog severities placed on the physical fog axis over a set of scenes (paper §IV-E)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from clearsight.physics import imagenet_c_equivalents
from clearsight.scenes.model import Scene
from clearsight.sweep.conditions import IMAGENET_C_SEVERITIES, imagenet_c_seed


def equivalence_table(
    scenes: Sequence[Scene] | None = None, seed: int = 0, progress: bool = True
) -> pd.DataFrame:
    """One row per scene and severity: ``scene``, ``severity``, ``v_eq_m`` (gain-matched V_eq)
    and ``gain`` (the retained contrast gain it matches)."""
    from tqdm import tqdm

    if scenes is None:
        from clearsight.scenes.bundled import bundled_scene_ids, load_bundled_scene

        scenes = [load_bundled_scene(i) for i in bundled_scene_ids()]
    rows = []
    for scene in tqdm(scenes, desc="V_eq", unit="scene", disable=not progress):
        found = imagenet_c_equivalents(
            scene.image, scene.depth_m, imagenet_c_seed(scene.id, seed), IMAGENET_C_SEVERITIES
        )
        rows += [
            {"scene": scene.id, "severity": s, "v_eq_m": eq.v_eq_m, "gain": eq.gain}
            for s, eq in zip(IMAGENET_C_SEVERITIES, found, strict=True)
        ]
    return pd.DataFrame(rows)


def summarise(table: pd.DataFrame) -> str:
    """Median and IQR of V_eq (and of the retained gain, where the table has it) per
    severity, and the monotone shares, as a small text table."""
    gains = "gain" in table
    lines = ["severity  V_eq median   IQR (m)" + ("        gain median   IQR" if gains else "")]
    for sev, group in table.groupby("severity"):
        q1, med, q3 = np.percentile(group["v_eq_m"], [25, 50, 75])
        line = f"{sev:>8}  {med:9.1f} m   {q1:.1f}-{q3:.1f}"
        if gains:
            g1, gmed, g3 = np.percentile(group["gain"], [25, 50, 75])
            line = f"{line:<38}{gmed:9.3f}     {g1:.3f}-{g3:.3f}"
        lines.append(line)
    share = monotone_veq_share(table)
    lines.append(
        f"V_eq decreases strictly over severities 1-5 in {share.strict:.0%} of {share.n} scenes "
        f"(non-increasing: {share.non_strict:.0%})"
    )
    return "\n".join(lines)


@dataclass(frozen=True)
class MonotoneShare:
    """How many scenes' V_eq decreases over the severities: ``strict`` (every step down, the
    paper's "decreases monotonically"), ``non_strict`` (no step up), of ``n`` scenes."""

    strict: float
    non_strict: float
    n: int


def monotone_veq_share(veq: pd.DataFrame) -> MonotoneShare:
    r"""Shares of scenes whose V_eq decreases over the severities, strictly and non-strictly.

    Over scenes with every severity present (others are left out of ``n``), with
    :math:`V_s` the scene's V_eq at severity s in increasing order: strict means
    :math:`V_{s+1} < V_s` at every step, non-strict :math:`V_{s+1} \le V_s`.
    """
    if veq.empty:
        return MonotoneShare(math.nan, math.nan, 0)
    wide = veq.pivot_table(index="scene", columns="severity", values="v_eq_m", aggfunc="first")
    wide = wide.sort_index(axis=1).dropna()
    if wide.empty:
        return MonotoneShare(math.nan, math.nan, 0)
    steps = np.diff(wide.to_numpy(dtype=float), axis=1)
    strict = (steps < 0).all(axis=1)
    non_strict = (steps <= 0).all(axis=1)
    return MonotoneShare(float(strict.mean()), float(non_strict.mean()), int(strict.size))
