"""The card's numbers, read from its three runs through the protocols' results readers.

Each number is a :class:`Number`: its key exactly as the page shows it (``fog V*_acc``,
``water W internal``, ``TGS-self``, ``probe accuracy``, ...), the estimate with its 95 %
bootstrap interval, a censoring or bound flag where the estimate is one, and the text the page
shows. ``card.json`` holds the same values under the same keys.

- Sweep (:func:`sweep_numbers`, per model of the sweep): per arm the accuracy crossing V*_acc
  of the letter wording, the blind-spot width W of the internal confidence, of the verbalized
  confidence and of the abstain rate (each with its censoring bound; the reference observer's
  abstention W under the generic wording with the reason it is not about 0), AURC of the
  internal confidence gating the answers and ECE of the internal and of the verbalized
  confidence, each pooled over clean and the arm's levels; and the clean accuracy. All from the
  run's :class:`clearsight.sweep.analysis.SweepAnalysis` (one bootstrap over source photos).
- Grounding (:func:`grounding_numbers`): TGS-self and TGS-pair per axis, overall, with the
  two-stage bootstrap of :func:`clearsight.grounding.analyse_grounding`.
- Probe (:func:`probe_numbers`): accuracy = mean over conversations of [committed = gold],
  interval from an instance (cluster) bootstrap; cross-run ECE =
  ``sum_b (n_b / N) |acc_b - conf_b|`` over questions, each question's confidence the share of
  its R runs committing its most common answer (:func:`clearsight.metrics.cross_run_ece`),
  interval from resampling questions.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np
import pandas as pd

from clearsight.report.html import fmt_ci
from clearsight.report.labels import crossing_label, interval, interval_m, w_label
from clearsight.store import COST_COLUMNS
from clearsight.sweep.analysis import SweepAnalysis
from clearsight.sweep.references.observer import observer_note
from clearsight.sweep.results import is_verbal

if TYPE_CHECKING:
    from clearsight.grounding import GroundingAnalysis

#: W signals of the sweep: (page label, signal, letter wording or not).
_W_SIGNALS: tuple[tuple[str, str, bool], ...] = (
    ("internal", "internal_conf", True),
    ("verbalized", "verbal_conf", False),
    ("abstain", "abstain", True),
)
#: Grounding scores on the card: (key of the grounding analysis, page label).
TGS_KEYS: tuple[tuple[str, str], ...] = (
    ("tgs_self", "TGS-self"),
    ("tgs_pair_vision", "TGS-pair vision"),
    ("tgs_pair_reasoning", "TGS-pair reasoning"),
    ("tgs_pair_answer", "TGS-pair answer"),
)


class NumberJSON(TypedDict):
    """A :class:`Number` as card.json holds it: the bounds and the estimate are null where
    they are not finite (no crossing, W left open)."""

    key: str
    estimate: float | None
    low: float | None
    high: float | None
    text: str
    bound: str
    n: int


@dataclass(frozen=True)
class Number:
    """One card number (see the module docstring); :class:`NumberJSON` is its card.json form."""

    key: str
    estimate: float
    low: float
    high: float
    text: str
    bound: str = ""
    n: int = 0

    def to_json(self) -> NumberJSON:
        """The number as card.json holds it (NaN as null)."""
        return {
            "key": self.key,
            "estimate": _finite(self.estimate),
            "low": _finite(self.low),
            "high": _finite(self.high),
            "text": self.text,
            "bound": self.bound,
            "n": self.n,
        }


def _finite(value: float) -> float | None:
    """A JSON value: a float that is not finite becomes null."""
    return value if math.isfinite(value) else None


def _f(value: Any) -> float:
    """A float, NaN for what is none (a missing crossing, an empty cell)."""
    try:
        out = float(value)
    except (TypeError, ValueError):
        return math.nan
    return out


def _ci_number(key: str, est: Any, low: Any, high: Any, n: int, digits: int = 3) -> Number:
    """A plain estimate with its interval, shown as 'est [low, high]'."""
    e, lo, hi = _f(est), _f(low), _f(high)
    return Number(key, e, lo, hi, fmt_ci(e, lo, hi, digits), n=n)


def _crossing_number(key: str, row: Any, levels: tuple[float, ...]) -> Number:
    """V* of a crossings row, shown as the report shows it ('≤ 1.95 m [1.95, 2.63] m')."""
    v, lo, hi = _f(row["v_star_m"]), _f(row["v_low_m"]), _f(row["v_high_m"])
    censored = str(row["censored"] or "")
    text = " ".join(s for s in (crossing_label(v, censored, levels), interval_m(lo, hi)) if s)
    return Number(key, v, lo, hi, text, censored, int(row["n_items"]))


def _w_number(key: str, row: Any) -> Number:
    """W of a crossings row with its bound, shown as the report shows it ('≥ +0.79 [...]'),
    and the reason beside it where the reference observer's W is not about 0 by design."""
    w, lo, hi = _f(row["w"]), _f(row["w_low"]), _f(row["w_high"])
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
        numbers.append(_ci_number(f"{arm} AURC", p.aurc, p.aurc_low, p.aurc_high, int(p.n_scored)))
    for label, wording in (("internal", letter), ("verbalized", verbal)):
        if (c := _pooled(identify.calibration, model, arm, wording)) is not None:
            key = f"{arm} ECE {label}"
            numbers.append(_ci_number(key, c.ece, c.ece_low, c.ece_high, int(c.n_scored)))
    return numbers


