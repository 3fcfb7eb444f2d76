"""The grounding paper's numbers of a finished run, as one typed value (no rendering).

:func:`analyse_grounding` reads a grounding run (:mod:`clearsight.grounding.results`) and
scores it (:mod:`clearsight.grounding.tgs`) into a :class:`GroundingAnalysis`: the scores of
the run's main read-out (``verbalize`` when scored) overall (mean over benchmarks of
per-benchmark means, with a two-stage bootstrap interval, 5000 draws by default; ECE and
AUROC of the visible self confidence for the own answers' correctness averaged the same way,
their values over the pooled items (item bootstrap) beside them, and AURC and E-AURC over the
pooled items) and per benchmark; every scored calibration read-out side by side (the paper's
Table 2: ECE, AUROC, TGS-self, TGS-pair, coverage, P(JSD <= 0.1) per axis;
:mod:`clearsight.grounding.confidence.readout_table`);
content variation (P(JSD <= 0.1) per axis), hesitation (P(|dc| <= .02), mean change), the
masking curve, the risk-coverage curves of the confidence gating the own answers, an exact
Wilcoxon test of visible against masked confidence over benchmark means, and — for further
runs given as ``others`` (other checkpoints or methods) — their analyses, each run named
uniquely, and exact Wilcoxon tests of TGS-self and TGS-pair between the runs — and every
method's (run's read-out's) scores on the items valid for all of them, the common-valid
populations the paper draws Figs. 11/12 and 15/16 on (:mod:`clearsight.grounding.population`).
:mod:`clearsight.grounding.page.report` renders it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pandas as pd

from clearsight.grounding.bench.use import retention_table
from clearsight.grounding.confidence.methods import DEFAULT_READOUT
from clearsight.grounding.confidence.readout_table import (
    AxisVariation,
    ReadoutScores,
    axis_variation,
    compare_readouts,
    holistic_tgs,
    readout_order,
    readout_scores,
)
from clearsight.grounding.examples import Example, example_trajectories
from clearsight.grounding.hesitation import event_pairs, stable_share
from clearsight.grounding.population import CommonPopulation, common_population, report_methods
from clearsight.grounding.results import GroundingResults, SampledVariation, load_grounding_results
from clearsight.grounding.tgs import MASK_RATIOS, Score, item_differences, scores
from clearsight.metrics.selective import RiskCoverage, risk_coverage
from clearsight.metrics.significance import wilcoxon_exact
from clearsight.store import RunStore, run_cost, spec_model
from clearsight.validate import InputError

__all__ = [
    "Comparison",
    "GatedAnswers",
    "GroundingAnalysis",
    "Hesitation",
    "RiskCut",
    "WilcoxonTest",
    "analyse_grounding",
    "analyse_results",
    "analyse_runs",
]

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Hesitation:
    """Every scored hesitation event: how many, in how many trajectories (and the most in
    one), P(|c_pre - c_post| <= 0.02), the mean change and each event's confidences."""

    n_events: int
    n_trajectories: int
    max_events_per_trajectory: int
    stable_share: float
    mean_change: float
    pre: tuple[float, ...]
    post: tuple[float, ...]


@dataclass(frozen=True)
class RiskCut:
    """One risk-coverage curve of the confidence gating the own answers: its label, its
    number of answers and the curve (None without an answer)."""

    label: str
    n: int
    curve: RiskCoverage | None


@dataclass(frozen=True)
class GatedAnswers:
    """Each own answer's visible self confidence and correctness (1.0 right) with its
    benchmark, and the risk-coverage curves they give: every answer, then each benchmark's."""

    benchmark: tuple[str, ...]
    confidence: FloatArray
    correct: FloatArray
    curves: tuple[RiskCut, ...]


@dataclass(frozen=True)
class WilcoxonTest:
    """An exact two-sided Wilcoxon signed-rank test over ``n`` paired benchmark values."""

    statistic: float
    p: float
    n: int


