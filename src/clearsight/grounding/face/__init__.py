"""Trajectory grounding after its run: :data:`GROUNDING_FACE`, what its report,
``clearsight verify``, the card and export ask of a grounding run, and
:data:`BUILD_BENCH_FACE`, a TGS-Bench build's (:class:`~clearsight.faces.face.ProtocolFace`).

* **report**: :func:`clearsight.grounding.page.report.build_grounding_report`, other grounding runs
  beside it, written into the run's directory; the bootstrap's draws and seed default to those
  of the run's configuration (what ``clearsight grounding run`` reported with); it tells a
  ``measured`` listener the run's TGS numbers (the card's) from the same analysis.
* **verify**: the elicitations (kind ``grounding.elicit``) rebuilt from their stored form —
  their problem, trajectory, template and read-out are all in it — and kept only where the
  rebuilt item's key is the stored one, stratified over models, variants and masked shares,
  answered by trajectory grounding's own unit (:func:`clearsight.grounding.unit.run_unit`).
  Read-outs derived again: a trajectory's text parsed again
  (:func:`~clearsight.grounding.unit.trajectory_readouts`; whether its answer was forced is not
  in the text and is taken as stored); an elicitation's distributions from its stored
  per-candidate probabilities
  (:func:`~clearsight.grounding.confidence.numerals.numeral_distribution`), combined by its
  read-out (:func:`~clearsight.grounding.confidence.methods.combine`); a judgement's p(bad)
  (:func:`~clearsight.grounding.bench.pairs.judge_p_bad`). Edits and sampled variations are
  counted, not read.
* **card**: TGS-self and TGS-pair per axis, and the card's run of trajectory grounding
  (:mod:`clearsight.grounding.face.card`).
* **rows**: one per ok elicitation, with its item's ``key``.
* **shown**: an elicitation's problem image, drawn from its stored reference
  (:func:`~clearsight.grounding.problems.images.load_image`, as the unit loads it for a model
  that takes images; the run does not store whether its model took them); a text problem has
  none.
* **view**: :class:`clearsight.grounding.view.GroundingRunView` (``clearsight view``).

A TGS-Bench build has no report page: ``clearsight report`` prints its pool's retention
(:func:`bench_summary`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import JsonValue

from clearsight.faces.face import Measured, ProtocolFace, ReportRequest, Row, frame_rows
from clearsight.faces.verifying import (
    ItemLabels,
    Reaskable,
    no_context,
    number_at,
    rebuilt,
    text_at,
)
from clearsight.grounding.face.card import (
    GROUNDING_CARD_RUN,
    TGS_KEYS,
    grounding_card,
    grounding_numbers,
)
from clearsight.models.base import Capabilities
from clearsight.specs import Spec
from clearsight.store import Record, run_manifest
from clearsight.validate import InputError

if TYPE_CHECKING:
    from clearsight.faces.comparison import Comparison
    from clearsight.faces.viewing import RunView
    from clearsight.grounding.bench.file import TgsBench
    from clearsight.grounding.problems.problem import Problem
    from clearsight.pages.output import ReportPaths

__all__ = [
    "BUILD_BENCH_FACE",
    "GROUNDING_FACE",
    "TGS_KEYS",
    "bench_summary",
    "elicit_of",
]


def _report(request: ReportRequest) -> ReportPaths:
    from clearsight.grounding.page.report import build_grounding_report

    request.in_place("grounding")
    config = run_manifest(request.run_dir).get("config") or {}
    n_boot = int(config.get("n_boot", 5000)) if request.n_boot is None else request.n_boot
    seed = int(config.get("seed", 0)) if request.seed is None else request.seed
    paths, analysis = build_grounding_report(
        request.run_dir,
        others=list(request.others),
        n_boot=n_boot,
        seed=seed,
        appendix=request.appendix,
    )
    if request.measured is not None:  # the run's own TGS, as the card has them
        request.measured(Measured({"": grounding_numbers(analysis)}))
    return paths


# ----------------------------------------------------------------------------------- verify


def _stratum(spec: Mapping[str, object]) -> tuple[object, ...]:
    variant = str(spec.get("variant", "")).split("/")[0]
    return (spec.get("model"), variant, spec.get("share"))


def _labels(spec: Mapping[str, object]) -> ItemLabels:
    """An elicitation's problem, variant, masked share and read-out."""
    return ItemLabels(
        model=text_at(spec, "model"),
        scene=text_at(spec, "problem", "id"),
        condition=text_at(spec, "variant"),
        level_m=number_at(spec, "share"),
        wording=text_at(spec, "readout", "name"),
    )


