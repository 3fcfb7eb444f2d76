"""Accuracy and cross-run calibration of probe conversations: the paper's Tables 1, 9 and 11
and the data of Figures 2, 3 and 5 and of the risk-coverage curves.

Everything is computed from the frame of finished conversations
(:func:`~clearsight.probe.results.transcripts_frame`, models and people alike), per setting
(:data:`~clearsight.probe.results.SETTING`: reasoner, strategy, sensor, signal):

* :func:`cross_run` — docs/methods.md §6 cross-run calibration: per instance and setting,
  prediction = the most common committed option over the R runs (ties to the earliest run;
  runs that committed nothing do not vote), confidence = share of the R runs that committed
  that option, correct = prediction equals gold. :func:`summary_table` adds accuracy mean and
  standard deviation over runs, cross-run ECE (``clearsight.metrics.ece``, 10 right-closed
  bins), the AURC and E-AURC of that confidence gating the predictions
  (``clearsight.metrics.risk_coverage``), rounds and VLM calls per instance (Table 9, Table
  11); :func:`domain_table` is Table 1: each domain the macro-average of its datasets.
* :func:`consistency_bins` — accuracy by the sensor's consistency c on the instance (how many
  of its 11 stage-1 samples named the gold option; Fig. 2, and by dataset Fig. 6): only from
  the build samples that define c, never rescaled from a run's R direct answers, whose bins
  (c = 0, c > 5) the filtered pool cannot have.
* :func:`ablation_table` — accuracy with the true, no and random consistency signal (Fig. 3).
* :func:`calls_table` — VLM calls per question (Table 9); :func:`queries_table` — queries per
  conversation (Fig. 5) (BP accuracy before and after self-distillation, Table 2, is
  :mod:`clearsight.probe.distill.analysis`); :func:`clearsight.probe.numbers.risk.risk_panels` — the
  cross-run confidence against correctness, per reasoner and sensor (the risk-coverage curves).
* :func:`latency_table` — seconds per conversation by strategy and sensor (Table 8).
* :func:`sensor_table` and :func:`samples_table` — runs with another sensor or K side by side
  (Tables 4 and 6, from :func:`summary_table` by dataset of several runs read as one).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from clearsight.metrics.calibration import ece
from clearsight.metrics.crossrun import cross_run_prediction
from clearsight.metrics.selective import risk_coverage
from clearsight.probe.results import SETTING


def cross_run(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per (setting, instance): runs, prediction, confidence, correct, gold, plus the
    instance's dataset, domain and category."""
    rows = []
    keys = [*SETTING, "instance_id"]
    for key, group in frame.sort_values("run", kind="stable").groupby(keys, sort=False):
        commits = [None if pd.isna(c) else str(c) for c in group["committed"]]
        prediction, confidence = cross_run_prediction(commits)
        first = group.iloc[0]
        rows.append(
            {
                **dict(zip(keys, key, strict=True)),
                "dataset": first["dataset"],
                "domain": first["domain"],
                "category": first["category"],
                "gold": first["gold"],
                "runs": len(group),
                "prediction": prediction,
                "confidence": confidence,
                "correct": prediction is not None and prediction == first["gold"],
            }
        )
    return pd.DataFrame(rows)


def _cross_run_scores(sub: pd.DataFrame) -> dict[str, float]:
    """Cross-run ECE, and AURC and E-AURC of the cross-run confidence gating the predictions
    (:func:`~clearsight.metrics.risk_coverage`; an instance no run committed has confidence
    0 and counts as wrong, as in the ECE). NaN with one run per instance: no cross-run
    confidence."""
    if sub.empty or (sub["runs"] < 2).all():
        return dict.fromkeys(("ece", "aurc", "e_aurc"), float("nan"))
    conf, correct = sub["confidence"].to_numpy(float), sub["correct"].to_numpy(bool)
    rc = risk_coverage(conf, correct)
    return {"ece": ece(conf, correct), "aurc": rc.aurc, "e_aurc": rc.e_aurc}


