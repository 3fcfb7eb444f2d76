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
* **serve**: people answering the run's questions on its images
  (:func:`~clearsight.sweep.references.sessions.sweep_sessions`, ``clearsight serve --sweep``).
* **view**: :class:`clearsight.sweep.view.SweepRunView` (``clearsight view``).

The report tells a ``measured`` listener the card's numbers and, per model, arm, task, wording
and signal (accuracy, confidences, abstain rate), the curve's estimate at each level of the arm
(step: the level's index, the level in metres beside), from the analysis it is written from.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import JsonValue

from clearsight.faces.card import as_float
from clearsight.faces.face import (
    LevelPoint,
    Measured,
    ProtocolFace,
    ReportRequest,
    Row,
    frame_rows,
)
from clearsight.faces.serving import Serving
from clearsight.faces.verifying import ItemLabels, Reaskable, number_at, text_at
from clearsight.models.base import Capabilities
from clearsight.specs import Spec
from clearsight.store import Record
from clearsight.sweep.face.card import SWEEP_CARD_RUN, sweep_card, sweep_numbers
from clearsight.tasks import Question
from clearsight.tasks.question import TemplateRef

if TYPE_CHECKING:
    from clearsight.faces.comparison import Comparison
    from clearsight.faces.serving import ServeSettings, SessionHost
    from clearsight.faces.viewing import RunView
    from clearsight.pages.output import ReportPaths
    from clearsight.sweep.analysis import SweepAnalysis

__all__ = ["SWEEP_FACE", "question_of"]

#: Bootstrap draws and seed of a sweep report unless told.
N_BOOT, SEED = 2000, 0


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


def _stratum(spec: Mapping[str, object]) -> tuple[object, ...]:
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


def _labels(spec: Mapping[str, object]) -> ItemLabels:
    return ItemLabels(
        model=text_at(spec, "model"),
        scene=text_at(spec, "scene", "id"),
        condition=text_at(spec, "condition"),
        level_m=number_at(spec, "level_m"),
        wording=text_at(spec, "wording"),
    )


def _needs(item: Any) -> Capabilities:
    verbal = item.question.readout == "verbalized"
    return Capabilities(generate=verbal, candidate_probs=not verbal)


@dataclass(frozen=True)
class _Budget:
    """What every re-ask of a sweep run needs from its configuration: the depth model its
    images are rendered with and the generation budget of its verbalized wordings."""

    depth_model: str
    max_new_tokens: int


def _context(config: Mapping[str, object]) -> _Budget:
    from clearsight.sweep.config import SweepConfig

    sweep = SweepConfig.model_validate(config)
    return _Budget(sweep.coco_depth_model, sweep.max_new_tokens)


def _answer(
    items: Sequence[Any], model: str, options: Mapping[str, JsonValue], context: _Budget
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
    depth, budget = context.depth_model, context.max_new_tokens
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


def _compare(a: Path, b: Path, tolerance: float, n_boot: int, seed: int) -> Comparison:
    from clearsight.sweep.comparison.matching import compare_sweeps

    return compare_sweeps(a, b, tolerance=tolerance, n_boot=n_boot, seed=seed)


def _rows(run_dir: Path, keys: Collection[str] | None = None) -> Iterator[Row]:
    from clearsight.sweep.results import load_run_data

    return frame_rows(load_run_data(run_dir).records, keys)


def _sessions(run_dir: Path, settings: ServeSettings) -> SessionHost:
    from clearsight.sweep.references.sessions import sweep_sessions

    return sweep_sessions(run_dir, settings)


def _shown(run_dir: Path, stored: Mapping[str, Mapping[str, Any]]) -> dict[str, bytes]:
    """The image each stored question was shown with, as PNG by key: planned again from the
    run's configuration and rendered as the run rendered it
    (:func:`~clearsight.sweep.references.human.item_png`)."""
    from clearsight.store import run_manifest
    from clearsight.sweep.references.human import item_png
    from clearsight.sweep.specs import SweepItem

    config = run_manifest(run_dir).get("config") or {}
    depth = _context(config).depth_model
    items = _typed(config, stored).items()
    return {key: item_png(item, depth) for key, item in items if isinstance(item, SweepItem)}


def _view(run_dir: Path) -> RunView:
    from clearsight.sweep.view import SweepRunView

    return SweepRunView(run_dir, question_of)


#: The sweep's face after its run (see the module docstring).
SWEEP_FACE = ProtocolFace(
    "sweep",
    report=_report,
    reask=Reaskable("sweep", _stratum, _typed, _needs, _answer, _context, labels=_labels),
    derive={"sweep": _derive},
    card=sweep_card,
    card_run=SWEEP_CARD_RUN,
    rows=_rows,
    shown=_shown,
    compare=_compare,
    serve=Serving(sessions=_sessions),
    view=_view,
)