def problem_of(stored: Mapping[str, Any]) -> Problem:
    """A grounding problem from its stored form."""
    from clearsight.grounding.problems.problem import Problem

    problem = dict(stored)
    problem["options"] = tuple(problem.get("options") or ())
    return Problem(**problem)


def elicit_of(stored: Mapping[str, Any]) -> Spec:
    """A grounding elicitation from its stored form."""
    from clearsight.grounding.specs import ElicitSpec, ReadoutRef, TemplateRef
    from clearsight.grounding.trajectories.written import trajectory_from_json

    readout = stored.get("readout")
    return ElicitSpec(
        problem=problem_of(stored["problem"]),
        variant=stored["variant"],
        trajectory=trajectory_from_json(dict(stored["trajectory"])),
        share=stored["share"],
        seed=stored["seed"],
        model=stored["model"],
        model_options=dict(stored["model_options"]),
        template=TemplateRef(**stored["template"]),
        meta=dict(stored["meta"]),
        readout=None if readout is None else ReadoutRef(**readout),
    )


def _typed(config: Mapping[str, Any], stored: Mapping[str, Mapping[str, Any]]) -> dict[str, Spec]:
    return rebuilt(elicit_of, stored)


def _answer(
    items: Sequence[Any], model: str, options: Mapping[str, JsonValue], context: None
) -> list[Record]:
    """Trajectory grounding's own elicitation of each item, all in one unit."""
    from clearsight.grounding.specs import ELICIT
    from clearsight.grounding.unit import GroundingUnit, run_unit

    return run_unit(GroundingUnit(ELICIT, model, options, tuple(items)))


def _masked(item: Any) -> Capabilities:
    return Capabilities(generate=False, attention_mask=True)


def _trajectory(spec: Mapping[str, Any], raw: Any, stored: Mapping[str, Any]) -> Mapping[str, Any]:
    from clearsight.grounding.specs import TemplateRef, TrajectorySpec
    from clearsight.grounding.unit import trajectory_readouts

    item = TrajectorySpec(
        problem=problem_of(spec["problem"]),
        model=spec["model"],
        model_options=dict(spec["model_options"]),
        template=TemplateRef(**spec["template"]),
        max_new_tokens=spec["max_new_tokens"],
        given=spec.get("given"),
    )
    try:
        return trajectory_readouts(item, raw["text"], bool(stored.get("answer_forced")))
    except InputError as exc:
        return {"unreadable": str(exc)}


def _elicit(spec: Mapping[str, Any], raw: Any, stored: Mapping[str, Any]) -> Mapping[str, Any]:
    from clearsight.grounding.confidence.elicit import Elicited
    from clearsight.grounding.confidence.methods import DEFAULT_READOUT, combine, get_readout
    from clearsight.grounding.confidence.numerals import numeral_distribution

    readout = get_readout((spec.get("readout") or {}).get("name", DEFAULT_READOUT))
    elicited = []
    for slot, got in zip(readout.slots, raw.get("slots", [raw]), strict=True):
        # the stored per-candidate probabilities already carry p(end | candidate)
        probs = dict(zip(slot.candidates, got["raw"], strict=True))
        ends = dict.fromkeys(slot.candidates, 1.0)
        r = numeral_distribution(probs, ends, slot.candidates, slot.values)
        tokens = (got["hidden_tokens"], got["prompt_tokens"])
        elicited.append(Elicited(r.raw, r.mass, r.probs, r.expected, (), *tokens))
    result = combine(readout, elicited)
    return {"unreadable": result} if isinstance(result, str) else result.to_readouts()


