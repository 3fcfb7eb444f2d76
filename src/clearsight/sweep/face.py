"""The sweep after its run: :data:`SWEEP_FACE`, what its report, ``clearsight verify``, the card
and export ask of a sweep run (:class:`~clearsight.faces.face.ProtocolFace`).

* **report**: :func:`clearsight.sweep.page.report.build_sweep_report` (2000 bootstrap draws, seed 0
  unless told), one run per report.
* **verify**: the questions to the VLMs (kind ``sweep``), planned again from the run's
  configuration (an item is a pure function of its spec, so the same configuration plans the
  same keys), stratified over models, conditions (each level and severity its own), tasks and
  wordings, and answered by the sweep's own request and read-outs
  (:func:`clearsight.sweep.unit.item_request`); a record's read-outs derived again by
  :func:`clearsight.sweep.readouts.sweep_readouts` on its question.
* **card**: per model of the run, per arm the accuracy crossing V*_acc of the letter wording,
  the blind-spot width W of the internal confidence, of the verbalized confidence and of the
  abstain rate (each with its censoring bound; the reference observer's abstention W under the
  generic wording with the reason it is not about 0), AURC of the internal confidence gating
  the answers and ECE of the internal and of the verbalized confidence, each pooled over clean
  and the arm's levels; and the clean accuracy. All from the run's
  :class:`~clearsight.sweep.analysis.SweepAnalysis` (one bootstrap over source photos).
* **rows**: one per answered question (the records of
  :func:`~clearsight.sweep.results.load_run_data`).
* **shown**: a question's image as the model saw it, its item planned again from the run's
  configuration (as verify plans it).

The report tells a ``measured`` listener the card's numbers and, per model, arm, task, wording
and signal (accuracy, confidences, abstain rate), the curve's estimate at each level of the arm
(step: the level's index, the level in metres beside), from the analysis it is written from.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from clearsight.faces.card import CardSection, Number, as_float, ci_number
from clearsight.faces.face import (
    LevelPoint,
    Measured,
    ProtocolFace,
    ReportRequest,
    Row,
    frame_rows,
)
from clearsight.faces.verifying import ItemLabels, Reaskable
from clearsight.models.base import Capabilities
from clearsight.specs import Spec
from clearsight.store import Record
from clearsight.sweep.results import is_verbal
from clearsight.tasks import Question
from clearsight.tasks.question import TemplateRef

if TYPE_CHECKING:
    from clearsight.faces.comparison import Comparison
    from clearsight.pages.output import ReportPaths
    from clearsight.sweep.analysis import SweepAnalysis

__all__ = ["SWEEP_FACE", "question_of", "sweep_numbers"]

#: Bootstrap draws and seed of a sweep report unless told.
N_BOOT, SEED = 2000, 0

#: W signals of the sweep on the card: (page label, signal, letter wording or not).
_W_SIGNALS: tuple[tuple[str, str, bool], ...] = (
    ("internal", "internal_conf", True),
    ("verbalized", "verbal_conf", False),
    ("abstain", "abstain", True),
)


def _report(request: ReportRequest) -> ReportPaths:
    from clearsight.sweep.analysis import analyse_sweep
    from clearsight.sweep.page.report import write_sweep_report

    request.alone("sweep")
    analysis = analyse_sweep(
        request.run_dir,
        n_boot=N_BOOT if request.n_boot is None else request.n_boot,
        seed=SEED if request.seed is None else request.seed,
        thumbnails=request.thumbnails,
    )
    if request.measured is not None:
        request.measured(Measured(sweep_numbers(analysis), level_points(analysis)))
    return write_sweep_report(analysis, request.out_dir or request.run_dir, request.appendix)


def level_points(analysis: SweepAnalysis) -> tuple[LevelPoint, ...]:
    """The curves' estimates at the levels of each arm (module docstring), in curve order."""
    levels = analysis.data.levels
    points = []
    for row in analysis.curves.itertuples(index=False):
        arm, x = str(row.condition), as_float(row.x)
        if arm not in levels or x not in levels[arm]:
            continue
        series = (str(row.model), arm, str(row.task), str(row.wording), str(row.signal))
        step = levels[arm].index(x)
        points.append(LevelPoint(series, step, x, "level_m", as_float(row.estimate)))
    return tuple(points)


# ----------------------------------------------------------------------------------- verify


def _stratum(spec: Mapping[str, Any]) -> tuple[Any, ...]:
    cell = (spec["condition"], spec.get("level_m"), spec.get("severity"))
    return (spec["model"], *cell, spec["task"], spec["wording"])


def _typed(config: Mapping[str, Any], stored: Mapping[str, Mapping[str, Any]]) -> dict[str, Spec]:
    from clearsight.sweep.config import SweepConfig
    from clearsight.sweep.plan import plan_sweep

    found: dict[str, Spec] = {}
    for unit in plan_sweep(SweepConfig.model_validate(config)).units:
        for item in unit.items:
            if item.key in stored:
                found[item.key] = item
    return found


