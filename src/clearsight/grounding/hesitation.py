"""Hesitation analysis (paper §3.4, App. A.3): does confidence drop after the model doubts?

Markers ("wait", "let me re-check", "actually", "hmm", "on second thought", ...) are a data file
(``data/hesitation_markers.txt``). A hesitation event is the first sentence of a trajectory's
rationale that contains a marker; confidence is elicited on the trajectory truncated just before
that sentence and just after it, the final answer held fixed, and the analysis reports
``P(|c_pre - c_post| <= 0.02)`` and the mean change ``c_post - c_pre``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib.resources import files

import numpy as np
import numpy.typing as npt

from clearsight.grounding.trajectories import Trajectory, sentences

STABLE = 0.02


@lru_cache(maxsize=1)
def markers() -> tuple[str, ...]:
    """The hesitation markers of the bundled data file (lower case)."""
    text = files("clearsight.grounding").joinpath("data/hesitation_markers.txt").read_text()
    return tuple(
        line.strip().lower()
        for line in text.splitlines()
        if line.strip() and not line.startswith("#")
    )


def _pattern() -> re.Pattern[str]:
    alts = sorted(markers(), key=len, reverse=True)
    return re.compile(r"\b(" + "|".join(re.escape(m) for m in alts) + r")\b", re.IGNORECASE)


@dataclass(frozen=True)
class Hesitation:
    """One hesitation event: the marker, and the trajectory truncated before / after it."""

    marker: str
    pre: Trajectory
    post: Trajectory


def find_hesitation(traj: Trajectory) -> Hesitation | None:
    """The first hesitation event in the rationale (vision, then reasoning), or None."""
    pat = _pattern()
    rationale = [("vision", s) for s in sentences(traj.vision)]
    rationale += [("reasoning", s) for s in sentences(traj.reasoning)]
    for i, (_, sent) in enumerate(rationale):
        m = pat.search(sent)
        if m is None:
            continue

        def upto(n: int) -> Trajectory:
            v = " ".join(s for part, s in rationale[:n] if part == "vision")
            r = " ".join(s for part, s in rationale[:n] if part == "reasoning")
            return Trajectory(v, r, traj.answer)

        return Hesitation(m.group(1).lower(), upto(i), upto(i + 1))
    return None


def stable_share(pre: npt.ArrayLike, post: npt.ArrayLike, tol: float = STABLE) -> float:
    """P(|c_pre - c_post| <= tol) over events."""
    a, b = np.asarray(pre, dtype=np.float64), np.asarray(post, dtype=np.float64)
    return float(np.mean(np.abs(a - b) <= tol)) if a.size else float("nan")