def sweep_numbers(analysis: SweepAnalysis) -> dict[str, list[Number]]:
    """Per model of the sweep run: its numbers (module docstring), in page order."""
    data = analysis.data
    wordings = data.wordings("identify")
    letter = next((w for w in wordings if not is_verbal(w)), None)
    verbal = next((w for w in wordings if is_verbal(w)), None)
    cr = analysis.crossings
    curves = analysis.curves
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
            numbers.append(_ci_number("clean accuracy", c.estimate, c.low, c.high, int(c.n), 2))
        for arm in data.arms:
            rows = cr[(cr["model"] == model) & (cr["arm"] == arm)]
            numbers += _arm_numbers(arm, rows, data.levels[arm], letter, verbal)
            numbers += _confidence_numbers(analysis, model, arm, letter, verbal)
        out[model] = numbers
    return out


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


def grounding_numbers(analysis: GroundingAnalysis) -> list[Number]:
    """TGS-self and TGS-pair per axis of a grounding analysis (overall scores)."""
    numbers = []
    for key, label in TGS_KEYS:
        score = analysis.overall.get(key)
        if score is not None:
            i = score.interval
            numbers.append(_ci_number(label, i.estimate, i.low, i.high, score.n_items))
    return numbers


def probe_numbers(frame: pd.DataFrame, n_boot: int, seed: int) -> list[Number]:
    """Probe accuracy and cross-run ECE of the finished conversations in ``frame``
    (:func:`clearsight.probe.results.transcripts_frame`), with question-bootstrap intervals."""
    from clearsight.metrics.bootstrap import cluster_bootstrap_mean

    if frame.empty:
        return []
    correct = frame["correct"].astype(float).to_numpy()
    acc = cluster_bootstrap_mean(correct, frame["instance_id"].to_numpy(), n_boot=n_boot, seed=seed)
    n = len(frame)
    numbers = [_ci_number("probe accuracy", acc.estimate, acc.low, acc.high, n, 2)]
    commits, gold = _commits(frame)
    if all(len(c) >= 2 for c in commits):
        est, low, high = _ece_interval(commits, gold, n_boot, seed)
        numbers.append(_ci_number("probe cross-run ECE", est, low, high, len(gold)))
    return numbers


def _commits(frame: pd.DataFrame) -> tuple[list[list[str | None]], list[str]]:
    """Per question: its runs' commits in run order, and its gold letter."""
    commits, gold = [], []
    for _, group in frame.sort_values("run", kind="stable").groupby("instance_id", sort=True):
        commits.append([None if pd.isna(c) else str(c) for c in group["committed"]])
        gold.append(str(group["gold"].iloc[0]))
    return commits, gold


def _ece_interval(
    commits: list[list[str | None]], gold: list[str], n_boot: int, seed: int
) -> tuple[float, float, float]:
    """Cross-run ECE and its percentile interval over questions drawn with replacement."""
    from clearsight.metrics.bootstrap import bootstrap_weights, percentile_interval
    from clearsight.metrics.crossrun import cross_run_ece

    estimate = cross_run_ece(commits, gold)
    weights = bootstrap_weights(len(gold), n_boot, seed)
    reps = []
    for w in weights:
        idx = np.repeat(np.arange(len(gold)), w)
        reps.append(cross_run_ece([commits[i] for i in idx], [gold[i] for i in idx]))
    low, high = percentile_interval(reps)
    return estimate, low, high


def numbers_json(numbers: Iterable[Number]) -> dict[str, NumberJSON]:
    """``{key: number}`` as card.json holds a model's numbers."""
    return {n.key: n.to_json() for n in numbers}


def read_probe_frame(run_dir: Path) -> pd.DataFrame:
    """The probe run's finished conversations, one row each."""
    from clearsight.probe.results import load_probe_results

    return load_probe_results(run_dir).transcripts


def card_cost(costs: Mapping[str, pd.DataFrame | None]) -> pd.DataFrame:
    """The cost tables of the card's parts (part -> :func:`clearsight.store.run_cost`'s table)
    as one, each model labelled with its part (``observer (sweep)``)."""
    frames = [
        cost.assign(model=[f"{m} ({part})" for m in cost["model"]])
        for part, cost in costs.items()
        if cost is not None and not cost.empty
    ]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COST_COLUMNS)


def cost_json(cost: pd.DataFrame) -> list[dict[str, str | int | float | None]]:
    """:func:`card_cost`'s rows as card.json holds them (NaN as null)."""
    return [
        {
            str(k): (None if isinstance(v, float) and not math.isfinite(v) else v)
            for k, v in row.items()
        }
        for row in cost.astype(object).to_dict("records")
    ]
