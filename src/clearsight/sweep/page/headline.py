"""The sweep's headline (laid out by :mod:`clearsight.pages.headline`): :func:`sweep_headline`
makes it from its analysis'
:func:`~clearsight.sweep.numbers.headline.headline_table` — per model and arm the clean
accuracy, V*_acc, W of internal confidence, verbalized confidence and abstention (interval and
bound; none beside 'n/a' or 'undetermined'), ECE and AURC — and :func:`sweep_sentence` reads
one model's rows of one task ("m, identification (t2): accuracy is half-way to its floor at
7.81 m in fog while internal confidence stays at 0.82: W ≥ +1.23 [+0.90, +1.40]");
:func:`headline_block` puts them under the lead sentence (:func:`sweep_lead`: what V* and W
are, in the card's words) with a small figure beside the sentences. Rendering only: every
number comes from the analysis.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

import pandas as pd

from clearsight.metrics.crossing import W_READING
from clearsight.pages.headline import Headline
from clearsight.pages.html import Figure, fmt_ci
from clearsight.sweep.numbers.headline import HEADLINE_SIGNALS
from clearsight.sweep.page.labels import (
    SIGNAL_LABELS,
    V_STAR_READING,
    crossing_label,
    interval,
    interval_m,
    w_label,
    with_interval,
)
from clearsight.sweep.results import TASK_NAMES, level_label
from clearsight.sweep.signals import by_name

if TYPE_CHECKING:
    from clearsight.sweep.analysis import SweepAnalysis

__all__ = [
    "W_PAIRING_NOTES",
    "headline_block",
    "sweep_caption",
    "sweep_headline",
    "sweep_lead",
    "sweep_sentence",
]


#: What the sweep headline's columns read (the caption of its table, before the W pairing);
#: :data:`PERSON_NOTE` follows the verbalized confidence in a run with people.
SWEEP_CAPTION = (
    "Accuracy, internal confidence and abstention in the model's first letter wording "
    "(mcq.reason before mcq.generic), verbalized confidence in its first verbalized "
    "wording{person}; clean accuracy on the clean control, V*_acc where accuracy falls halfway "
    "to its floor; W (≥, ≤: a bound where a crossing is censored) with its 95 % interval from "
    "a bootstrap over source photos (a photo's scenes resampled together); ECE and AURC pooled "
    "over the clean images and the arm's levels. '–': not asked."
)

#: How a person's verbalized confidence is read, in the caption of a run with people.
PERSON_NOTE = " (a person's: the confidence they state with the slider beside each letter answer)"

#: How each W pairing is stated under the headline (the analysis' ``w_accuracy``).
W_PAIRING_NOTES: dict[str, str] = {
    "main": "W = log10(V*_acc / V*_aware) with one accuracy crossing per model and arm, the "
    "main wording's V*_acc (the headline's), for every awareness signal (clearsight's reading of "
    "the paper; w_accuracy: main).",
    "own": "W = log10(V*_acc / V*_aware) with the accuracy crossing of each awareness signal's "
    "own wording (w_accuracy: own): the verbalized confidence's W with the verbal replies' "
    "accuracy, not the headline's V*_acc.",
}


def sweep_caption(pairing: str, people: bool) -> str:
    """The sweep headline's caption with the note of its W pairing (``main`` or ``own``); a
    person's slider named only in a run with ``people``."""
    caption = SWEEP_CAPTION.format(person=PERSON_NOTE if people else "")
    return f"{caption} {W_PAIRING_NOTES[pairing]}"


def sweep_lead() -> str:
    """The sentence above the sweep's headline: what V* and W are, and which sign of W is a
    blind spot (in the card's words, :data:`~clearsight.metrics.crossing.W_READING`)."""
    return (
        f"{V_STAR_READING}. W = log10(V*_acc / V*_aware): how many decades of visibility the "
        f"model keeps an awareness signal (confidence, abstention) up after its accuracy has "
        f"gone. {W_READING}"
    )


def headline_block(analysis: SweepAnalysis, curves: bytes | None = None) -> Headline:
    """The sweep's headline of ``analysis``, on the page and in summary.md: the lead
    (:func:`sweep_lead`), the table and sentences (:func:`sweep_headline`), the caption and,
    the page's only, the small figure of ``curves`` beside the sentences."""
    run = analysis.run
    frame, sentences = sweep_headline(analysis.headline, run.levels)
    caption = sweep_caption(analysis.bootstrap.w_pairing, bool(run.people))
    figure = None
    if curves is not None:
        what = f"Accuracy ({TASK_NAMES.get(run.first_task, run.first_task)}) against visibility"
        figure = Figure(
            curves, what, f"{what}: each model a line with its 95 % band; square: clean images."
        )
    return Headline(frame, sentences, caption, sweep_lead(), figure)


