"""The "Reproducibility" section of a run's report (its re-asks by ``clearsight verify``) and
the page of ``clearsight compare``: rendering only, the numbers come from
:mod:`clearsight.verify`."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from clearsight.pages.html import esc, fmt_num, frame_table, page
from clearsight.pages.output import md_table, md_text

if TYPE_CHECKING:
    from clearsight.faces.comparison import Comparison
    from clearsight.verify.results import VerifyResult, VerifySetting

__all__ = [
    "HEADING",
    "SHOWN_DIFFER",
    "compare_csv",
    "compare_page",
    "reproducibility_html",
    "reproducibility_markdown",
    "table_display",
    "worst_display",
]

#: The section's heading, on the page and in summary.md.
HEADING = "Reproducibility"

_NOTE = (
    "A sample of the run's finished items asked again by `clearsight verify`, shuffled and in "
    "batches of another size, each re-ask stored beside the record it repeats: the agreement "
    "of the answers, and the largest and median |Δ| of the option probabilities and the "
    "confidences; an item differs when its answer changed, a confidence was read only once, "
    "or a |Δ| exceeds the tolerance."
)


def _num(value: Any, digits: int = 4) -> str:
    return (
        "–"
        if value is None or (isinstance(value, float) and math.isnan(value))
        else fmt_num(value, digits)
    )


def table_display(table: pd.DataFrame) -> pd.DataFrame:
    """An agreement table (:func:`clearsight.faces.pairs.agreement_table`) as text."""
    return pd.DataFrame(
        {
            "read-out": table["readout"],
            "n": table["n"].astype(int),
            "agreement": table["agreement"].map(_num),
            "max |Δ|": table["max_abs_delta"].map(lambda v: _num(v, 6)),
            "median |Δ|": table["median_abs_delta"].map(lambda v: _num(v, 6)),
        }
    )


def worst_display(differ: pd.DataFrame, limit: int = 10) -> pd.DataFrame:
    """The first ``limit`` differing items (worst first) as text."""
    rows = differ.head(limit)
    key = "of" if "of" in rows else "key_a"
    # two runs' items: run A's model and run B's where they differ ('other', of compare)
    other = rows["other"] if "other" in rows else rows["model"]
    return pd.DataFrame(
        {
            "item": rows[key].map(lambda k: str(k)[:12]),
            "model": [
                a if a == b else f"{a} / {b}" for a, b in zip(rows["model"], other, strict=True)
            ],
            "scene / problem": rows["scene"],
            "condition / variant": rows["condition"],
            "level (m) / share": rows["level_m"].map(lambda v: _num(v, 4)),
            "wording / read-out": rows["wording"],
            "answer": [
                f"{a} → {b}" if answered else "–"  # an elicitation has no answer
                for a, b, answered in zip(
                    rows["answer_a"], rows["answer_b"], rows["answered"], strict=True
                )
            ],
            "largest |Δ|": rows["worst"].map(lambda v: "answer" if v == math.inf else _num(v, 6)),
        }
    )


def _setting(setting: VerifySetting, result: VerifyResult) -> str:
    """One verify setting's line: its items, how many differ, and its failed re-asks (counted
    here, not in the protocol's failures) with their most frequent reason."""
    pairs = result.pairs
    errors = pairs.loc[pairs["status"] == "failed", "error"] if len(pairs) else pd.Series()
    failed = ""
    if len(errors):
        reason = errors.astype(str).value_counts().index[0]
        failed = f" ({len(errors)} re-asks failed; most often: {reason[:120]})"
    return (
        f"asked {setting['asked']}, batches of {setting['batch_size']}, seed {setting['seed']}: "
        f"{len(pairs)} items, {len(result.differ)} differ beyond {result.tolerance:g}" + failed
    )


def _results(run_dir: Path) -> list[tuple[VerifySetting, VerifyResult]]:
    from clearsight.store import DB_NAME
    from clearsight.verify.results import reproducibility

    if not (Path(run_dir) / DB_NAME).is_file():  # a run read from elsewhere
        return []
    return reproducibility(run_dir)


