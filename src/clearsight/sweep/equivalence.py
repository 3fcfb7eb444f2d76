"""ImageNet-C fog severities placed on the physical fog axis over a set of scenes (paper §IV-E)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from clearsight.physics import imagenet_c_equivalents
from clearsight.scenes.model import Scene
from clearsight.sweep.conditions import IMAGENET_C_SEVERITIES, imagenet_c_seed


def equivalence_table(
    scenes: Sequence[Scene] | None = None, seed: int = 0, progress: bool = True
) -> pd.DataFrame:
    """One row per scene and severity: ``scene``, ``severity``, ``v_eq_m`` (gain-matched V_eq)."""
    from tqdm import tqdm

    if scenes is None:
        from clearsight.scenes.bundled import bundled_scene_ids, load_bundled_scene

        scenes = [load_bundled_scene(i) for i in bundled_scene_ids()]
    rows = []
    for scene in tqdm(scenes, desc="V_eq", unit="scene", disable=not progress):
        v_eq = imagenet_c_equivalents(
            scene.image, scene.depth_m, imagenet_c_seed(scene.id, seed), IMAGENET_C_SEVERITIES
        )
        rows += [
            {"scene": scene.id, "severity": s, "v_eq_m": v}
            for s, v in zip(IMAGENET_C_SEVERITIES, v_eq, strict=True)
        ]
    return pd.DataFrame(rows)


def summarise(table: pd.DataFrame) -> str:
    """Median and IQR of V_eq per severity, and the monotone share, as a small text table."""
    lines = ["severity  V_eq median   IQR (m)"]
    for sev, group in table.groupby("severity"):
        q1, med, q3 = np.percentile(group["v_eq_m"], [25, 50, 75])
        lines.append(f"{sev:>8}  {med:9.1f} m   {q1:.1f}-{q3:.1f}")
    share, n = monotone_veq_share(table)
    lines.append(f"V_eq decreases monotonically over severities 1-5 in {share:.0%} of {n} scenes")
    return "\n".join(lines)


def monotone_veq_share(veq: pd.DataFrame) -> tuple[float, int]:
    """Share of scenes whose V_eq decreases monotonically over the severities, and how many.

    Monotone means non-increasing from each severity to the next (all severities present);
    scenes missing a severity are left out of the count.
    """
    if veq.empty:
        return math.nan, 0
    wide = veq.pivot_table(index="scene", columns="severity", values="v_eq_m", aggfunc="first")
    wide = wide.sort_index(axis=1).dropna()
    if wide.empty:
        return math.nan, 0
    steps = np.diff(wide.to_numpy(dtype=float), axis=1)
    monotone = (steps <= 0).all(axis=1)
    return float(monotone.mean()), int(monotone.size)
