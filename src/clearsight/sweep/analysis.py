"""The visibility sweep's numbers, as typed values: what the report, the card and the guard read.

:func:`analyse_sweep` reads a finished (or partial) run and computes everything the paper
states about it, once, with one seeded scene bootstrap: the curves, crossing visibilities V*
and blind-spot widths W (:mod:`clearsight.sweep.numbers.crossings`), per task the full sweep and
controls tables (:mod:`clearsight.sweep.numbers.tables`), the calibration and
selective-prediction tables with their intervals (:mod:`clearsight.sweep.numbers.confidence`)
and the numbers behind the reliability diagrams and risk-coverage curves
(:mod:`clearsight.sweep.numbers.panels`), the ImageNet-C severities on the metre axis
(:mod:`clearsight.sweep.images.equivalence`), the depth of the scene set, for guarded models
the guard's estimate against the true visibility (:mod:`clearsight.sweep.numbers.guarded`), the
headline (:mod:`clearsight.sweep.numbers.headline`), the crossings' labels, the qualitative
examples with their thumbnails, and what the page states of the run besides its numbers
(:mod:`clearsight.sweep.numbers.facts`: which wordings each signal's curves and columns show).
The page (:mod:`clearsight.sweep.page`) renders a :class:`SweepAnalysis` and reads nothing else.

Tables are DataFrames with the columns their functions document (they are written as CSV and
rendered as tables); everything else is a frozen dataclass.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from clearsight.store import run_cost, spec_model
from clearsight.sweep.images.equivalence import (
    DynamicRanges,
    MonotoneShare,
    dynamic_ranges,
    imagenet_c_table,
    monotone_veq_share,
    veq_summary,
)
from clearsight.sweep.images.examples import Examples, sweep_examples
from clearsight.sweep.numbers.confidence import calibration_table, selective_table
from clearsight.sweep.numbers.corruptions import CorruptionNumbers, corruption_numbers
from clearsight.sweep.numbers.crossings import SceneBootstrap, scene_bootstrap
from clearsight.sweep.numbers.depth import DepthSummary, depth_summary
from clearsight.sweep.numbers.facts import (
    CurveLine,
    RunFacts,
    crossing_columns,
    curve_lines,
    run_facts,
)
from clearsight.sweep.numbers.guarded import guard_estimate_table
from clearsight.sweep.numbers.headline import headline_table
from clearsight.sweep.numbers.panels import (
    ReliabilityPanel,
    RiskPanel,
    asked_panels,
    reliability_panels,
    risk_panels,
)
from clearsight.sweep.numbers.recalibrated import Recalibrated, recalibrated_numbers
from clearsight.sweep.numbers.tables import asked_accuracy, controls_table, sweep_table
from clearsight.sweep.numbers.wordings import main_wording_records, wording_table
from clearsight.sweep.page.labels import labelled_crossings
from clearsight.sweep.results import RunData, load_run_data, primary_wording
from clearsight.sweep.signals import Signal

__all__ = [
    "SweepAnalysis",
    "TaskAnalysis",
    "analyse_run",
    "analyse_sweep",
]


@dataclass(frozen=True)
class TaskAnalysis:
    """What the report states about one task (identification t2, verification t3).

    ``chance``: 1/k, k the median number of content options. ``sweep`` and ``controls``:
    :func:`~clearsight.sweep.numbers.tables.sweep_table` and
    :func:`~clearsight.sweep.numbers.tables.controls_table`; ``wordings``: the verbalized
    wordings on matched images (Table VI, :func:`~clearsight.sweep.numbers.wordings.wording_table`);
    ``calibration`` and ``selective``:
    :func:`~clearsight.sweep.numbers.confidence.calibration_table` and
    :func:`~clearsight.sweep.numbers.confidence.selective_table`; ``imagenet_c``:
    :func:`~clearsight.sweep.images.equivalence.imagenet_c_table`; ``asked``:
    :func:`~clearsight.sweep.numbers.tables.asked_accuracy` (verification only);
    ``reliability`` (the arms each model was shown, the wordings it was asked) and ``risk``:
    the panels of the reliability diagrams and risk-coverage curves, a row per model and arm.
    ``order``: the task's wordings, letter ones first; ``letter`` and ``verbal``: the main
    wording of each kind (None: none asked); ``lines``: each model's Fig. 3 curves;
    ``columns``: the awareness columns of the crossings' headline table.
    """

    task: str
    chance: float
    sweep: pd.DataFrame
    wordings: pd.DataFrame
    controls: pd.DataFrame
    calibration: pd.DataFrame
    selective: pd.DataFrame
    imagenet_c: pd.DataFrame
    asked: pd.DataFrame
    reliability: tuple[tuple[ReliabilityPanel, ...], ...]
    risk: tuple[tuple[RiskPanel, ...], ...]
    order: tuple[str, ...] = ()
    letter: str | None = None
    verbal: str | None = None
    lines: Mapping[str, tuple[CurveLine, ...]] = field(default_factory=dict)
    columns: tuple[tuple[str, Signal], ...] = ()

    @property
    def main(self) -> str | None:
        """The main wording: the main letter wording, else the main verbalized one."""
        return self.letter or self.verbal


@dataclass(frozen=True)
class SweepAnalysis:
    """A sweep run's numbers (module docstring): the run read back (``data``, for the card and
    the guard; the page reads ``run``, its :class:`~clearsight.sweep.numbers.facts.RunFacts`),
    its scene bootstrap, each task's :class:`TaskAnalysis` (in the run's task order), the
    ImageNet-C summaries (``veq``: :func:`~clearsight.sweep.images.equivalence.veq_summary`;
    ``monotone``; ``ranges``), the scene set's depth, the guard's estimate table (empty without
    a guarded model), the number of distinct targets with records, what each model cost
    (``cost``: :func:`~clearsight.store.run_cost`, one row per model), the qualitative
    examples of its first task (``run.first_task``;
    :func:`~clearsight.sweep.images.examples.sweep_examples`), the headline
    (:func:`~clearsight.sweep.numbers.headline.headline_table`, computed once) and the
    crossings with the labels a reader sees (``labelled``: the rows of summary.csv,
    :func:`~clearsight.sweep.page.labels.labelled_crossings`); ``corruptions``: every ImageNet-C
    corruption of the run on the metre axis with its crossings and W
    (:func:`~clearsight.sweep.numbers.corruptions.corruption_numbers`, the same bootstrap
    settings); ``recalibrated``: calibration under weather — temperature, Platt and isotonic
    maps and a conformal threshold fitted on the clean images, applied at every level of
    every arm (:func:`~clearsight.sweep.numbers.recalibrated.recalibrated_numbers`, the same
    photo draws, refitted in each)."""

    data: RunData
    run: RunFacts
    bootstrap: SceneBootstrap
    tasks: Mapping[str, TaskAnalysis]
    veq: pd.DataFrame
    monotone: MonotoneShare
    ranges: DynamicRanges
    depth: DepthSummary
    guard: pd.DataFrame
    n_targets: int
    cost: pd.DataFrame
    headline: pd.DataFrame
    labelled: pd.DataFrame
    corruptions: CorruptionNumbers
    recalibrated: Recalibrated
    examples: Examples | None = None

    @property
    def curves(self) -> pd.DataFrame:
        """The bootstrap's curves (:class:`~clearsight.sweep.numbers.crossings.SceneBootstrap`)."""
        return self.bootstrap.curves

    @property
    def crossings(self) -> pd.DataFrame:
        """The bootstrap's crossings and W, one row per model × task × arm × wording × signal."""
        return self.bootstrap.crossings