@dataclass(frozen=True)
class Comparison:
    """This run against the run ``other`` on the score ``score`` (``tgs_self`` or
    ``tgs_pair``), over the benchmarks both have a finite score for."""

    other: str
    score: str
    test: WilcoxonTest


@dataclass(frozen=True)
class GroundingAnalysis:
    """Everything the grounding report shows (see the module docstring).

    ``readouts``: every scored read-out's Table 2 row, the main read-out's first (from
    ``overall``).

    ``overall`` and each ``per_benchmark`` entry are keyed by the names of
    :func:`clearsight.grounding.tgs.scores`; ``curve`` / ``curve_change`` by the masked share
    r. A run without an elicitation has only the counts, the failures, ``comparisons`` and
    ``retention``. ``retention``: the retention table of the TGS-Bench file the run scored
    (None for a run that built its pairs itself). ``others``: the further runs' analyses.
    ``cost``: what each model of the run cost (:func:`~clearsight.store.run_cost`).
    ``common``: the methods' scores on the items valid for all of them.
    """

    name: str
    n_elicitations: int
    n_trajectories: int
    failures: dict[str, int]
    readout: str = DEFAULT_READOUT
    trajectory: str = ""
    """The own trajectories' template, as the report states it."""
    model: str = ""
    """The measured model, as Table 2 names its rows."""
    native: str = ""
    """The measured model's native template family: whether a trained method's read-out ran
    on its checkpoint (:func:`~clearsight.grounding.confidence.readout_table.provenance`)."""
    readouts: dict[str, ReadoutScores] = field(default_factory=dict)
    overall: dict[str, Score] = field(default_factory=dict)
    per_benchmark: dict[str, dict[str, Score]] = field(default_factory=dict)
    accuracy: float | None = None
    selective: GatedAnswers | None = None
    variation: dict[str, AxisVariation] = field(default_factory=dict)
    variation_sampling: dict[str, SampledVariation] = field(default_factory=dict)
    hesitation: Hesitation | None = None
    visible_vs_masked: WilcoxonTest | None = None
    curve: dict[float, Score] = field(default_factory=dict)
    curve_change: dict[float, Score] = field(default_factory=dict)
    judge: dict[str, dict[str, float]] = field(default_factory=dict)
    comparisons: tuple[Comparison, ...] = ()
    retention: pd.DataFrame | None = None
    others: tuple[GroundingAnalysis, ...] = ()
    cost: pd.DataFrame | None = None
    examples: tuple[Example, ...] = ()
    """A few own trajectories with their hesitation events marked (Figs. 1 and 4;
    :func:`~clearsight.grounding.examples.example_trajectories`, drawn with the seed)."""
    example_seed: int = 0
    common: CommonPopulation | None = None
    """Every method's scores on the report's common-valid populations (Figs. 11/12, 15/16;
    :mod:`clearsight.grounding.population`): the report's analysis only."""


def _hesitation(elic: pd.DataFrame) -> Hesitation:
    """Every scored hesitation event: counts, P(|c_pre - c_post| <= 0.02), the mean change
    and the per-event confidences (the scatter's points)."""
    events = event_pairs(elic)
    change = events["post"] - events["pre"]
    return Hesitation(
        n_events=len(events),
        n_trajectories=int(events["problem"].nunique()),
        max_events_per_trajectory=int(events["event"].max() + 1) if len(events) else 0,
        stable_share=stable_share(events["pre"], events["post"]),
        mean_change=float(change.mean()) if len(events) else float("nan"),
        pre=tuple(events["pre"].tolist()),
        post=tuple(events["post"].tolist()),
    )