def _labels(spec: Mapping[str, Any]) -> ItemLabels:
    return ItemLabels(
        model=spec.get("model"),
        scene=(spec.get("scene") or {}).get("id"),
        condition=spec.get("condition"),
        level_m=spec.get("level_m"),
        wording=spec.get("wording"),
    )


def _needs(item: Any) -> Capabilities:
    verbal = item.question.readout == "verbalized"
    return Capabilities(generate=verbal, candidate_probs=not verbal)


def _context(config: Mapping[str, Any]) -> dict[str, Any]:
    from clearsight.sweep.config import SweepConfig

    sweep = SweepConfig.model_validate(config)
    return {"depth_model": sweep.coco_depth_model, "max_new_tokens": sweep.max_new_tokens}


def _answer(
    items: Sequence[Any], model: str, options: Mapping[str, Any], context: Mapping[str, Any]
) -> list[Record]:
    """The sweep's own request of each item, all sent in one call, each reply read as the
    sweep reads it (records under the items' own keys)."""
    import time

    from clearsight.models import Request, shared_backend
    from clearsight.models.replies import checked_replies
    from clearsight.sweep.unit import item_record, item_request

    started = time.perf_counter()
    try:
        backend = shared_backend(model, options)
    except Exception as exc:  # recorded with its reason
        return [Record.failed(item.key, exc) for item in items]
    depth, budget = context["depth_model"], context["max_new_tokens"]
    built: list[Request | BaseException] = []
    for item in items:
        try:
            built.append(item_request(item, depth, budget))
        except Exception as exc:  # this re-ask fails alone, with its reason
            built.append(exc)
    answers = iter(checked_replies(backend, [r for r in built if isinstance(r, Request)]))
    replies = [r if isinstance(r, BaseException) else next(answers) for r in built]
    elapsed = (time.perf_counter() - started) / max(len(replies), 1)
    return [item_record(item, reply, elapsed) for item, reply in zip(items, replies, strict=True)]


def question_of(stored: Mapping[str, Any]) -> Question:
    """A sweep question from its stored form (what :meth:`Question.to_json` wrote)."""
    fields = dict(stored)
    for name in ("question_template", "instruction_template", "abstain_template"):
        ref = fields.get(name)
        fields[name] = None if ref is None else TemplateRef(ref["id"], ref["sha256"])
    fields["letters"], fields["options"] = tuple(fields["letters"]), tuple(fields["options"])
    return Question(**fields)


@lru_cache(maxsize=4096)
def _question(stored: str) -> Question:
    return question_of(json.loads(stored))


def _derive(spec: Mapping[str, Any], raw: Any, stored: Mapping[str, Any]) -> Mapping[str, Any]:
    from clearsight.sweep.readouts import sweep_readouts

    return sweep_readouts(_question(json.dumps(spec["question"], sort_keys=True)), raw)


# ------------------------------------------------------------------------------------- card


def _crossing_number(key: str, row: Any, levels: tuple[float, ...]) -> Number:
    """V* of a crossings row, shown as the report shows it ('≤ 1.95 m [1.95, 2.63] m')."""
    from clearsight.sweep.page.labels import crossing_label, interval_m

    v, lo, hi = as_float(row["v_star_m"]), as_float(row["v_low_m"]), as_float(row["v_high_m"])
    censored = str(row["censored"] or "")
    text = " ".join(s for s in (crossing_label(v, censored, levels), interval_m(lo, hi)) if s)
    return Number(key, v, lo, hi, text, censored, int(row["n_items"]))


def _w_number(key: str, row: Any) -> Number:
    """W of a crossings row with its bound, shown as the report shows it ('≥ +0.79 [...]'),
    and the reason beside it where the reference observer's W is not about 0 by design."""
    from clearsight.sweep.page.labels import interval, w_label
    from clearsight.sweep.references.observer import observer_note

    w, lo, hi = as_float(row["w"]), as_float(row["w_low"]), as_float(row["w_high"])
    bound = str(row["w_bound"] or "")
    reason = observer_note(str(row["model"]), str(row["wording"]), str(row["signal"]))
    shown = (w_label(w, bound) or "n/a", interval(lo, hi), f"({reason})" if reason else "")
    return Number(key, w, lo, hi, " ".join(s for s in shown if s), bound, int(row["n_items"]))


def _pooled(table: pd.DataFrame, model: str, arm: str, wording: str | None) -> Any:
    """The pooled (clean + every level of ``arm``) row of a confidence table, or None."""
    if table.empty or wording is None:
        return None
    hit = table[
        (table["model"] == model)
        & (table["arm"] == arm)
        & (table["wording"] == wording)
        & (table["level"] == "pooled")
    ]
    return hit.iloc[0] if len(hit) else None


