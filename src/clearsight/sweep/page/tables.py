"""The sweep page's tables of one task: crossings and W (with the per-task headline table), the
wordings, the full sweep table (Tables IX/X) and the controls; the confidence tables are in
:mod:`~clearsight.sweep.page.confidence`, the ImageNet-C section in
:mod:`~clearsight.sweep.page.imagenet`. Rendering only: every number comes from the analysis.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from clearsight.metrics.crossing import W_READING
from clearsight.pages.html import Col, Details, Part, Table, esc, fmt_ci, fmt_num
from clearsight.sweep.analysis import TaskAnalysis
from clearsight.sweep.numbers.facts import RunFacts
from clearsight.sweep.page.headline import W_PAIRING_NOTES
from clearsight.sweep.page.labels import (
    SIGNAL_LABELS,
    V_STAR_READING,
    interval,
    interval_m,
    interval_of,
    observer_note,
)
from clearsight.sweep.signals import ACCURACY, AWARENESS

__all__ = [
    "WORDINGS_NOTE",
    "controls_section",
    "crossings_section",
    "sweep_section",
    "wordings_section",
    "wordings_table",
]


#: Rows of a frame keyed by a tuple of their key columns (cheap cell lookups for wide tables).
Lookup = dict[tuple[Any, ...], dict[Any, Any]]


def _crossing_cell(
    lookup: Lookup, wording: str, signal: str, what: str, people: frozenset[str]
) -> Any:
    """A cell getter for the headline table: V*, its CI, W or W's CI of one signal (a
    person's, of ``people``, stated confidence: in whichever wording they answered)."""

    def cell(row: Any) -> str:
        r = lookup.get((row.model, row.arm, wording, signal))
        if r is None and signal == "verbal_conf" and row.model in people:
            # a person's stated confidence comes with their letter answers, in that wording
            mine = (
                v for k, v in lookup.items() if k[:2] == (row.model, row.arm) and k[3] == signal
            )
            r = next(mine, None)
        if r is None:
            return "–"
        if r["censored"] == "undefined":  # no number to show: say why in the V* cell
            return str(r["note"] or "n/a") if what == "v" else "–"
        return {
            "v": str(r["v_star"]),
            "v_ci": interval_of(str(r["v_star"]), interval_m(r["v_low_m"], r["v_high_m"])),
            "w": _with_reason(str(r["w_display"]), row.model, wording, signal),
            "w_ci": interval_of(str(r["w_display"]), interval(r["w_low"], r["w_high"])),
        }[what]

    return cell


def _with_reason(w_display: str, model: str, wording: str, signal: str) -> str:
    """A W as shown, with the reason beside it where the reference observer's W is not about 0
    by design (:func:`clearsight.sweep.page.labels.observer_note`)."""
    reason = observer_note(model, wording, signal)
    return f"{w_display} ({reason})" if reason and w_display else w_display


def _headline_table(run: RunFacts, cr: pd.DataFrame, numbers: TaskAnalysis) -> list[Part]:
    """Per model × arm: accuracy V* of the main wording, then V* and W of each awareness
    signal in its columns' wordings (the task's ``columns``)."""
    main = numbers.main
    if main is None:
        return []
    lookup: Lookup = {
        (r["model"], r["arm"], r["wording"], r["signal"]): r for r in cr.to_dict("records")
    }
    shown = set(zip(cr["model"], cr["arm"], strict=True))  # no row for an arm not shown
    pairs = [(m, a) for m in run.models for a in run.arms if (m, a) in shown]
    frame = pd.DataFrame(pairs, columns=["model", "arm"])
    acc_group = f"accuracy ({main})"
    people = run.people
    cols = [
        Col("model", lambda r: r.model, text=True),
        Col("arm", lambda r: r.arm, text=True),
        Col("V*_acc", _crossing_cell(lookup, main, "accuracy", "v", people), group=acc_group),
        Col("95% CI", _crossing_cell(lookup, main, "accuracy", "v_ci", people), group=acc_group),
    ]
    for wording, signal in numbers.columns:
        group = f"{signal.label} ({wording})"
        cols += [
            Col(header, _crossing_cell(lookup, wording, signal.name, what, people), group=group)
            for header, what in (("V*", "v"), ("W", "w"), ("W 95% CI", "w_ci"))
        ]
    return [Table(frame, cols)]