def sweep_headline(
    table: pd.DataFrame, levels: Mapping[str, tuple[float, ...]]
) -> tuple[pd.DataFrame, list[str]]:
    """The sweep's headline display frame (text cells; a task column only when the run has
    several tasks) and one sentence per model and task, from
    :func:`~clearsight.sweep.numbers.headline.headline_table`; ``levels``: each arm's levels."""
    if table.empty:
        return pd.DataFrame(), []
    frame = pd.DataFrame(
        {
            "task": [TASK_NAMES.get(t, t) for t in table["task"]],
            "model": table["model"],
            "arm": table["arm"],
            "clean accuracy": _cis(table, "clean_acc"),
            "V*_acc": [_v_cell(r, levels[str(r["arm"])]) for _, r in table.iterrows()],
            **{
                f"W {SIGNAL_LABELS[s]}": [_w_cell(r, s) for _, r in table.iterrows()]
                for s in HEADLINE_SIGNALS
            },
            "ECE internal": _cis(table, "ece_internal"),
            "ECE verbalized": _cis(table, "ece_verbal"),
            "AURC": _cis(table, "aurc"),
        }
    )
    if table["task"].nunique() < 2:
        frame = frame.drop(columns="task")
    sentences = [
        sweep_sentence(str(model), rows, levels)
        for (_, model), rows in table.groupby(["task", "model"], sort=False)
    ]
    return frame, sentences


def _cis(table: pd.DataFrame, name: str) -> list[str]:
    """'0.93 [0.88, 0.97]' per row of the estimate ``name`` and its ``_low``/``_high``."""
    return [
        fmt_ci(e, lo, hi)
        for e, lo, hi in zip(table[name], table[f"{name}_low"], table[f"{name}_high"], strict=True)
    ]


def _v_cell(row: pd.Series, levels: tuple[float, ...]) -> str:
    """V*_acc with its interval: '10.6 m [6.02, 12.0] m', '≥ 125 m [62.5, 125] m'; 'n/a'
    alone."""
    label = crossing_label(row["v_acc_m"], row["v_acc_censored"] or "none", levels)
    return with_interval(label, interval_m(row["v_acc_low_m"], row["v_acc_high_m"]))


def _w_cell(row: pd.Series, signal: str) -> str:
    """W of ``signal`` with its bound and interval: '≥ +0.30 [+0.00, +0.45]'; 'undetermined'
    alone; '–' unread."""
    bound = row[f"w_{signal}_bound"]
    if not bound:
        return "–"
    label = w_label(row[f"w_{signal}"], bound)
    return with_interval(label, interval(row[f"w_{signal}_low"], row[f"w_{signal}_high"]))


def sweep_sentence(model: str, rows: pd.DataFrame, levels: Mapping[str, tuple[float, ...]]) -> str:
    """One sentence reading ``model``'s headline rows of one task, named first, an arm per
    clause: where its accuracy is half-way to its floor (V*_acc: half-way between its clean
    value and its floor, not half its clean value) and, of the awareness signals with a
    determined W (an estimate or a bound), the one with the widest W — its mean where the
    accuracy has fallen below half, then W."""
    task = str(rows["task"].iloc[0])
    clauses = [_arm_clause(row, levels[str(row["arm"])]) for _, row in rows.iterrows()]
    return f"{model}, {TASK_NAMES.get(task, task)}: " + "; ".join(clauses) + "."


def _arm_clause(row: pd.Series, levels: tuple[float, ...]) -> str:
    """One arm's clause of :func:`sweep_sentence`."""
    arm, censored = str(row["arm"]), str(row["v_acc_censored"] or "none")
    if row["acc_start"] < row["acc_half"]:  # below its floor: no crossing (nothing to lose)
        return (
            f"in {arm} its clean accuracy {row['acc_start']:.2f} is not above the half point "
            f"{row['acc_half']:.2f} to its floor: it has no accuracy to lose"
        )
    if censored == "undefined" or not math.isfinite(row["v_acc_m"]):
        return f"in {arm} its accuracy has no range to fall over"
    if censored == "below":
        murkiest = level_label(min(levels))
        return f"in {arm} its accuracy is not half-way to its floor down to {murkiest} m"
    at_v = crossing_label(row["v_acc_m"], censored, levels)
    clause = f"accuracy is half-way to its floor at {at_v} in {arm}"
    signal = _widest_signal(row)
    if signal is None:
        return f"{clause}, W undetermined on every awareness signal"
    at = row[f"at_fallen_{signal}"]
    if math.isfinite(at):
        clause += (
            f" while {SIGNAL_LABELS[signal]} stays at {at:.2f}"
            if by_name(signal).confidence
            else f" while its {SIGNAL_LABELS[signal]} is {at:.2f}"
        )
    w = w_label(row[f"w_{signal}"], row[f"w_{signal}_bound"])
    ci = interval(row[f"w_{signal}_low"], row[f"w_{signal}_high"])
    return f"{clause}: W {with_interval(w, ci)}"


def _widest_signal(row: pd.Series) -> str | None:
    """The awareness signal with the widest determined W (an estimate or a bound), or None."""
    widths = {
        s: float(row[f"w_{s}"])
        for s in HEADLINE_SIGNALS
        if row[f"w_{s}_bound"] in ("exact", "lower", "upper") and math.isfinite(row[f"w_{s}"])
    }
    return max(widths, key=lambda s: widths[s]) if widths else None
