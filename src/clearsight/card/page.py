"""``card.html``: one self-contained page per model, in the report's own HTML and plot helpers.

Inline CSS (the report's), the three plots as PNG data URIs, no script and no external
resource. Every string that comes from a model or a run (model names, notes, error lines)
passes through :func:`clearsight.pages.html.esc`. Each number sits in a cell carrying
``data-key="MODEL|KEY"``, the key it has in ``card.json``, so the page and the file can be
checked against each other.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from clearsight.card.numbers import CardJSON
from clearsight.card.parts import FETCH_COMMAND
from clearsight.faces.card import Number
from clearsight.faces.card_run import Part
from clearsight.metrics.crossing import W_READING
from clearsight.pages.cost import cost_html
from clearsight.pages.html import esc, img, page

#: Extra CSS of the card (the report's CSS comes first).
_CARD_CSS = (
    "<style>td.num { font-variant-numeric: tabular-nums; white-space: nowrap; }"
    " .figs { display: flex; gap: 16px; flex-wrap: wrap; } .figs figure { flex: 1 1 360px; }"
    " .skip { color: #8a4b00; }</style>"
)


def numbers_table(numbers: Mapping[str, Sequence[Number]], roles: Mapping[str, str]) -> str:
    """Keys (rows) x models (columns); each cell the number's text with its data-key."""
    keys: list[str] = []
    for nums in numbers.values():
        keys += [n.key for n in nums if n.key not in keys]
    models = list(numbers)
    head = "".join(
        f"<th>{esc(m)}<br><span class='note'>{esc(roles.get(m, ''))}</span></th>" for m in models
    )
    rows = [f"<table class='card'><tr><th class='t'>number</th>{head}</tr>"]
    for key in keys:
        cells = []
        for m in models:
            hit = next((n for n in numbers[m] if n.key == key), None)
            text = esc(hit.text) if hit is not None else "–"
            cells.append(f"<td class='num' data-key='{esc(m)}|{esc(key)}'>{text}</td>")
        rows.append(f"<tr><td class='t'>{esc(key)}</td>{''.join(cells)}</tr>")
    rows.append("</table>")
    return "".join(rows)


def parts_list(parts: Sequence[Part]) -> str:
    """What ran (and as what) and what was skipped, with why and the fetch command."""
    items = []
    for part in parts:
        if part.runs:
            items.append(f"<li><b>{esc(part.name)}</b>: ran ({esc(part.role)})</li>")
        else:
            items.append(
                f"<li class='skip'><b>{esc(part.name)}</b>: skipped: {esc(part.note)}</li>"
            )
    hint = ""
    if any(not p.runs and FETCH_COMMAND in p.note for p in parts):
        hint = f"<p class='note'>Run <code>{esc(FETCH_COMMAND)}</code> to fetch what is missing."
    return f"<ul class='parts'>{''.join(items)}</ul>{hint}"


def render_card(
    card: CardJSON,
    numbers: Mapping[str, Sequence[Number]],
    parts: Sequence[Part],
    figures: Sequence[tuple[str, bytes | None]],
    cost: pd.DataFrame | None = None,
) -> str:
    """The whole card page (see the module docstring); ``cost``: what each model of the
    card's runs cost (:func:`~clearsight.card.numbers.card_cost`)."""
    model = str(card["model"])
    roles = card["roles"]
    figs = "".join(img(b, alt, alt) for alt, b in figures if b is not None)
    links = "".join(
        f"<li><a href='{esc(path)}'>{esc(part)} report</a></li>"
        for part, path in card["reports"].items()
    )
    body = (
        f"{_CARD_CSS}<h1>Blind-spot card: {esc(model)}</h1>"
        "<p class='note'>Does this model know when it cannot see (the visibility sweep: V*_acc, "
        "W and AURC per arm) and when it cannot know (trajectory grounding: TGS; the probe: "
        "accuracy and cross-run ECE)? Each number is an estimate with its 95 % bootstrap "
        "interval; the reference observer and the blind control answer the same sweep "
        f"questions as anchors. {esc(W_READING)}</p>"
        f"<h2>Numbers</h2>{numbers_table(numbers, roles)}"
        f"<h2>Plots</h2><div class='figs'>{figs}</div>"
        f"{cost_html(cost)}"
        f"<h2>What ran and what was skipped</h2>{parts_list(parts)}"
        f"<h2>Full reports</h2><ul>{links}</ul>"
        f"<p class='note'>manifest hash <code>{esc(card['manifest_hash'])}</code>; "
        f"the same numbers under the same keys in <code>card.json</code>.</p>"
    )
    return page(f"clearsight card: {model}", body)