def summary_table(frame: pd.DataFrame, by: Sequence[str] = ("domain",)) -> pd.DataFrame:
    """Table 1 / Table 9 analogue per setting and ``by`` (e.g. domain or dataset): instances,
    runs, accuracy mean and std over runs (percent), cross-run accuracy, ECE, AURC and E-AURC
    (:func:`_cross_run_scores`), mean rounds, queries and VLM calls per conversation, the share
    that committed, and stop reasons. Pooled over the instances of each group (by dataset, the
    paper's Table 11; :func:`domain_table` is Table 1's macro-average)."""
    if frame.empty:
        return pd.DataFrame()
    per_instance = cross_run(frame)
    groups = [*SETTING, *by]
    rows = []
    for key, group in frame.groupby(groups, sort=True):
        where = np.ones(len(per_instance), dtype=bool)
        for col, value in zip(groups, key, strict=True):
            where &= (per_instance[col] == value).to_numpy()
        inst = per_instance[where]
        by_run = group.groupby("run")["correct"].mean() * 100
        stops = group["stop"].value_counts()
        rows.append(
            {
                **dict(zip(groups, key, strict=True)),
                "instances": int(group["instance_id"].nunique()),
                "runs": int(group["run"].nunique()),
                "acc": float(by_run.mean()),
                "acc_std": float(by_run.std(ddof=1)) if len(by_run) > 1 else float("nan"),
                "cross_acc": float(inst["correct"].mean() * 100),
                **_cross_run_scores(inst),
                "rounds": float(group["rounds"].mean()),
                "queries": float(group["queries"].mean()),
                "vlm_calls": float(group["vlm_calls"].mean()),
                "committed": float(group["committed"].notna().mean() * 100),
                "stops": ", ".join(f"{k} {v}" for k, v in stops.items()),
            }
        )
    return pd.DataFrame(rows)


def domain_table(frame: pd.DataFrame) -> pd.DataFrame:
    r"""The paper's Table 1 per setting and domain (perception, charts, knowledge): each domain
    the **macro-average of its datasets** (knowledge: MMStar, CVQA, ReasonVQA count equally
    whatever their sizes).

    With :math:`a_{d,r}` the accuracy (percent) of dataset d of the domain in run r, the
    domain's accuracy in run r is :math:`\bar a_r = \frac{1}{|D_r|} \sum_{d \in D_r} a_{d,r}`;
    ``acc`` and ``acc_std`` are the mean and the sample SD (ddof 1) of :math:`\bar a_r` over
    the runs (the paper's SD across trials, Table 10); ``ece`` the mean over the datasets of
    their cross-run ECE (:func:`~clearsight.metrics.cross_run_ece`). Also ``datasets`` (how
    many were averaged), ``instances`` and ``runs``.
    """
    if frame.empty:
        return pd.DataFrame()
    per_instance = cross_run(frame)
    rows = []
    for key, group in frame.groupby([*SETTING, "domain"], sort=True):
        by_run = group.groupby(["run", "dataset"])["correct"].mean().mul(100).groupby("run").mean()
        where = np.ones(len(per_instance), dtype=bool)
        for col, value in zip([*SETTING, "domain"], key, strict=True):
            where &= (per_instance[col] == value).to_numpy()
        eces = [_cross_run_scores(sub)["ece"] for _, sub in per_instance[where].groupby("dataset")]
        rows.append(
            {
                **dict(zip([*SETTING, "domain"], key, strict=True)),
                "datasets": int(group["dataset"].nunique()),
                "instances": int(group["instance_id"].nunique()),
                "runs": int(group["run"].nunique()),
                "acc": float(by_run.mean()),
                "acc_std": float(by_run.std(ddof=1)) if len(by_run) > 1 else float("nan"),
                "ece": float(np.mean(eces)),
            }
        )
    return pd.DataFrame(rows)


def consistency_bins(
    frame: pd.DataFrame, consistency: pd.DataFrame | None = None, by: Sequence[str] = ()
) -> pd.DataFrame:
    """Accuracy (per conversation, percent) by the sensor's consistency bin ``c11`` on the
    instance, per setting and ``by`` (Fig. 2; by dataset, the paper's Fig. 6).
    ``consistency``: columns sensor, instance_id, c11, from a build run's 11 samples; None
    (no build samples): no table (module docstring)."""
    if frame.empty or consistency is None or consistency.empty:
        return pd.DataFrame()
    cons = consistency
    merged = frame.merge(cons[["sensor", "instance_id", "c11"]], on=["sensor", "instance_id"])
    table = (
        merged.groupby([*SETTING, *by, "c11"])["correct"]
        .agg(accuracy="mean", conversations="count")
        .reset_index()
    )
    table["accuracy"] *= 100
    return table


def ablation_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Accuracy (percent, over conversations) and ECE by consistency signal shown (true, none,
    random) per reasoner, strategy and sensor (Fig. 3); only settings run with a signal."""
    if frame.empty:
        return pd.DataFrame()
    talk = frame[frame["strategy"] != "direct"]
    if talk.empty:
        return pd.DataFrame()
    summary = summary_table(talk, by=())
    return summary[[*SETTING, "instances", "runs", "acc", "acc_std", "ece", "rounds"]]


def calls_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean VLM calls per question by dataset (rows) and setting (columns,
    :func:`setting_label`: strategy / reasoner, and the sensor and K where they vary), Table 9
    (direct: one call; only answered calls count, see
    :attr:`~clearsight.probe.transcript.Transcript.vlm_calls`), and beside each setting that
    had any, its mean failed calls per question (``<setting> (failed)``)."""
    if frame.empty:
        return pd.DataFrame()
    frame = frame.assign(setting=setting_label(frame))
    table = frame.pivot_table(
        index="dataset", columns="setting", values="vlm_calls", aggfunc="mean"
    )
    if "failed_calls" in frame and frame["failed_calls"].fillna(0).gt(0).any():
        failed = frame.pivot_table(
            index="dataset", columns="setting", values="failed_calls", aggfunc="mean"
        )
        failed = failed.loc[:, failed.fillna(0).gt(0).any()]
        table = table.join(failed.add_suffix(" (failed)"))
    return table.reset_index()


