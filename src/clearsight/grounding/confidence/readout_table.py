"""The grounding paper's Table 2: a run's calibration read-outs side by side.

Per read-out (``verbalize``, the token distribution, ConfTuner's and RLCR's read-outs, ...:
:mod:`clearsight.grounding.confidence.methods`) its ECE, AUROC, TGS-self and TGS-pair with
their intervals (:mod:`clearsight.grounding.tgs`), its mean coverage and its content variation
per axis (P(JSD <= 0.1), :mod:`clearsight.grounding.variation`).
:mod:`clearsight.grounding.analysis` keeps them in a run's analysis.

Two choices follow the paper (App. C.1). TGS-self and TGS-pair are changes in the *holistic*
confidence; VL-Calibration's harmonic mean of its visual and reasoning confidences is its
outcome-level confidence only. So the ``vlcal`` row (:data:`HOLISTIC_TGS`) takes its ECE and
AUROC from the harmonic mean and its TGS and masking curve from the holistic read-out
(``verbalize``) of the same run — none where the run did not score it. And a row names the
method's provenance (:func:`provenance`): ConfTuner, RLCR and VL-Calibration are trained
checkpoints in the paper; on another model their read-out is the prompt format only.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from clearsight.grounding.confidence.methods import DEFAULT_READOUT, bundled_readouts
from clearsight.grounding.tgs import AXES, Score, scores
from clearsight.grounding.variation import JSD_THRESHOLD, jsd_per_item, share_below

__all__ = [
    "HOLISTIC_TGS",
    "READOUT_SCORES",
    "TABLE2",
    "TRAINED",
    "AxisVariation",
    "ReadoutScores",
    "axis_variation",
    "compare_readouts",
    "holistic_tgs",
    "provenance",
    "readout_order",
    "readout_scores",
]

#: The scores of the read-out comparison (the paper's Table 2), in its column order.
TABLE2: tuple[str, ...] = ("ECE", "AUROC", "tgs_self", "tgs_pair")

#: The scores kept per read-out: Table 2's, ECE and AUROC pooled over items, TGS-pair per axis.
READOUT_SCORES: tuple[str, ...] = (
    *TABLE2,
    "ECE_pooled",
    "AUROC_pooled",
    *(f"tgs_pair_{axis}" for axis in AXES),
)


#: Read-outs whose TGS is measured on the holistic confidence of the same run (module
#: docstring): their own aggregate enters ECE and AUROC only.
HOLISTIC_TGS: frozenset[str] = frozenset({"vlcal"})
#: Read-outs of methods the paper ran as trained checkpoints, each with the native template
#: that marks a model as such a checkpoint (None: no checkpoint clearsight recognises).
TRAINED: dict[str, str | None] = {"conftuner": None, "rlcr": None, "vlcal": "vlcal"}


def provenance(readout: str, native: str) -> str:
    """Where a read-out's method comes from on a model whose native template is ``native``:
    ``checkpoint`` (the method's trained model), ``prompt format`` (a trained method's
    read-out on another model) or ``prompting`` (a method that is a prompt)."""
    if readout not in TRAINED:
        return "prompting"
    marker = TRAINED[readout]
    return "checkpoint" if marker is not None and marker == native else "prompt format"


@dataclass(frozen=True)
class AxisVariation:
    """Content variation on one axis: alternatives with a JSD (``n``), the share with
    JSD <= 0.1 (``share``, NaN without one) and the JSDs themselves (bits)."""

    n: int
    share: float
    jsd: tuple[float, ...]


@dataclass(frozen=True)
class ReadoutScores:
    """One calibration read-out's row of Table 2: its :data:`READOUT_SCORES` (those it has),
    its mean coverage (mass on the read-out's candidates; None without the column) and its
    content variation per axis."""

    scores: dict[str, Score]
    coverage: float | None
    variation: dict[str, AxisVariation]


def readout_order(elic: pd.DataFrame) -> list[str]:
    """The read-outs a run scored, ``verbalize`` first, then in the data file's order."""
    present = set(elic["readout"]) if "readout" in elic else {DEFAULT_READOUT}
    known = [DEFAULT_READOUT, *(n for n in bundled_readouts() if n != DEFAULT_READOUT)]
    return [n for n in known if n in present] + sorted(present - set(known))


def axis_variation(elic: pd.DataFrame) -> dict[str, AxisVariation]:
    """Per axis: alternatives with a JSD, P(JSD <= 0.1) and the JSDs (one read-out's rows)."""
    out = {}
    for axis in AXES:
        j = jsd_per_item(elic, axis)
        out[axis] = AxisVariation(int(j.size), share_below(j, JSD_THRESHOLD), tuple(j.tolist()))
    return out


def compare_readouts(
    elic: pd.DataFrame, trajs: pd.DataFrame, n_boot: int = 5000, seed: int = 0
) -> dict[str, ReadoutScores]:
    """The paper's Table 2 over the run's read-outs: per read-out ECE, AUROC, TGS-self and
    TGS-pair (each with its interval, as in the scores table), the mean coverage (mass on the
    read-out's candidates; ConfTuner's coverage) and P(JSD <= 0.1) per axis."""
    out: dict[str, ReadoutScores] = {}
    for name in readout_order(elic):
        sub = elic[elic["readout"] == name] if "readout" in elic else elic
        sc = scores(sub, trajs if len(trajs) else None, n_boot=n_boot, seed=seed)
        out[name] = readout_scores(holistic_tgs(name, sc, elic, n_boot, seed), sub)
    return out


def holistic_tgs(
    name: str, sc: dict[str, Score], elic: pd.DataFrame, n_boot: int, seed: int
) -> dict[str, Score]:
    """The read-out ``name``'s scores ``sc`` with, for a read-out of :data:`HOLISTIC_TGS`,
    every TGS and masking-curve score taken from the run's holistic read-out
    (``verbalize``'s rows of ``elic``) instead, or left out where the run has none."""
    if name not in HOLISTIC_TGS:
        return sc
    rows = elic[elic["readout"] == DEFAULT_READOUT] if "readout" in elic else elic.iloc[:0]
    own = elic[elic["readout"] == name] if "readout" in elic else elic
    tgs = scores(rows if len(rows) else own, None, n_boot=n_boot, seed=seed)
    kept = {k: v for k, v in sc.items() if k not in tgs}
    return kept | tgs if len(rows) else kept


def readout_scores(sc: dict[str, Score], elic: pd.DataFrame) -> ReadoutScores:
    """A read-out's Table 2 row from its scores ``sc`` and its elicitations ``elic``."""
    coverage = float(elic["coverage"].mean()) if "coverage" in elic else None
    kept = {k: sc[k] for k in READOUT_SCORES if k in sc}
    return ReadoutScores(kept, coverage, axis_variation(elic))
