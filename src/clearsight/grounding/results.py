"""A grounding run read back for its report: elicitations, own trajectories, judge, failures.

A grounding run holds records of five item kinds, named once in
:mod:`clearsight.grounding.specs`: the measured model's own trajectories
(:data:`~clearsight.grounding.specs.TRAJECTORY`), the TGS-Bench edits (``EDIT``), the
judge's verdicts on pairs (``JUDGE``), the sampled content-variation alternatives
(``VARIATION``) and the elicited confidence distributions (``ELICIT``).
:func:`load_grounding_results` reads them by kind through :class:`~clearsight.store.RunStore`,
each kind's read-outs as its registered type (:mod:`clearsight.grounding.readouts`), into
:class:`GroundingResults`; :mod:`clearsight.grounding.analysis` scores them and
:mod:`clearsight.grounding.page.report` renders the scores.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from clearsight.grounding.confidence.methods import DEFAULT_READOUT
from clearsight.grounding.protocol import GROUNDING
from clearsight.grounding.readouts import (
    ElicitReadouts,
    JudgeReadouts,
    TrajectoryReadouts,
    VariationReadouts,
)
from clearsight.grounding.specs import ELICIT, JUDGE, TRAJECTORY, VARIATION
from clearsight.grounding.trajectories.templates import native_template, template_statement
from clearsight.specs import REASK_KIND
from clearsight.store import RunStore, read_shared

__all__ = ["GroundingResults", "SampledVariation", "load_grounding_results"]


@dataclass
class SampledVariation:
    """Sampled content variation on one axis: alternatives ``sampled``, ``accepted``, and the
    rejection ``reasons`` counted (the first 60 characters of each)."""

    sampled: int = 0
    accepted: int = 0
    reasons: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class GroundingResults:
    """What a grounding run directory holds.

    ``elicitations``: one row per ok elicitation (its item's ``key``, problem, benchmark,
    variant, expected, probs, mass, readout, distributions (per slot), coverage, share, meta),
    the input of
    :mod:`clearsight.grounding.tgs`. ``trajectories``: one
    row per ok own trajectory (problem, benchmark, correct, answer, answer_forced, trajectory: its
    JSON form).
    ``judge``: per axis, pairs judged (``n``), the share where the judge picked the bad side
    (``picked_bad``) and the pairs it judged seeing the problem's image (``with_image``).
    ``failures``: failed records counted by ``"<kind>: <reason>"`` (the reason's first 80
    characters). ``name``: the run directory's name.
    """

    name: str
    elicitations: pd.DataFrame
    trajectories: pd.DataFrame
    judge: dict[str, dict[str, float]]
    failures: dict[str, int]
    variation: dict[str, SampledVariation] = field(default_factory=dict)
    """Sampled content variation per axis."""
    trajectory: str = ""
    """The template of the run's own trajectories, as the report states it
    (:func:`~clearsight.grounding.trajectories.templates.template_statement`)."""
    model: str = ""
    """The measured model (the run's config), as Table 2 names its rows."""
    native: str = ""
    """The measured model's own template family
    (:func:`~clearsight.grounding.trajectories.templates.native_template`: ``vlcal`` for a
    VL-Calibration checkpoint), which says whether a trained method's read-out ran on its
    checkpoint."""


@read_shared
def load_grounding_results(run_dir: Path | str) -> GroundingResults:
    """Read a grounding run (read-only); InputError naming the right command for a run of
    another protocol."""
    with RunStore.open(run_dir, read_only=True) as store:
        store.expect_protocol(GROUNDING.name)
        return GroundingResults(
            name=Path(run_dir).name,
            elicitations=_elicitations(store),
            trajectories=_trajectories(store),
            judge=_judge(store),
            failures=_failures(store),
            variation=_variation(store),
            trajectory=template_statement(store.manifest()),
            **_measured(store.manifest()),
        )


def _measured(manifest: Mapping[str, Any]) -> dict[str, str]:
    """The run's measured model and its native template family (:class:`GroundingResults`)."""
    from clearsight.models.resolve import resolve_options

    config = manifest.get("config") or {}
    model = str(config.get("model") or "")
    if not model:
        return {"model": "", "native": ""}
    options = resolve_options(model, config.get("model_options") or {})
    return {"model": model, "native": native_template(model, options).name}


def _elicitations(store: RunStore) -> pd.DataFrame:
    """One row per ok elicitation (see :class:`GroundingResults`); a run made before read-outs
    were selectable stores its one slot's ``probs`` and ``mass`` alone."""
    rows = []
    for rec in store.iter_records("ok", kind=ELICIT, raw=False, readouts=ElicitReadouts):
        out, problem = rec.readouts, rec.spec["problem"]
        rows.append(
            {
                "key": rec.key,
                "problem": problem["id"],
                "benchmark": problem["benchmark"],
                "variant": rec.spec["variant"],
                "expected": out["expected"],
                "probs": out["probs"],
                "mass": out["mass"],
                "readout": (rec.spec.get("readout") or {}).get("name", DEFAULT_READOUT),
                "distributions": out.get("distributions") or {"confidence": out["probs"]},
                "coverage": out.get("coverage", out["mass"]),
                "share": rec.spec["share"],
                "meta": rec.spec["meta"],
            }
        )
    return pd.DataFrame(rows)


def _trajectories(store: RunStore) -> pd.DataFrame:
    """One row per ok own trajectory (see :class:`GroundingResults`)."""
    read = store.iter_records("ok", kind=TRAJECTORY, raw=False, readouts=TrajectoryReadouts)
    return pd.DataFrame(
        [
            {
                "problem": rec.spec["problem"]["id"],
                "benchmark": rec.spec["problem"]["benchmark"],
                "correct": bool(rec.readouts["correct"]),
                "answer": rec.readouts["answer"],
                "answer_forced": rec.readouts["answer_forced"],
                "trajectory": rec.readouts["trajectory"],
            }
            for rec in read
        ]
    )


def _judge(store: RunStore) -> dict[str, dict[str, float]]:
    """Per axis, the pairs judged (``n``), the share where the judge picked the bad side and
    how many of the pairs it judged with the problem's image in view (``with_image``)."""
    verdicts: dict[str, list[tuple[bool, bool]]] = {}
    for rec in store.iter_records("ok", kind=JUDGE, raw=False, readouts=JudgeReadouts):
        out = rec.readouts
        verdict = (bool(out["picked_bad"]), bool(out.get("saw_image", False)))
        verdicts.setdefault(out["axis"], []).append(verdict)
    return {
        a: {
            "n": len(v),
            "picked_bad": sum(bad for bad, _ in v) / len(v),
            "with_image": sum(saw for _, saw in v),
        }
        for a, v in verdicts.items()
        if v
    }


def _variation(store: RunStore) -> dict[str, SampledVariation]:
    """Sampled content variation per axis, its rejections counted by reason."""
    variation: dict[str, SampledVariation] = {}
    for rec in store.iter_records("ok", kind=VARIATION, raw=False, readouts=VariationReadouts):
        out = rec.readouts
        v = variation.setdefault(out["axis"], SampledVariation())
        v.sampled += 1
        v.accepted += bool(out["accepted"])
        if not out["accepted"]:
            why = str(out["reason"])[:60]
            v.reasons[why] = v.reasons.get(why, 0) + 1
    return variation


def _failures(store: RunStore) -> dict[str, int]:
    """Failed records counted by ``"<kind>: <reason>"``, re-asks left to the report's
    Reproducibility section."""
    failures: dict[str, int] = {}
    for rec in store.iter_records("failed", raw=False):
        if rec.protocol == REASK_KIND:
            continue
        reason = f"{rec.protocol}: {(rec.error or '')[:80]}"
        failures[reason] = failures.get(reason, 0) + 1
    return failures