def reproducibility_html(run_dir: Path) -> str:
    """The section of the run's page ('' when the run holds no re-ask)."""
    found = _results(run_dir)
    if not found:
        return ""
    parts = [f"<section id='reproducibility'><h2>{HEADING}</h2><p class='note'>{esc(_NOTE)}</p>"]
    for setting, result in found:
        parts.append(f"<h3>{esc(_setting(setting, result))}</h3>")
        parts.append(frame_table(table_display(result.table)))
        if len(result.differ):
            parts.append(
                frame_table(worst_display(result.differ), "the items that differ, worst first")
            )
    return "".join(parts) + "</section>"


def reproducibility_markdown(run_dir: Path) -> list[str]:
    """The section of summary.md (no lines when the run holds no re-ask)."""
    found = _results(run_dir)
    if not found:
        return []
    lines = [f"## {HEADING}", "", md_text(_NOTE), ""]
    for setting, result in found:
        lines += [md_text(_setting(setting, result)), "", md_table(table_display(result.table))]
        if len(result.differ):
            lines.append(md_table(worst_display(result.differ)))
    return lines


def compare_csv(comparison: Comparison) -> pd.DataFrame:
    """compare.csv: the agreement rows (``kind`` = ``agreement``) and the figure rows
    (``kind`` = ``figure``)."""
    table = comparison.table.assign(kind="agreement")
    figures = comparison.figures.assign(kind="figure")
    both = pd.concat([table, figures], ignore_index=True)
    return both[["kind", *(c for c in both.columns if c != "kind")]]


def _figures_display(figures: pd.DataFrame) -> pd.DataFrame:
    if figures.empty:
        return figures
    return pd.DataFrame(
        {
            "task": figures["task"],
            "models": [
                f"{a} / {b}" for a, b in zip(figures["model"], figures["other"], strict=True)
            ],
            "arm": figures["arm"],
            "figure": figures["figure"],
            "A": figures["a"].map(lambda v: _num(v, 3)),
            "B": figures["b"].map(lambda v: _num(v, 3)),
            "A - B [95 % CI]": [
                f"{_num(d, 3)} [{_num(lo, 3)}, {_num(hi, 3)}]"
                for d, lo, hi in zip(
                    figures["difference"], figures["low"], figures["high"], strict=True
                )
            ],
            "items A / B": [
                f"{a} / {b}" for a, b in zip(figures["n_a"], figures["n_b"], strict=True)
            ],
        }
    )


#: How many of the items that differ compare.html lists (the worst first).
SHOWN_DIFFER = 20


def compare_page(comparison: Comparison) -> str:
    """compare.html: the runs and each one's models, the agreement table of their common
    items, the figures side by side with their paired intervals, then how many items differ
    and the :data:`SHOWN_DIFFER` that differ most."""
    c = comparison
    body = (
        f"<h1>clearsight compare: {esc(c.run_a.name)} (A) and {esc(c.run_b.name)} (B)</h1>"
        f"{_runs_list(c)}"
        f"<p class='note'>{len(c.pairs)} common items ({c.n_a} finished in A, {c.n_b} in B), "
        f"{c.note}</p>"
        f"<h2>Agreement</h2>{frame_table(table_display(c.table))}"
        f"<h2>Figures</h2>{frame_table(_figures_display(c.figures))}"
        f"<h2>Items that differ: {len(c.differ)}</h2>{_worst_html(c.differ)}"
    )
    return page("clearsight compare", body)


def _runs_list(c: Comparison) -> str:
    """Each run of a comparison with the models of its common items (A's ``model``, B's
    ``other``)."""
    models = {"A": c.pairs.get("model", ()), "B": c.pairs.get("other", ())}
    items = "".join(
        f"<li>{name}: {esc(run)} — {esc(', '.join(map(str, dict.fromkeys(models[name]))))}</li>"
        for name, run in (("A", c.run_a), ("B", c.run_b))
    )
    return f"<ul>{items}</ul>"


def _worst_html(differ: pd.DataFrame) -> str:
    """The items that differ most (the :data:`SHOWN_DIFFER` worst), or that none does."""
    if differ.empty:
        return "<p class='note'>None beyond the tolerance.</p>"
    return (
        f"<p class='note'>The {min(len(differ), SHOWN_DIFFER)} that moved most, worst first "
        "(model: A's / B's where they differ).</p>"
        f"{frame_table(worst_display(differ, SHOWN_DIFFER))}"
    )
