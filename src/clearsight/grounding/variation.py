"""Content variation (paper §3.2, App. A.1.3-4): confidence under alternative trajectory parts.

For each axis one component of the good trajectory is replaced by an alternative: the vision and
reasoning alternatives say the same thing in other words or by another route and keep the
answer (the generator's ``observation_alt`` / ``reasoning_alt``); the answer alternative
replaces the answer (by the TGS-Bench answer rule). The divergence between the two confidence
distributions is the Jensen-Shannon divergence in bits (:func:`clearsight.metrics.jsd_bits`);
the paper reports the share of items with JSD <= 0.1 per axis.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from clearsight.grounding.bench import bad_trajectory, perturb_answer
from clearsight.grounding.problems import Problem
from clearsight.grounding.trajectories import Trajectory, good_trajectory
from clearsight.metrics.divergence import jsd_bits_batch
from clearsight.seeding import rng_for
from clearsight.validate import InputError

if TYPE_CHECKING:
    import pandas as pd

JSD_THRESHOLD = 0.1


def variation_variant(axis: str) -> str:
    """Variant name of an axis's alternative trajectory."""
    return f"variation/{axis}/alt"


def alternative(problem: Problem, axis: str) -> Trajectory:
    """The good trajectory with its ``axis`` component replaced by the alternative."""
    good = good_trajectory(problem)
    sol = problem.solution or {}
    if axis == "vision":
        text = sol.get("observation_alt")
    elif axis == "reasoning":
        text = sol.get("reasoning_alt")
    elif axis == "answer":
        text, _ = perturb_answer(good.answer, problem, rng_for("grounding.variation", problem.id))
    else:
        raise InputError(f"unknown axis {axis!r}")
    if not text:
        raise InputError(f"problem {problem.id} has no {axis} alternative")
    return bad_trajectory(good, axis, text)


def jsd_per_item(frame: pd.DataFrame, axis: str) -> npt.NDArray[np.float64]:
    """JSD (bits) between the good trajectory's and the ``axis`` alternative's distributions,
    per problem that has both (``frame``: columns problem, variant, probs)."""
    good = frame[frame["variant"] == "bench/good"].set_index("problem")["probs"]
    alt = frame[frame["variant"] == variation_variant(axis)].set_index("problem")["probs"]
    common = good.index.intersection(alt.index)
    both = [p for p in common if good[p] is not None and alt[p] is not None]
    if not both:
        return np.zeros(0)
    p = np.array([good[i] for i in both], dtype=np.float64)
    q = np.array([alt[i] for i in both], dtype=np.float64)
    return jsd_bits_batch(p, q)


def share_below(jsd: npt.ArrayLike, threshold: float = JSD_THRESHOLD) -> float:
    """P(JSD <= threshold): the share of items whose confidence barely moved."""
    a = np.asarray(jsd, dtype=np.float64)
    return float(np.mean(a <= threshold)) if a.size else float("nan")