def crossings_section(
    run: RunFacts, crossings: pd.DataFrame, numbers: TaskAnalysis, pairing: str
) -> list[Part]:
    """The headline crossings/W table and the full one of one task (``crossings``: labelled,
    :func:`~clearsight.sweep.page.labels.labelled_crossings`; ``pairing``: the analysis' W
    pairing, stated above the tables)."""
    cr = crossings[crossings["task"] == numbers.task]
    if cr.empty:
        return ["<h3>Crossings and W</h3><p class='note'>No sweep levels to cross.</p>"]
    cols = [
        Col("model", lambda r: r.model, text=True),
        Col("arm", lambda r: r.arm, text=True),
        Col("wording", lambda r: r.wording, text=True),
        Col("signal", lambda r: SIGNAL_LABELS.get(r.signal, r.signal), text=True),
        Col("clean", lambda r: fmt_num(r.clean)),
        Col("floor", lambda r: f"{fmt_num(r.floor)} ({r.floor_source})"),
        Col("V*", lambda r: r.v_star),
        Col("V* 95% CI", lambda r: interval_of(r.v_star, interval_m(r.v_low_m, r.v_high_m))),
        Col("W", lambda r: _with_reason(r.w_display, r.model, r.wording, r.signal)),
        Col("W 95% CI", lambda r: interval_of(r.w_display, interval(r.w_low, r.w_high))),
        Col("W bound", lambda r: r.w_bound),
        Col(
            "W against", lambda r: f"accuracy of {r.w_accuracy}" if r.w_accuracy else "", text=True
        ),
        Col("note", lambda r: r.note, text=True),
    ]
    return [
        "<h3>Crossing visibilities and blind-spot width W</h3>"
        f"<p class='note'>{esc(V_STAR_READING)}; '≤ 1.95 m' never crossed (censored below), "
        "'≥ 250 m' already crossed at the clearest level. W = log10(V*_acc / V*_aware). "
        f"{esc(W_READING)} A censored crossing makes W a lower or upper bound, or undetermined "
        f"(no interval then). {esc(W_PAIRING_NOTES[pairing])} The full table names each W's "
        "accuracy ('W against').</p>",
        *_headline_table(run, cr, numbers),
        Details(
            "All crossings: every wording and signal, with clean values and floors",
            [Table(cr, cols)],
        ),
    ]


#: What Table VI compares, on the page and in summary.md.
WORDINGS_NOTE = (
    "Each model's verbalized wordings compared on the same scenes: those it answered in every "
    "verbalized wording it was asked ('scenes'), so a difference between rows is the "
    "wording's, not the images'. Clean images and the murkiest level of each arm."
)


def wordings_table(wordings: pd.DataFrame, run: RunFacts, every: bool = False) -> Table | None:
    """Table VI: the verbalized wordings on each model's matched images, at the clean images
    and the murkiest level of each arm (``every``: at every level); None with fewer than two
    verbalized wordings."""
    if wordings.empty or wordings["wording"].nunique() < 2:
        return None
    murkiest = {(arm, lv[-1]) for arm, lv in run.levels.items()}
    keys = zip(wordings["condition"], wordings["x"], strict=True)
    shown = wordings[[every or c == "clean" or (c, x) in murkiest for c, x in keys]]
    cols = [
        Col("model", lambda r: r.model, text=True),
        Col("condition", lambda r: r.condition, text=True),
        Col("V (m)", lambda r: r.level, text=True),
        Col("wording", lambda r: r.wording, text=True),
        Col("scenes", lambda r: fmt_num(r.n_scenes, 0)),
        Col("n", lambda r: fmt_num(r.n, 0)),
        Col("accuracy", lambda r: fmt_num(r.accuracy)),
        Col("verbal conf", lambda r: fmt_num(r.verbal_conf)),
        Col("parsed", lambda r: fmt_num(r.verbal_parsed)),
    ]
    return Table(shown, cols)