def _judge(spec: Mapping[str, Any], raw: Any, stored: Mapping[str, Any]) -> Mapping[str, Any]:
    from clearsight.grounding.bench.pairs import judge_p_bad

    p_bad = judge_p_bad(raw.get("candidate_probs") or {}, spec["bad_first"])
    if p_bad is None:
        return {"unreadable": "the judge put no probability on 1 or 2"}
    return {"p_bad": p_bad, "picked_bad": p_bad > 0.5, "axis": spec["axis"]}


# ---------------------------------------------------------------------------- compare and export


def _compare(a: Path, b: Path, tolerance: float, n_boot: int, seed: int) -> Comparison:
    from clearsight.grounding.compare import compare_grounding

    return compare_grounding(a, b, tolerance=tolerance, n_boot=n_boot, seed=seed)


def _rows(run_dir: Path, keys: Collection[str] | None = None) -> Iterator[Row]:
    from clearsight.grounding.results import load_grounding_results

    return frame_rows(load_grounding_results(run_dir).elicitations, keys)


def _shown(run_dir: Path, stored: Mapping[str, Mapping[str, Any]]) -> dict[str, bytes]:
    """Each stored elicitation's problem image as PNG by key (those with one)."""
    from clearsight.faces.sample import png_bytes
    from clearsight.grounding.problems.images import load_image

    refs = {key: (spec.get("problem") or {}).get("image") for key, spec in stored.items()}
    return {key: png_bytes(load_image(ref)) for key, ref in refs.items() if ref}


def _view(run_dir: Path) -> RunView:
    from clearsight.grounding.view import GroundingRunView

    return GroundingRunView(run_dir)


#: Trajectory grounding's face after its run (see the module docstring).
GROUNDING_FACE = ProtocolFace(
    "grounding",
    report=_report,
    reask=Reaskable(
        "grounding.elicit", _stratum, _typed, _masked, _answer, no_context, labels=_labels
    ),
    derive={
        "grounding.trajectory": _trajectory,
        "grounding.elicit": _elicit,
        "grounding.judge": _judge,
    },
    card=grounding_card,
    card_run=GROUNDING_CARD_RUN,
    rows=_rows,
    shown=_shown,
    compare=_compare,
    view=_view,
)


# ------------------------------------------------------------------------------ build-bench


def bench_summary(bench: TgsBench, written: tuple[Path, Path] | None = None) -> str:
    """A TGS-Bench pool's retention table, rejection reasons, injectors and (``written``) the
    files it was written to, as text."""
    from clearsight.grounding import retention_table

    manifest = bench.manifest
    lines = ["retention (kept / attempted):", retention_table(manifest).to_string(index=False)]
    for title, key in (
        ("rejections", "rejections"),
        ("injectors", "injectors"),
        ("model edits refused (the rule stepped in)", "model_edits_refused"),
        ("judge picked the bad side", "judge_picked_bad"),
    ):
        for where, counts in (manifest.get(key) or {}).items():
            lines.append(f"{title}: {where}: {counts}")
    size = f"{len(bench.items)} items, {sum(len(i.pairs) for i in bench.items)} pairs"
    lines.append(
        f"pool: {size}" if written is None else f"wrote {written[0]} ({size}) and {written[1]}"
    )
    return "\n".join(lines)


def _describe_bench(run_dir: Path) -> str:
    """A TGS-Bench build's pool, read from its run (what ``clearsight report`` prints)."""
    from clearsight.grounding import BuildBenchConfig, read_bench

    config = BuildBenchConfig.model_validate(run_manifest(run_dir).get("config") or {})
    return bench_summary(read_bench(config, run_dir))


#: A TGS-Bench build's face: no page, its pool's retention printed.
BUILD_BENCH_FACE = ProtocolFace("grounding.build-bench", describe=_describe_bench)
