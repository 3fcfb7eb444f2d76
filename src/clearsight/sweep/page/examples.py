"""The sweep report's qualitative examples, rendered: one target's question, options, raw replies
and read-outs at three conditions of the first arm, with the images the models saw — all read
and drawn by the analysis (:class:`~clearsight.sweep.images.examples.Examples`); what is shown is
records, not numbers.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pandas as pd

from clearsight.pages.html import esc, fmt_num, img, pre
from clearsight.sweep.images.examples import Examples
from clearsight.sweep.results import (
    TASK_NAMES,
    RunData,
    confidence_signal,
    is_verbal,
    level_label,
)

__all__ = ["examples_section"]


def examples_section(data: RunData, examples: Examples | None) -> str:
    """Question, options, raw replies and read-outs of one target at three conditions."""
    task = examples.task if examples is not None else ""
    head = f"<h2 id='examples'>Qualitative examples — {esc(TASK_NAMES.get(task, task))}</h2>"
    if examples is None or examples.rows.empty:
        return head + "<p class='note'>No records to show.</p>"
    rows, picks = examples.rows, examples.picks
    first = rows.iloc[0]
    parts = [
        head,
        f"<p>Scene <b>{esc(first['scene'])}</b>, target {esc(fmt_num(first['target'], 0))} "
        f"({esc(first['category'])}), {esc(examples.arm)} arm.</p>",
    ]
    parts.append(_thumbnails(examples))
    order = {(c, 0.0 if c == "clean" else v): i for i, (c, v) in enumerate(picks)}
    for wording in data.wordings(task):
        sub = rows[rows["wording"] == wording]
        if sub.empty:
            continue
        sub = sub.assign(
            _o=[
                order.get((c, 0.0 if c == "clean" else float(v)), 99)
                for c, v in zip(sub["condition"], sub["level_m"], strict=True)
            ]
        ).sort_values(["_o", "model"])
        parts.append(_wording_example(sub, wording, examples.replies))
    return "\n".join(parts)


def _thumbnails(examples: Examples) -> str:
    """The images the analysis drew, with the scene's notes; why not where it could not."""
    if examples.unrendered:
        return f"<p class='note'>(images not rendered: {esc(examples.unrendered)})</p>"
    if not examples.thumbnails:
        return ""
    figs = "".join(img(png, label, label, css_class="thumb") for label, png in examples.thumbnails)
    note = "".join(f"<p class='note'>{esc(n)}</p>" for n in examples.notes)
    return f"<div class='thumbs'>{figs}</div>{note}"


def _wording_example(sub: pd.DataFrame, wording: str, replies: Mapping[str, str]) -> str:
    """One wording's prompt and options, and a row per record of ``sub`` (in order): its
    condition, model, raw reply (``replies``, by key), answer, correctness, confidence (a
    person's: the one they stated) and abstention."""
    prompt = str(sub["question.prompt"].iloc[0])
    body = [f"<h3>{esc(wording)}</h3>", "<p class='note'>Prompt:</p>", pre(prompt)]
    body.append(
        f"<p class='note'>Options: {esc(_options(sub['question.options'].iloc[0]))}; "
        f"correct: {esc(sub['question.correct'].iloc[0])}</p>"
    )
    trs = []
    for _, r in sub.iterrows():
        cond = (
            "clean"
            if r["condition"] == "clean"
            else f"{r['condition']} {level_label(r['level_m'])} m"
        )
        # a prompt that differs from the wording's first one is shown under the reply
        own_prompt = pre(r["question.prompt"]) if str(r["question.prompt"]) != prompt else ""
        reply = replies.get(str(r["key"]), "")
        trs.append(
            "<tr>"
            f"<td class='t'>{esc(cond)}</td><td class='t'>{esc(r['model'])}</td>"
            f"<td class='t'>{pre(reply)}{own_prompt}</td>"
            f"<td class='t'>{esc(r['answer'] if r['answer'] is not None else '(none)')}</td>"
            f"<td>{'yes' if r['correct'] == 1.0 else 'no'}</td>"
            f"<td>{esc(fmt_num(r[confidence_signal(str(r['model']), wording)]))}</td>"
            f"<td>{'yes' if r['abstained'] == 1.0 else 'no'}</td>"
            "</tr>"
        )
    conf_head = "verbalized conf" if is_verbal(wording) else "internal conf"
    body.append(
        "<table><tr><th class='t'>condition</th><th class='t'>model</th>"
        "<th class='t'>raw reply</th><th class='t'>answer</th><th>correct</th>"
        f"<th>{esc(conf_head)}</th><th>abstained</th></tr>" + "".join(trs) + "</table>"
    )
    return "\n".join(body)


def _options(options: Any) -> str:
    """The options JSON list as 'A. kite · B. horse · …'."""
    try:
        values = json.loads(str(options))
    except (TypeError, ValueError):
        return str(options)
    if not isinstance(values, list):
        return str(options)
    return " · ".join(f"{chr(65 + i)}. {v}" for i, v in enumerate(values))