def analyse_sweep(
    run_dir: Path | str, *, n_boot: int = 2000, seed: int = 0, thumbnails: bool = False
) -> SweepAnalysis:
    """Read the sweep run in ``run_dir`` (read-only) and compute its :class:`SweepAnalysis`:
    ``n_boot`` bootstrap replicates resample scenes with replacement from
    ``numpy.random.default_rng(seed)``, so the same run, B and seed give the same numbers;
    ``thumbnails`` draws the examples' images (a few seconds: a scene load and the physics)."""
    data = load_run_data(Path(run_dir))
    return analyse_run(data, n_boot=n_boot, seed=seed, thumbnails=thumbnails)


def analyse_run(
    data: RunData,
    *,
    n_boot: int = 2000,
    seed: int = 0,
    level: float = 0.95,
    thumbnails: bool = False,
) -> SweepAnalysis:
    """The :class:`SweepAnalysis` of a run already read (``level``: the intervals' coverage;
    ``thumbnails``: draw the examples' images)."""
    boot = scene_bootstrap(data, n_boot=n_boot, seed=seed, level=level)
    veq = veq_summary(data.veq)
    rec = data.records
    run = run_facts(data)
    tasks = {task: _task_analysis(data, boot, veq, task) for task in data.tasks}
    corruptions = corruption_numbers(data, n_boot=n_boot, seed=seed, level=level)
    return SweepAnalysis(
        data=data,
        run=run,
        bootstrap=boot,
        tasks=tasks,
        veq=veq,
        monotone=monotone_veq_share(data.veq),
        ranges=dynamic_ranges(main_wording_records(rec)),
        depth=depth_summary(data.depth),
        guard=guard_estimate_table(data),
        n_targets=rec[["scene", "target"]].drop_duplicates().shape[0] if not rec.empty else 0,
        cost=run_cost(data.run_dir, spec_model("model")),
        headline=headline_table(boot.crossings, tasks, run),
        labelled=labelled_crossings(boot.crossings, data.levels),
        corruptions=corruptions,
        recalibrated=recalibrated_numbers(
            data, corruptions.veq, n_boot=n_boot, seed=seed, level=level
        ),
        examples=sweep_examples(data, run.first_task, thumbnails) if run.first_task else None,
    )


def _task_analysis(
    data: RunData, boot: SceneBootstrap, veq: pd.DataFrame, task: str
) -> TaskAnalysis:
    """The :class:`TaskAnalysis` of ``task`` (the task's records are read column by column,
    never copied whole: at the paper's scale a copy is hundreds of MB)."""
    in_task = data.records["task"] == task
    n_options = data.records.loc[in_task, "n_options"].median()
    chance = 1.0 / float(n_options) if n_options and math.isfinite(n_options) else math.nan
    order = tuple(data.wordings(task))
    return TaskAnalysis(
        task=task,
        chance=chance,
        sweep=sweep_table(data, boot, task),
        wordings=wording_table(data, task),
        controls=controls_table(data, boot, task),
        calibration=calibration_table(data, task, boot),
        selective=selective_table(data, task, boot),
        imagenet_c=imagenet_c_table(boot.curves, veq, task),
        asked=asked_accuracy(data, task),
        reliability=asked_panels(
            reliability_panels(data, task),
            data.records.loc[in_task, ["model", "condition", "wording"]],
        ),
        risk=risk_panels(data, task),
        order=order,
        letter=primary_wording(list(order), verbal=False),
        verbal=primary_wording(list(order), verbal=True),
        lines={model: curve_lines(order, model) for model in data.models},
        columns=crossing_columns(order),
    )
