"""The "Cost" section of every report and of the card: per model the model seconds, prompt and
completion tokens and images its records carry, as totals over the run and per-record medians.

Rendering only: the numbers are the protocols' (:func:`clearsight.store.run_cost`'s table, one
row per model). A measure no record of a model carries shows '–' (not recorded), never 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import pandas as pd

from clearsight.pages.html import esc, frame_table
from clearsight.pages.output import md_table

__all__ = ["COST_NOTE", "Cost", "cost_display", "cost_html", "cost_markdown", "devices_line"]

#: What the section's table holds, said under its heading.
COST_NOTE: Final = (
    "What the models cost, read from every stored record (ok or failed): model seconds "
    "(the backend's own timing; a batched request's share of its batch), prompt and "
    "completion tokens and images shown, as totals and per-record medians over the records "
    "that carry them ('(12 of 72)': only 12 of a model's 72 records do). "
    "'–': not recorded by that backend. Device: where the driver loaded the model before the "
    "run's latest start."
)

#: (measure, label, decimals) of the columns shown.
_SHOWN: Final = (
    ("model_s", "model s", 2),
    ("prompt_tokens", "prompt tokens", 0),
    ("completion_tokens", "completion tokens", 0),
    ("images", "images", 0),
)


def _number(value: float, digits: int) -> str:
    """``value`` with ``digits`` decimals and thousands separators; '–' when missing."""
    return "–" if pd.isna(value) else f"{value:,.{digits}f}"


def cost_display(cost: pd.DataFrame | None) -> pd.DataFrame:
    """The cost table as text cells: model, device ('–': not recorded), records, then each
    measure's total and median."""
    columns = ["model", "device", "records"]
    columns += [f"{label} {what}" for _, label, _ in _SHOWN for what in ("total", "median")]
    if cost is None or cost.empty:
        return pd.DataFrame(columns=columns)
    out: dict[str, pd.Series | list[str]] = {
        "model": cost["model"].astype(str),
        "device": [d if isinstance(d, str) else "–" for d in cost["device"]],
        "records": cost["records"].map("{:,}".format),
    }
    for measure, label, digits in _SHOWN:
        for what in ("total", "median"):
            places = digits if what == "total" else max(digits, 1)  # a median may be x.5
            out[f"{label} {what}"] = [_number(v, places) for v in cost[f"{measure}_{what}"]]
        out[f"{label} total"] = [  # a measure only some records carry: how many
            f"{text} ({n:,} of {records:,})" if 0 < n < records else text
            for text, n, records in zip(
                out[f"{label} total"], cost[f"{measure}_n"], cost["records"], strict=True
            )
        ]
    return pd.DataFrame(out, columns=columns).reset_index(drop=True)


def cost_html(cost: pd.DataFrame | None, heading: str = "h2") -> str:
    """The section as HTML: heading, note and table (a note where no record was read)."""
    return (
        f"<{heading} id='cost'>Cost</{heading}><p class='note'>{esc(COST_NOTE)}</p>"
        f"{frame_table(cost_display(cost))}"
    )


def cost_markdown(cost: pd.DataFrame | None) -> list[str]:
    """The section as summary.md lines."""
    return ["## Cost", "", COST_NOTE, "", md_table(cost_display(cost))]


@dataclass(frozen=True)
class Cost:
    """The section as a block of a page and of a summary (``cost``: one row per model)."""

    cost: pd.DataFrame | None

    def html(self) -> str:
        """The page's section (:func:`cost_html`)."""
        return cost_html(self.cost)

    def markdown(self) -> list[str]:
        """The summary's section (:func:`cost_markdown`)."""
        return cost_markdown(self.cost)


def devices_line(manifest: Mapping[str, Any]) -> str:
    """Where each model ran, from the manifest's ``loaded_models`` (what the driver loaded
    before the run's latest start): ``hf:m: cuda:0, bfloat16``. Models whose backend says
    nothing of its device (an observer, a server's API) and runs on Ray (models load on the
    replicas only: their entry holds only the batch sizes ``auto`` chose) have no device:
    '(not recorded)'."""
    loaded = manifest.get("loaded_models") or {}
    parts = [
        f"{name}: {info['device']}, {info.get('dtype', '?')}"
        for name, info in loaded.items()
        if isinstance(info, Mapping) and info.get("device")
    ]
    return "; ".join(parts) or "(not recorded)"