def _confidence_numbers(
    analysis: SweepAnalysis, model: str, arm: str, letter: str | None, verbal: str | None
) -> list[Number]:
    """AURC of the internal confidence and ECE of the internal and verbalized confidence,
    pooled over clean and the arm's levels, as the report's tables give them."""
    identify = analysis.tasks.get("identify")
    if identify is None:
        return []
    numbers = []
    if (p := _pooled(identify.selective, model, arm, letter)) is not None:
        numbers.append(ci_number(f"{arm} AURC", p.aurc, p.aurc_low, p.aurc_high, int(p.n_scored)))
    for label, wording in (("internal", letter), ("verbalized", verbal)):
        if (c := _pooled(identify.calibration, model, arm, wording)) is not None:
            key = f"{arm} ECE {label}"
            numbers.append(ci_number(key, c.ece, c.ece_low, c.ece_high, int(c.n_scored)))
    return numbers


def _arm_numbers(
    arm: str, rows: pd.DataFrame, levels: tuple[float, ...], letter: str | None, verbal: str | None
) -> list[Number]:
    """V*_acc and the three W of one model and arm (those the run has rows for)."""

    def row(wording: str | None, signal: str) -> Any:
        hit = rows[(rows["wording"] == wording) & (rows["signal"] == signal)]
        return hit.iloc[0] if len(hit) else None

    numbers = []
    if (acc := row(letter, "accuracy")) is not None:
        numbers.append(_crossing_number(f"{arm} V*_acc", acc, levels))
    for label, signal, on_letter in _W_SIGNALS:
        if (r := row(letter if on_letter else verbal, signal)) is not None:
            numbers.append(_w_number(f"{arm} W {label}", r))
    return numbers


def sweep_numbers(analysis: SweepAnalysis) -> dict[str, list[Number]]:
    """Per model of the sweep run: its card numbers (module docstring), in page order."""
    data = analysis.data
    wordings = data.wordings("identify")
    letter = next((w for w in wordings if not is_verbal(w)), None)
    verbal = next((w for w in wordings if is_verbal(w)), None)
    cr, curves = analysis.crossings, analysis.curves
    out: dict[str, list[Number]] = {}
    for model in data.models:
        numbers: list[Number] = []
        clean = curves[
            (curves["model"] == model)
            & (curves["wording"] == letter)
            & (curves["signal"] == "accuracy")
            & (curves["condition"] == "clean")
        ]
        if len(clean):
            c = clean.iloc[0]
            numbers.append(ci_number("clean accuracy", c.estimate, c.low, c.high, int(c.n), 2))
        for arm in data.arms:
            rows = cr[(cr["model"] == model) & (cr["arm"] == arm)]
            numbers += _arm_numbers(arm, rows, data.levels[arm], letter, verbal)
            numbers += _confidence_numbers(analysis, model, arm, letter, verbal)
        out[model] = numbers
    return out


def _card(run_dir: Path, n_boot: int, seed: int) -> CardSection:
    """The sweep's card section: every model's numbers, the accuracy curves of the letter
    wording and the report written from the same analysis (no example images)."""
    from clearsight.sweep.analysis import analyse_sweep
    from clearsight.sweep.page.plots import accuracy_panels
    from clearsight.sweep.page.report import write_sweep_report

    analysis = analyse_sweep(run_dir, n_boot=n_boot, seed=seed)
    wordings = analysis.data.wordings("identify")
    letter = next((w for w in wordings if not is_verbal(w)), wordings[0] if wordings else "")
    return CardSection(
        "accuracy against visibility",
        by_model={m: tuple(v) for m, v in sweep_numbers(analysis).items()},
        cost=analysis.cost,
        figure=accuracy_panels(analysis.curves, letter, analysis.data.arms),
        write_report=lambda appendix: write_sweep_report(analysis, run_dir, appendix),
    )


def _compare(a: Path, b: Path, tolerance: float, n_boot: int, seed: int) -> Comparison:
    from clearsight.sweep.comparison.matching import compare_sweeps

    return compare_sweeps(a, b, tolerance=tolerance, n_boot=n_boot, seed=seed)


def _rows(run_dir: Path) -> Iterator[Row]:
    from clearsight.sweep.results import load_run_data

    return frame_rows(load_run_data(run_dir).records)


def _shown(run_dir: Path, stored: Mapping[str, Mapping[str, Any]]) -> dict[str, bytes]:
    """The image each stored question was shown with, as PNG by key: planned again from the
    run's configuration and rendered as the run rendered it
    (:func:`~clearsight.sweep.references.human.item_png`)."""
    from clearsight.store import run_manifest
    from clearsight.sweep.references.human import item_png
    from clearsight.sweep.specs import SweepItem

    config = run_manifest(run_dir).get("config") or {}
    depth = _context(config)["depth_model"]
    items = _typed(config, stored).items()
    return {key: item_png(item, depth) for key, item in items if isinstance(item, SweepItem)}


#: The sweep's face after its run (see the module docstring).
SWEEP_FACE = ProtocolFace(
    "sweep",
    report=_report,
    reask=Reaskable("sweep", _stratum, _typed, _needs, _answer, _context, labels=_labels),
    derive={"sweep": _derive},
    card=_card,
    rows=_rows,
    shown=_shown,
    compare=_compare,
)
