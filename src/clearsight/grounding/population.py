"""Common-valid populations: the items every method of a grounding report is scored on.

The paper draws its masking curves (Figs. 11 and 12) on the items valid for every method of a
scale (n = 729 at 4B, 904 at 8B) and its ECE-against-TGS panels (Figs. 15 and 16) on
"panel-wide common-valid populations for their respective measures". A run's own scores
(Table 2, the scores table) average each run's own valid items, which differ between methods
wherever one method's elicitation failed or was skipped and another's did not; set side by
side, such numbers compare different items.

A *method* is one (run, read-out) of a report (:func:`report_methods`). An item
(``benchmark``, ``problem``) is valid for a method on a *measure* when the method has what the
measure reads for it:

* ``masking``: the expected confidence at every masked share r (Figs. 11 and 12);
* ``tgs_self``: the visible and the fully masked confidence (Fig. 15);
* ``calibration``: the visible confidence and the own answer's correctness (ECE and AUROC, the
  x axis of Figs. 15 and 16);
* ``tgs_pair_<axis>``: the good side and that axis's bad side (Fig. 16, per axis).

Each measure's *common-valid population* is the intersection of the valid items over the
methods that have the measure on any item (a run that stored no own trajectories has no
``calibration`` and does not empty it for the others). :func:`common_population` scores
every method on those populations, with the aggregation of :func:`~clearsight.grounding.tgs.
scores`. The report's methods are read as one panel: the paper's Figs. 11 and 12 are within
one scale, so a report over the runs of one scale reproduces their population, a report over
several scales intersects across them (clearsight does not read a model's scale).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd

from clearsight.grounding.confidence.methods import DEFAULT_READOUT
from clearsight.grounding.confidence.readout_table import HOLISTIC_TGS, readout_order
from clearsight.grounding.results import GroundingResults
from clearsight.grounding.tgs import (
    AXES,
    MASK_RATIOS,
    Score,
    bench_variant,
    item_differences,
    scores,
    self_variant,
)

__all__ = [
    "MEASURES",
    "CommonPopulation",
    "Method",
    "common_population",
    "report_methods",
]

#: The measures a common-valid population is drawn for (module docstring), in report order.
MEASURES: tuple[str, ...] = (
    "masking",
    "tgs_self",
    "calibration",
    *(f"tgs_pair_{axis}" for axis in AXES),
)

Key = tuple[str, str]


@dataclass(frozen=True)
class Method:
    """One (run, read-out) of a report: its own elicitations, the rows its TGS and masking
    curve read (the run's holistic ``verbalize`` rows for a read-out of
    :data:`~clearsight.grounding.confidence.readout_table.HOLISTIC_TGS`; None where the run
    has none) and the run's own answers' correctness (columns ``problem``, ``correct``)."""

    run: str
    readout: str
    own: pd.DataFrame
    tgs: pd.DataFrame | None
    correct: pd.DataFrame


@dataclass(frozen=True)
class CommonPopulation:
    """The common-valid populations of a report: per measure, how many items it holds
    (``n``) and how many methods take part (``methods``); per method ((run, read-out)), its
    scores on them (keys of :func:`~clearsight.grounding.tgs.scores`: ``E_r<r>``/``dE_r<r>``
    on ``masking``, ``tgs_self``, ``ECE``/``AUROC`` (and pooled) on ``calibration``,
    ``tgs_pair_<axis>`` and their mean ``tgs_pair`` on the pair populations)."""

    n: dict[str, int]
    methods: dict[str, int]
    scores: dict[tuple[str, str], dict[str, Score]]


def report_methods(runs: Sequence[tuple[str, GroundingResults]]) -> list[Method]:
    """Every (run, read-out) of the named runs, each run's read-outs in
    :func:`~clearsight.grounding.confidence.readout_table.readout_order`."""
    out = []
    for name, results in runs:
        elic = results.elicitations
        if elic.empty:
            continue
        correct = results.trajectories
        for readout in readout_order(elic):
            own = elic[elic["readout"] == readout] if "readout" in elic else elic
            tgs: pd.DataFrame | None = own
            if readout in HOLISTIC_TGS:
                holistic = elic[elic["readout"] == DEFAULT_READOUT] if "readout" in elic else None
                tgs = holistic if holistic is not None and len(holistic) else None
            out.append(Method(name, readout, own, tgs, correct))
    return out


def _keys(d: pd.DataFrame, valid: npt.NDArray[np.bool_]) -> set[Key]:
    """The (benchmark, problem) keys of the rows of ``d`` where ``valid``."""
    rows = d[valid]
    return set(zip(rows["benchmark"].astype(str), rows["problem"].astype(str), strict=True))


def _valid(method: Method) -> dict[str, set[Key]]:
    """Per measure, the items valid for ``method`` (module docstring)."""
    out: dict[str, set[Key]] = {m: set() for m in MEASURES}
    if method.tgs is not None and len(method.tgs):
        d = item_differences(method.tgs)
        curve = d[[f"E_r{r:.2f}" for r in MASK_RATIOS]].to_numpy(float)
        out["masking"] = _keys(d, np.isfinite(curve).all(axis=1))
        out["tgs_self"] = _keys(d, np.isfinite(d["tgs_self"].to_numpy(float)))
        for axis in AXES:
            column = f"tgs_pair_{axis}"
            out[column] = _keys(d, np.isfinite(d[column].to_numpy(float)))
    if len(method.correct):
        d = item_differences(method.own)
        answered = d["problem"].astype(str).isin(set(method.correct["problem"].astype(str)))
        seen = np.isfinite(d["E_r0.00"].to_numpy(float)) & answered.to_numpy(bool)
        out["calibration"] = _keys(d, seen)
    return out


def _rows(frame: pd.DataFrame, keys: set[Key], variants: set[str]) -> pd.DataFrame:
    """The rows of ``frame`` of an item in ``keys`` and one of ``variants``."""
    key = list(zip(frame["benchmark"].astype(str), frame["problem"].astype(str), strict=True))
    inside = np.fromiter((k in keys for k in key), bool, len(key))
    return frame[inside & frame["variant"].isin(variants).to_numpy(bool)]


_SELF = {self_variant(r) for r in MASK_RATIOS}
_ENDS = {self_variant(0.0), self_variant(1.0)}


def _pair_rows(frame: pd.DataFrame, common: dict[str, set[Key]]) -> pd.DataFrame:
    """The pair rows of ``frame`` on the common pair populations: each axis's bad side on its
    own population, the good side on any of them."""
    parts = [_rows(frame, common[f"tgs_pair_{axis}"], {bench_variant(axis)}) for axis in AXES]
    anywhere = set().union(*(common[f"tgs_pair_{axis}"] for axis in AXES))
    parts.append(_rows(frame, anywhere, {bench_variant(None)}))
    return pd.concat(parts)


def _method_scores(
    method: Method, common: dict[str, set[Key]], n_boot: int, seed: int
) -> dict[str, Score]:
    """``method``'s scores on the common populations (:class:`CommonPopulation`)."""
    out: dict[str, Score] = {}

    def take(rows: pd.DataFrame, names: Sequence[str], correct: pd.DataFrame | None) -> None:
        if len(rows):
            got = scores(rows, correct, n_boot=n_boot, seed=seed)
            out.update({k: got[k] for k in names if k in got})

    if method.tgs is not None:
        curve = [f"{d}E_r{r:.2f}" for r in MASK_RATIOS for d in ("", "d")]
        take(_rows(method.tgs, common["masking"], _SELF), curve, None)
        take(_rows(method.tgs, common["tgs_self"], _ENDS), ["tgs_self"], None)
        pair = ["tgs_pair", *(f"tgs_pair_{axis}" for axis in AXES)]
        take(_pair_rows(method.tgs, common), pair, None)
    if len(method.correct):
        calibration = ["ECE", "AUROC", "ECE_pooled", "AUROC_pooled"]
        visible = {self_variant(0.0)}
        take(_rows(method.own, common["calibration"], visible), calibration, method.correct)
    return out


def common_population(
    methods: Sequence[Method], n_boot: int = 5000, seed: int = 0
) -> CommonPopulation:
    """The common-valid population of every measure over ``methods`` and each method's scores
    on them, ``n_boot`` bootstrap draws seeded by ``seed`` (module docstring)."""
    valid = [_valid(m) for m in methods]
    common: dict[str, set[Key]] = {}
    taking: dict[str, int] = {}
    for measure in MEASURES:
        sets = [v[measure] for v in valid if v[measure]]
        common[measure] = set.intersection(*sets) if sets else set()
        taking[measure] = len(sets)
    return CommonPopulation(
        n={m: len(common[m]) for m in MEASURES},
        methods=taking,
        scores={(m.run, m.readout): _method_scores(m, common, n_boot, seed) for m in methods},
    )
