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

from clearsight.pages.html import Figure, Part, esc, fmt_num, pre
from clearsight.sweep.images.examples import EXAMPLE_RULE, Examples
from clearsight.sweep.results import TASK_NAMES

__all__ = ["answer_text", "examples_section"]


def examples_section(examples: Examples | None) -> list[Part]:
    """Question, options, raw replies and read-outs of one target at three conditions."""
    task = examples.task if examples is not None else ""
    head = f"<h2 id='examples'>Qualitative examples — {esc(TASK_NAMES.get(task, task))}</h2>"
    if examples is None or examples.rows.empty:
        return [head + "<p class='note'>No records to show.</p>"]
    rows = examples.rows
    first = rows.iloc[0]
    parts: list[Part] = [
        head,
        f"<p>Scene <b>{esc(first['scene'])}</b>, target {esc(fmt_num(first['target'], 0))} "
        f"({esc(first['category'])}), {esc(examples.arm)} arm: {esc(EXAMPLE_RULE)}.</p>",
    ]
    parts += _thumbnails(examples)
    for wording, conf_head in examples.wordings:
        sub = rows[rows["wording"] == wording]
        if not sub.empty:
            parts.append(_wording_example(sub, wording, conf_head, examples.replies))
    return parts


def _thumbnails(examples: Examples) -> list[Part]:
    """The images the analysis drew, with the scene's notes; why not where it could not."""
    if examples.unrendered:
        return [f"<p class='note'>(images not rendered: {esc(examples.unrendered)})</p>"]
    if not examples.thumbnails:
        return []
    figs = [Figure(png, label, label, css_class="thumb") for label, png in examples.thumbnails]
    note = "".join(f"<p class='note'>{esc(n)}</p>" for n in examples.notes)
    return ["<div class='thumbs'>", *figs, f"</div>{note}"]


def _wording_example(
    sub: pd.DataFrame, wording: str, conf_head: str, replies: Mapping[str, str]
) -> str:
    """One wording's prompt and options, and a row per record of ``sub`` (in the analysis'
    order: the conditions picked, then the models): its
    condition, model, raw reply (``replies``, by key), answer, correctness, confidence (a
    person's: the one they stated; headed ``conf_head``) and abstention."""
    prompt = str(sub["question.prompt"].iloc[0])
    body = [f"<h3>{esc(wording)}</h3>", "<p class='note'>Prompt:</p>", pre(prompt)]
    body.append(
        f"<p class='note'>Options: {esc(_options(sub['question.options'].iloc[0]))}; "
        f"correct: {esc(sub['question.correct'].iloc[0])}</p>"
    )
    trs = []
    for _, r in sub.iterrows():
        cond = r["condition_label"]
        # a prompt that differs from the wording's first one is shown under the reply
        own_prompt = pre(r["question.prompt"]) if str(r["question.prompt"]) != prompt else ""
        reply = replies.get(str(r["key"]), "")
        trs.append(
            "<tr>"
            f"<td class='t'>{esc(cond)}</td><td class='t'>{esc(r['model'])}</td>"
            f"<td class='t'>{pre(reply)}{own_prompt}</td>"
            f"<td class='t'>{esc(answer_text(r['answer']))}</td>"
            f"<td>{'yes' if r['correct'] == 1.0 else 'no'}</td>"
            f"<td>{esc(fmt_num(r['conf']))}</td>"
            f"<td>{'yes' if r['abstained'] == 1.0 else 'no'}</td>"
            "</tr>"
        )
    body.append(
        "<table><tr><th class='t'>condition</th><th class='t'>model</th>"
        "<th class='t'>raw reply</th><th class='t'>answer</th><th>correct</th>"
        f"<th>{esc(conf_head)}</th><th>abstained</th></tr>" + "".join(trs) + "</table>"
    )
    return "\n".join(body)


def answer_text(answer: Any) -> str:
    """A record's parsed answer as the examples show it: the option, or '(not parsed)' where
    the reply gave none (a missing value, NaN once read into a frame)."""
    if isinstance(answer, str):
        return answer or "(not parsed)"
    return "(not parsed)" if pd.isna(answer) else str(answer)


def _options(options: Any) -> str:
    """The options JSON list as 'A. kite · B. horse · …'."""
    try:
        values = json.loads(str(options))
    except (TypeError, ValueError):
        return str(options)
    if not isinstance(values, list):
        return str(options)
    return " · ".join(f"{chr(65 + i)}. {v}" for i, v in enumerate(values))
