"""A probe run's numbers: the paper's Tables 1-9 and 11 and the data of Figures 2-6 and of
the risk-coverage curves, as one typed value.

Everything is recomputed from the run's records
(:func:`~clearsight.probe.results.load_probe_results`: transcripts of models and people, the stored
belief-probe and query-type results, stage-1 build samples, judges' validations), never from
anything the run kept aside. Tables 4 and 6 compare runs with another sensor or K, read as one
(``analyse_probe(run, others)``). :func:`analyse_probe` computes :class:`ProbeAnalysis`;
:mod:`clearsight.probe.page.report` only renders it. The computations are the protocol's own:
accuracy and cross-run calibration (:mod:`~clearsight.probe.numbers.accuracy`, its
risk-coverage curves :mod:`~clearsight.probe.numbers.risk`), the belief probe
(:mod:`~clearsight.probe.posthoc.belief`), query types
(:mod:`~clearsight.probe.posthoc.querytypes`), self-distillation's before-and-after
(:func:`~clearsight.probe.distill.analysis.distill_table`) and the judges against people
(:mod:`~clearsight.probe.posthoc.agreement`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Final

import pandas as pd

from clearsight.metrics.bootstrap import Interval
from clearsight.probe.distill.analysis import adapter_bases, distill_table, trained_instances
from clearsight.probe.numbers.accuracy import (
    ablation_table,
    calls_table,
    consistency_bins,
    domain_table,
    latency_table,
    queries_table,
    samples_table,
    sensor_table,
    summary_table,
)
from clearsight.probe.numbers.convergence import (
    BeliefCurves,
    anchoring_table,
    belief_curves,
    belief_table,
)
from clearsight.probe.numbers.risk import RiskPanel, risk_panels
from clearsight.probe.numbers.sensors import sensor_ece_table
from clearsight.probe.posthoc.querytypes import query_type_table
from clearsight.probe.results import ProbeResults, load_probe_results, pool_results
from clearsight.probe.transcript import Transcript
from clearsight.store import run_cost, spec_model

#: How many conversations that asked the sensor a report shows turn by turn.
EXAMPLES: Final = 6


@dataclass(frozen=True)
class ProbeAnalysis:
    """The numbers of one probe run (empty frames where the run lacks the data).

    ``conversations``: finished conversations. ``domains``: Table 1, accuracy (mean ± SD over
    runs) and cross-run ECE per setting and domain, each domain the macro-average of its
    datasets (the table ``summary.csv`` holds). ``datasets``: Table 11, accuracy, cross-run
    ECE, AURC and E-AURC per setting and dataset. ``consistency``: Fig. 2, accuracy by the
    sensor's direct consistency c of 11, counted from the stage-1 build samples where the run
    has them (``consistency_from_build``); none without them (a run's R direct answers do not
    define c of 11).
    ``ablation``: Fig. 3, accuracy by the consistency signal shown. ``query_types``: Table 3,
    one BP trial per reasoner (the paper's population); ``query_types_pooled``: the same over
    every conversation (every strategy, run, sensor and signal).
    ``convergence``: Table 7 and ``beliefs``: Fig. 4's curves, from the belief probe, per
    reasoner, sensor and signal; ``convergence_pooled``: Table 7 per reasoner over its sensors
    and signals (empty where that pools nothing); ``anchoring``: the early-anchoring share and
    the speed ratio per population and dataset
    (:func:`~clearsight.probe.numbers.convergence.anchoring_table`). ``sensor_calibration``: Fig. 7,
    each sensor's ECE per dataset from the stage-1 build samples
    (:func:`~clearsight.probe.numbers.sensors.sensor_ece_table`).
    ``calls``: Table 9, VLM calls per question. ``distillation``: Table 2, BP accuracy before
    and after self-distillation. ``validations``: Table 5, judges against people's labels of
    u. ``queries``: Fig. 5, queries per conversation. ``risk``: the risk-coverage curves of the
    cross-run confidence. ``examples``: the first conversations that asked the sensor.
    ``cost``: the sensor's seconds and tokens its records carry, per sensor model and run
    (:func:`~clearsight.store.run_cost`; None where not read). ``consistency_datasets``:
    Fig. 6, Fig. 2 by dataset. ``latency``: Table 8, seconds per conversation by strategy and
    sensor. ``sensors`` and ``samples``: Tables 4 and 6, settings with another sensor or K
    side by side (empty unless the runs read hold them). ``query_type_validations``: the
    query-type judge against people's labels (:mod:`~clearsight.probe.posthoc.qtypecheck`).
    ``settings``: per run, its generation limits (clearsight's choice per model,
    :mod:`~clearsight.probe.reasoner.limits`) and the judge behind u, in words."""

    conversations: int
    domains: pd.DataFrame
    datasets: pd.DataFrame
    consistency: pd.DataFrame
    consistency_from_build: bool
    ablation: pd.DataFrame
    query_types: pd.DataFrame
    query_types_pooled: pd.DataFrame
    convergence: pd.DataFrame
    beliefs: BeliefCurves
    calls: pd.DataFrame
    distillation: pd.DataFrame
    validations: pd.DataFrame
    queries: pd.DataFrame
    risk: tuple[RiskPanel, ...]
    examples: tuple[Transcript, ...]
    consistency_datasets: pd.DataFrame
    latency: pd.DataFrame
    sensors: pd.DataFrame
    samples: pd.DataFrame
    query_type_validations: pd.DataFrame
    cost: pd.DataFrame | None = None
    settings: tuple[str, ...] = ()
    convergence_pooled: pd.DataFrame = field(default_factory=pd.DataFrame)
    anchoring: pd.DataFrame = field(default_factory=pd.DataFrame)
    sensor_calibration: pd.DataFrame = field(default_factory=pd.DataFrame)


def _build_consistency(build: pd.DataFrame) -> pd.DataFrame | None:
    """The stage-1 build samples' c rescaled to 11 (``c11``), or None without any."""
    if build.empty:
        return None
    return build.assign(c11=(11 * build["c"] / build["n"]).round().astype(int))


def _pooled_convergence(beliefs: pd.DataFrame) -> pd.DataFrame:
    """Table 7 per reasoner over all its sensors and signals, or empty where each reasoner has
    one sensor and one signal (the pooled table would repeat the table)."""
    pooled = belief_table(beliefs, pooled=True)
    return pooled if len(pooled) < len(belief_table(beliefs)) else pd.DataFrame()


def probe_analysis(results: ProbeResults) -> ProbeAnalysis:
    """The numbers of a probe run read back (see :class:`ProbeAnalysis`)."""
    frame = results.transcripts
    consistency = _build_consistency(results.build)
    reasoners = [] if frame.empty else sorted(frame["reasoner"].unique())
    datasets = summary_table(frame, by=("dataset",))
    return ProbeAnalysis(
        conversations=len(frame),
        domains=domain_table(frame),
        datasets=datasets,
        consistency=consistency_bins(frame, consistency),
        consistency_from_build=consistency is not None,
        ablation=ablation_table(frame),
        query_types=query_type_table(results.queries),
        query_types_pooled=query_type_table(results.queries, pooled=True),
        convergence=belief_table(results.beliefs),
        convergence_pooled=_pooled_convergence(results.beliefs),
        anchoring=anchoring_table(results.beliefs),
        sensor_calibration=sensor_ece_table(results.build),
        beliefs=belief_curves(results.beliefs),
        calls=calls_table(frame),
        distillation=distill_table(frame, adapter_bases(reasoners), trained_instances(reasoners)),
        validations=results.validations,
        queries=queries_table(frame),
        risk=risk_panels(frame),
        examples=tuple(t for t in results.conversations if t.strategy != "direct")[:EXAMPLES],
        consistency_datasets=consistency_bins(frame, consistency, by=("dataset",)),
        latency=latency_table(frame),
        sensors=sensor_table(datasets),
        samples=samples_table(datasets),
        query_type_validations=results.query_type_validations,
        settings=results.settings,
    )


def analyse_probe(run_dir: Path | str, others: Sequence[Path | str] = ()) -> ProbeAnalysis:
    """The numbers of the probe run in ``run_dir`` (read-only); InputError naming the right
    command for a run of another protocol. ``others``: further probe runs whose settings are
    shown beside the run's own (:func:`~clearsight.probe.results.pool_results`; a setting two
    runs share is refused)."""
    results = load_probe_results(run_dir)
    cost = pd.concat([run_cost(r, spec_model("sensor")) for r in (run_dir, *others)])
    if not others:
        return replace(probe_analysis(results), cost=cost)
    runs = [(str(run_dir), results), *((str(o), load_probe_results(o)) for o in others)]
    return replace(probe_analysis(pool_results(runs)), cost=cost)


@dataclass(frozen=True)
class ProbeIntervals:
    """A probe run's headline numbers with their question-bootstrap intervals (the card's):
    ``accuracy`` = mean over finished conversations of [committed = gold], its interval from
    an instance (cluster) bootstrap, over ``n`` conversations; ``cross_run_ece`` =
    ``sum_b (n_b / N) |acc_b - conf_b|`` over questions, each question's confidence the share
    of its R runs committing its most common answer (:func:`clearsight.metrics.cross_run_ece`),
    its interval from resampling questions, over ``questions`` (None: a question has fewer
    than two runs)."""

    accuracy: Interval
    n: int
    cross_run_ece: Interval | None
    questions: int


def probe_intervals(frame: pd.DataFrame, n_boot: int, seed: int) -> ProbeIntervals | None:
    """The :class:`ProbeIntervals` of the finished conversations in ``frame``
    (:func:`~clearsight.probe.results.transcripts_frame`; None when it is empty)."""
    from clearsight.metrics.bootstrap import cluster_bootstrap_mean

    if frame.empty:
        return None
    correct = frame["correct"].astype(float).to_numpy()
    acc = cluster_bootstrap_mean(correct, frame["instance_id"].to_numpy(), n_boot=n_boot, seed=seed)
    commits, gold = _commits(frame)
    ece = _ece_interval(commits, gold, n_boot, seed) if all(len(c) >= 2 for c in commits) else None
    return ProbeIntervals(acc, len(frame), ece, len(gold))


def _commits(frame: pd.DataFrame) -> tuple[list[list[str | None]], list[str]]:
    """Per question: its runs' commits in run order, and its gold letter."""
    commits, gold = [], []
    for _, group in frame.sort_values("run", kind="stable").groupby("instance_id", sort=True):
        commits.append([None if pd.isna(c) else str(c) for c in group["committed"]])
        gold.append(str(group["gold"].iloc[0]))
    return commits, gold


def _ece_interval(
    commits: list[list[str | None]], gold: list[str], n_boot: int, seed: int
) -> Interval:
    """Cross-run ECE and its percentile interval over questions drawn with replacement."""
    import numpy as np

    from clearsight.metrics.bootstrap import bootstrap_weights, percentile_interval
    from clearsight.metrics.crossrun import cross_run_ece

    estimate = cross_run_ece(commits, gold)
    reps = []
    for w in bootstrap_weights(len(gold), n_boot, seed):
        idx = np.repeat(np.arange(len(gold)), w)
        reps.append(cross_run_ece([commits[i] for i in idx], [gold[i] for i in idx]))
    low, high = percentile_interval(reps)
    return Interval(estimate, low, high, n_boot, 0.95)