def _gated_answers(elic: pd.DataFrame, trajs: pd.DataFrame) -> GatedAnswers:
    """Each own answer's visible self confidence and correctness, with its benchmark, and the
    risk-coverage curves of the confidence gating the answers (all, then per benchmark)."""
    if trajs.empty:
        bench: list[str] = []
        conf, correct = np.zeros(0), np.zeros(0)
    else:
        d = item_differences(elic).merge(trajs[["problem", "correct"]], on="problem")
        d = d[np.isfinite(d["E_r0.00"].to_numpy(float))]
        bench = d["benchmark"].astype(str).tolist()
        conf, correct = d["E_r0.00"].to_numpy(float), d["correct"].to_numpy(float)
    labels = np.asarray(bench, dtype=object)
    cuts = [("all benchmarks", conf, correct)]
    cuts += [(b, conf[labels == b], correct[labels == b]) for b in sorted(set(bench))]
    curves = tuple(
        RiskCut(label, int(c.size), risk_coverage(c, y) if c.size else None) for label, c, y in cuts
    )
    return GatedAnswers(tuple(bench), conf, correct, curves)


def _visible_vs_masked(elic: pd.DataFrame) -> WilcoxonTest | None:
    """Visible against fully masked confidence over benchmark means (exact Wilcoxon)."""
    d = item_differences(elic)
    means = d.groupby("benchmark")[["E_r0.00", "E_r1.00"]].mean().dropna()
    if len(means) < 1:
        return None
    stat, p = wilcoxon_exact(means["E_r0.00"], means["E_r1.00"])
    return WilcoxonTest(stat, p, len(means))


def _main_scores(
    main: str, elic_all: pd.DataFrame, trajs: pd.DataFrame, n_boot: int, seed: int
) -> tuple[dict[str, Score], dict[str, dict[str, Score]]]:
    """The main read-out's scores overall and per benchmark, TGS on the holistic confidence
    (:func:`~clearsight.grounding.confidence.readout_table.holistic_tgs`)."""
    elic = elic_all[elic_all["readout"] == main] if "readout" in elic_all else elic_all

    def scored(rows: pd.DataFrame, bench: str | None) -> dict[str, Score]:
        mine = None  # a run without its own trajectories (none stored) has no TGS-pair
        if len(trajs):
            mine = trajs if bench is None else trajs[trajs["benchmark"] == bench]
        sc = scores(rows, mine, n_boot=n_boot, seed=seed)
        here = elic_all if bench is None else elic_all[elic_all["benchmark"] == bench]
        return holistic_tgs(main, sc, here, n_boot, seed)

    per = {str(bench): scored(sub, str(bench)) for bench, sub in elic.groupby("benchmark")}
    return scored(elic, None), per


def analyse_results(
    results: GroundingResults, n_boot: int = 5000, seed: int = 0
) -> GroundingAnalysis:
    """A read-back run's numbers: the scores of the main read-out (the first of
    :func:`readout_order`) and, when it scored several, the read-outs side by side (no
    comparison with other runs, no retention table: :func:`analyse_grounding` adds them)."""
    elic_all, trajs = results.elicitations, results.trajectories
    counts = GroundingAnalysis(
        results.name,
        len(elic_all),
        len(trajs),
        results.failures,
        trajectory=results.trajectory,
        model=results.model,
        native=results.native,
    )
    if elic_all.empty:
        return counts
    names = readout_order(elic_all)
    elic = elic_all[elic_all["readout"] == names[0]] if "readout" in elic_all else elic_all
    overall, per = _main_scores(names[0], elic_all, trajs, n_boot, seed)
    curve = {
        r: overall[f"E_r{r:.2f}"]
        for r in MASK_RATIOS
        if f"E_r{r:.2f}" in overall and overall[f"E_r{r:.2f}"].n_items
    }
    return replace(
        counts,
        readout=names[0],
        readouts=(
            compare_readouts(elic_all, trajs, n_boot, seed)
            if len(names) > 1
            else {names[0]: readout_scores(overall, elic)}
        ),
        overall=overall,
        per_benchmark=per,
        accuracy=float(trajs["correct"].mean()) if len(trajs) else None,
        selective=_gated_answers(elic, trajs),
        variation=axis_variation(elic),
        variation_sampling=results.variation,
        hesitation=_hesitation(elic),
        examples=example_trajectories(elic, trajs, seed),
        example_seed=seed,
        visible_vs_masked=_visible_vs_masked(elic),
        curve=curve,
        curve_change={r: overall[f"dE_r{r:.2f}"] for r in MASK_RATIOS if curve},
        judge=results.judge,
    )