def latency_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Table 8: mean wall-clock seconds per conversation (a question in one run) by strategy
    and reasoner (rows) and sensor (columns), from each conversation record's stored seconds
    (``seconds``: the reasoner's and the sensor's calls together, model loading excluded: a
    unit loads its models before its clock starts, :func:`clearsight.probe.unit.run_probe_unit`;
    runs stored before that counted the loading in each process's first conversation);
    ``conversations``: how many were timed.
    People's conversations are left out (their time is a person's). Empty without any."""
    if frame.empty or "seconds" not in frame:
        return pd.DataFrame()
    timed = frame[(frame["reasoner"] != "human") & frame["seconds"].notna()]
    if timed.empty:
        return pd.DataFrame()
    index = ["strategy", "reasoner"]
    table = timed.pivot_table(index=index, columns="sensor", values="seconds", aggfunc="mean")
    table.columns = [f"{sensor} (s)" for sensor in table.columns]
    table["conversations"] = timed.groupby(index).size()
    return table.reset_index()


def queries_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Fig. 5: queries per conversation by setting and dataset — the mean (``queries``, the
    figure's bars) and the distribution: ``median``, ``p90`` (the 90th percentile, linear),
    ``max`` and ``conversations`` — so a strategy whose stop rule lets a few conversations run
    long (UoT's) shows it beside the paper's means (conversations of a reasoner only; empty
    without one)."""
    if frame.empty or "queries" not in frame:
        return pd.DataFrame()
    talk = frame[frame["strategy"] != "direct"]
    grouped = talk.groupby([*SETTING, "dataset"])["queries"]
    return grouped.agg(
        queries="mean",
        median="median",
        p90=lambda q: float(q.quantile(0.9)),
        max="max",
        conversations="count",
    ).reset_index()


def setting_label(frame: pd.DataFrame) -> pd.Series:
    """A short label of each row's setting: ``strategy / reasoner``, then the signal when not
    the true u, the sensor where the frame holds several and K where its conversing settings
    use several (Direct's one sample does not count)."""
    label = frame["strategy"].astype(str) + " / " + frame["reasoner"].astype(str)
    if "signal" in frame:
        other = frame["signal"].astype(str) != "true"
        label = label.where(~other, label + " (" + frame["signal"].astype(str) + " u)")
    if "sensor" in frame and frame["sensor"].nunique() > 1:
        label = label + ", sensor " + frame["sensor"].astype(str)
    if "k" in frame and frame.loc[frame["strategy"] != "direct", "k"].nunique() > 1:
        label = label + ", K " + frame["k"].astype(str)
    return label


def sensor_table(datasets: pd.DataFrame) -> pd.DataFrame:
    """Table 4 (runs with another sensor side by side): accuracy (%, mean over runs) by dataset
    (rows), one column per setting (:func:`setting_label`, which names the sensor and K).
    ``datasets``: :func:`summary_table` by dataset. Empty unless the settings hold two or more
    sensors."""
    if datasets.empty or datasets["sensor"].nunique() < 2:
        return pd.DataFrame()
    table = datasets.assign(setting=setting_label(datasets)).pivot_table(
        index="dataset", columns="setting", values="acc", aggfunc="first", sort=False
    )
    return table.reset_index().rename_axis(columns=None)


def samples_table(datasets: pd.DataFrame) -> pd.DataFrame:
    """Table 6 (runs with another K side by side): per reasoner, strategy, sensor and signal
    run with two or more K, one row per K with each dataset's accuracy mean and SD over runs
    (%) and cross-run ECE (``<dataset> acc``, ``<dataset> acc_std``, ``<dataset> ece``).
    ``datasets``: :func:`summary_table` by dataset. Empty without such a setting."""
    if datasets.empty:
        return pd.DataFrame()
    others = [c for c in SETTING if c != "k"]
    several = datasets.groupby(others)["k"].transform("nunique") > 1
    rows = datasets[several]
    if rows.empty:
        return pd.DataFrame()
    wide = rows.pivot_table(
        index=list(SETTING), columns="dataset", values=["acc", "acc_std", "ece"], sort=True
    )
    values = ("acc", "acc_std", "ece")
    levels = zip(wide.columns.get_level_values(0), wide.columns.get_level_values(1), strict=True)
    pairs = sorted(((str(v), str(d)) for v, d in levels), key=lambda c: (c[1], values.index(c[0])))
    wide = wide[pairs]
    wide.columns = [f"{dataset} {value}" for value, dataset in pairs]
    return wide.reset_index()