def wordings_section(wordings: pd.DataFrame, run: RunFacts) -> list[Part]:
    """Table VI (:func:`wordings_table`) under its heading, every level in a collapsed
    table."""
    shown, every = wordings_table(wordings, run), wordings_table(wordings, run, every=True)
    if shown is None or every is None:
        return []
    return [
        "<h3>Verbalized wordings on matched images (Table VI)</h3>"
        f"<p class='note'>{esc(WORDINGS_NOTE)} Every level below.</p>",
        shown,
        Details("Every level", [every]),
    ]


def sweep_section(run: RunFacts, numbers: TaskAnalysis) -> list[Part]:
    """The full sweep table, one table per model × arm, wordings side by side."""
    sweep = numbers.sweep
    if sweep.empty:
        return []
    blocks: list[Part] = []
    for model in run.models:
        for arm in run.arms:
            sub = sweep[(sweep["model"] == model) & sweep["condition"].isin(["clean", arm])]
            if sub.empty:
                continue
            blocks.append(f"<h4>{esc(model)} — {esc(arm)}</h4>")
            blocks.append(_wide_sweep(sub, numbers.task, model, run))
    return [
        "<h3>Full sweep</h3>",
        Details(
            "Accuracy, confidences and abstain rate at every level, per wording (Tables IX/X)",
            blocks,
        ),
    ]


def _wide_sweep(sub: pd.DataFrame, task: str, model: str, run: RunFacts) -> Table:
    """Rows: clean + levels; column groups: wordings, each with the accuracy (verification's
    split by the category asked), the confidence the wording reads for ``model`` (``run``'s
    ``confidence``), the parse share of a verbalized wording, the other awareness signals'
    means and the item count."""
    wordings = list(dict.fromkeys(sub["wording"]))
    levels = list(dict.fromkeys(sub["level"]))
    idx: Lookup = {(r["level"], r["wording"]): r for r in sub.to_dict("records")}
    rows = pd.DataFrame({"level": levels})
    cols = [Col("V (m)", lambda r: r.level, text=True)]
    for w in wordings:
        fields: list[tuple[str, str, int]] = [("acc", ACCURACY.mean_column, 2)]
        if task == "verify":
            fields += [("acc true", "acc_true", 2), ("acc distr.", "acc_distractor", 2)]
        fields += [("conf", run.confidence[(model, w)], 2)]
        if w in run.verbal:
            fields.append(("parsed", "verbal_parsed", 2))
        fields += [(s.short, s.mean_column, 2) for s in AWARENESS if not s.confidence]
        fields.append(("n", "n", 0))
        for header, field, digits in fields:
            cols.append(Col(header, _lookup(idx, w, field, digits), group=w))
    return Table(rows, cols)


def _lookup(idx: Lookup, wording: str, field: str, digits: int) -> Any:
    """A cell getter reading ``field`` of (row.level, wording) from ``idx``."""

    def cell(row: Any) -> str:
        r = idx.get((row.level, wording))
        return "–" if r is None else fmt_num(r.get(field), digits)

    return cell


def controls_section(controls: pd.DataFrame) -> list[Part]:
    """Clean, blank and shuffled images against chance."""
    if controls.empty:
        return ["<h3>Controls</h3><p class='note'>No control conditions in this run.</p>"]
    cols = [
        Col("model", lambda r: r.model, text=True),
        Col("wording", lambda r: r.wording, text=True),
        Col("condition", lambda r: r.condition, text=True),
        Col("n", lambda r: fmt_num(r.n, 0)),
        Col("accuracy [95% CI]", lambda r: fmt_ci(r.accuracy, r.acc_low, r.acc_high)),
        Col("acc. answered", lambda r: fmt_num(r.accuracy_answered)),
        *(Col(s.short, _mean_cell(s.mean_column)) for s in AWARENESS),
        Col("chance", lambda r: fmt_num(r.chance)),
    ]
    return [
        "<h3>Controls</h3><p class='note'>Blank: a mid-grey image with the box kept; shuffled: "
        "another scene's clean pixels and box. Near-chance accuracy on both says the question "
        "cannot be solved from the box or the category prior alone.</p>",
        Table(controls, cols),
    ]


def _mean_cell(column: str) -> Any:
    """A cell getter of a signal's mean (its ``column``) in a row."""
    return lambda row: fmt_num(getattr(row, column))