def _comparisons(
    analysis: GroundingAnalysis, others: Sequence[GroundingAnalysis]
) -> tuple[Comparison, ...]:
    """Exact Wilcoxon tests of TGS-self and TGS-pair of this run against each other run, over
    the benchmarks both have a finite score for."""
    out = []
    for other in others:
        for key in ("tgs_self", "tgs_pair"):
            a = {b: s[key].interval.estimate for b, s in analysis.per_benchmark.items()}
            b_ = {b: s[key].interval.estimate for b, s in other.per_benchmark.items()}
            common = sorted(k for k in set(a) & set(b_) if np.isfinite(a[k]) and np.isfinite(b_[k]))
            if common:
                t, p = wilcoxon_exact([a[k] for k in common], [b_[k] for k in common])
                out.append(Comparison(other.name, key, WilcoxonTest(t, p, len(common))))
    return tuple(out)


def run_names(paths: Sequence[Path]) -> list[str]:
    """A name per run: its directory's name, or the path as given where two runs share a name
    (the same run given twice is an InputError: it would be compared with itself)."""
    resolved = [p.resolve() for p in paths]
    if len(set(resolved)) < len(resolved):
        twice = next(str(p) for p, r in zip(paths, resolved, strict=True) if resolved.count(r) > 1)
        raise InputError(f"{twice} is given twice: give each grounding run once")
    names = [p.name for p in paths]
    return [n if names.count(n) == 1 else str(p) for n, p in zip(names, paths, strict=True)]


def _bench_retention(run: Path) -> pd.DataFrame | None:
    """The retention table of the TGS-Bench file a run scored (its manifest is kept in the
    run's); None for a run that built its pairs itself."""
    with RunStore.open(run, read_only=True) as store:
        manifest = store.manifest().get("tgs_bench")
    return retention_table(manifest) if manifest else None


def analyse_grounding(
    run_dir: Path | str, others: Sequence[Path | str] = (), *, n_boot: int = 5000, seed: int = 0
) -> GroundingAnalysis:
    """The numbers of the grounding run in ``run_dir`` (read-only; InputError for a run of
    another protocol), with ``n_boot`` bootstrap draws seeded by ``seed``.

    ``others``: further grounding runs (other models, checkpoints or methods), analysed alike,
    compared with this one by exact Wilcoxon over benchmark means of TGS-self and TGS-pair, and
    kept in :attr:`GroundingAnalysis.others` (the report's Table 2 and its comparison figures
    show them all). Each run is named by its directory's name, or by its path as given where
    two runs share a name.
    """
    run = Path(run_dir)
    paths = [run, *(Path(o) for o in others)]
    names = run_names(paths)
    loaded = [load_grounding_results(p) for p in paths]
    analysis = analyse_runs(loaded, names, n_boot=n_boot, seed=seed)
    return replace(
        analysis,
        retention=_bench_retention(run),
        cost=run_cost(run, spec_model("model", "generator", "judge")),
    )


def analyse_runs(
    runs: Sequence[GroundingResults], names: Sequence[str], *, n_boot: int = 5000, seed: int = 0
) -> GroundingAnalysis:
    """The first run's analysis with the others beside it (:func:`analyse_grounding`, without
    the files only a run directory holds: retention, cost), each named by ``names``, and
    every method's scores on their common-valid populations
    (:func:`~clearsight.grounding.population.common_population`)."""
    made = [
        replace(analyse_results(r, n_boot, seed), name=name)
        for r, name in zip(runs, names, strict=True)
    ]
    analysis, further = made[0], tuple(made[1:])
    methods = report_methods(list(zip(names, runs, strict=True)))
    return replace(
        analysis,
        comparisons=_comparisons(analysis, further),
        others=further,
        common=common_population(methods, n_boot, seed) if methods else None,
    )
