"""The sweep report's qualitative examples: one target's question, options, raw replies and
read-outs at three conditions of the first arm, with the images the models saw.

What is shown is records, not numbers: the first scene's first target, clean and at the middle
and murkiest level, every wording and model; the images are re-rendered from the scene — a
bundled photo or a COCO image, loaded with its depth as the sweep loads it — and the run's
physics.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from clearsight.pages.html import esc, fmt_num, img, pre
from clearsight.pages.plots import png_thumbnail
from clearsight.sweep.results import (
    TASK_NAMES,
    RunData,
    confidence_signal,
    is_verbal,
    level_label,
)
from clearsight.validate import InputError

if TYPE_CHECKING:
    from clearsight.scenes.model import Scene

__all__ = ["examples_section"]


def _example_rows(data: RunData, task: str) -> tuple[pd.DataFrame, str, list[tuple[str, float]]]:
    """Records of the first scene's first target at three conditions of the first arm."""
    rec = data.records[data.records["task"] == task]
    if rec.empty or not data.arms:
        return rec.iloc[0:0], "", []
    arm = data.arms[0]
    first = rec[rec["condition"] == arm].iloc[0]
    levels = data.levels[arm]
    picks: list[tuple[str, float]] = []
    if (rec["condition"] == "clean").any():
        picks.append(("clean", math.nan))
    picks += [(arm, levels[len(levels) // 2]), (arm, levels[-1])]
    same = rec[(rec["scene"] == first["scene"]) & (rec["target"] == first["target"])]
    keep = np.zeros(len(same), dtype=bool)
    for cond, v in picks:
        hit = same["condition"] == cond
        if cond != "clean":
            hit &= same["level_m"] == v
        keep |= hit.to_numpy()
    return same[keep], arm, picks


def _reply_text(raw: Any) -> str:
    """A raw backend output as text: the generated reply, else the letter probabilities."""
    if not isinstance(raw, dict):
        return json.dumps(raw, ensure_ascii=False)[:2000]
    texts = raw.get("texts") or []
    if texts:
        return "\n---\n".join(str(t) for t in texts)[:2000]
    probs = raw.get("candidate_probs")
    if isinstance(probs, dict) and probs:
        return "letter probabilities: " + ", ".join(f"{k} {float(v):.3f}" for k, v in probs.items())
    return json.dumps(raw, ensure_ascii=False)[:2000]


def _example_scene(data: RunData, key: str) -> Scene:
    """The scene of the record ``key``, loaded as the sweep loads it (a bundled photo, or a COCO
    image with the run's depth model: :func:`~clearsight.sweep.unit.load_scene`)."""
    from clearsight.scenes.coco import CocoTarget
    from clearsight.scenes.depth import DEFAULT_DEPTH_MODEL
    from clearsight.store import RunStore
    from clearsight.sweep.specs import SceneRef
    from clearsight.sweep.unit import load_scene

    with RunStore.open(data.run_dir, read_only=True) as store:
        record = store.record(key)
    if record is None:
        raise InputError(f"no record {key}")
    ref = record.spec["scene"]
    coco = ref.get("coco")
    target = None
    if coco is not None:
        fields = coco | {"file": Path(coco["file"]), "box": tuple(coco["box"])}
        target = CocoTarget(**fields)
    depth = str(data.manifest.get("config", {}).get("coco_depth_model", DEFAULT_DEPTH_MODEL))
    return load_scene(SceneRef(str(ref["source"]), str(ref["id"]), (), (), target), depth)


def _thumbnails(data: RunData, rows: pd.DataFrame, arm: str, picks: list[tuple[str, float]]) -> str:
    """The example's images at the chosen conditions, rendered as the sweep renders them (the
    run's physics, the box drawn last), for bundled and COCO scenes alike; a note in their
    place where the scene cannot be loaded here (a COCO copy or depth model not on this
    machine)."""
    first = rows.iloc[0]
    try:
        from clearsight.physics import draw_box
        from clearsight.sweep.conditions import arm_physics, arm_stack

        config = data.manifest.get("config", {})
        scene = _example_scene(data, str(first["key"]))
        box = tuple(int(v) for v in json.loads(str(first["box"])))
        levels = [v for c, v in picks if c != "clean"]
        stack = arm_stack(scene, arm, levels, **arm_physics(config)[arm])  # type: ignore[arg-type]
        images = [scene.image] * (len(picks) - len(levels)) + list(stack)
        thickness = int(config.get("box_thickness_px", 8))
        figs = []
        for (cond, v), image in zip(picks, images, strict=True):
            boxed = draw_box(np.array(image), box, thickness)  # type: ignore[arg-type]
            label = "clean" if cond == "clean" else f"{cond} {level_label(v)} m"
            figs.append(img(png_thumbnail(boxed), label, label, css_class="thumb"))
        notes = [n for n in (scene.attribution, scene.depth_note) if n]
        note = "".join(f"<p class='note'>{esc(n)}</p>" for n in notes)
        return f"<div class='thumbs'>{''.join(figs)}</div>{note}"
    except Exception as exc:  # thumbnails are illustration only; never fail the report
        return f"<p class='note'>(images not rendered: {esc(type(exc).__name__)}: {esc(exc)})</p>"


def examples_section(data: RunData, task: str, thumbnails: bool) -> str:
    """Question, options, raw replies and read-outs of one target at three conditions."""
    head = f"<h2 id='examples'>Qualitative examples — {esc(TASK_NAMES.get(task, task))}</h2>"
    rows, arm, picks = _example_rows(data, task)
    if rows.empty:
        return head + "<p class='note'>No records to show.</p>"
    raws = data.raw_outputs([str(k) for k in rows["key"]])
    first = rows.iloc[0]
    parts = [
        head,
        f"<p>Scene <b>{esc(first['scene'])}</b>, target {esc(fmt_num(first['target'], 0))} "
        f"({esc(first['category'])}), {esc(arm)} arm.</p>",
    ]
    if thumbnails:
        parts.append(_thumbnails(data, rows, arm, picks))
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
        parts.append(_wording_example(sub, wording, raws))
    return "\n".join(parts)


def _wording_example(sub: pd.DataFrame, wording: str, raws: dict[str, Any]) -> str:
    """One wording's prompt and options, and a row per record of ``sub`` (in order): its
    condition, model, raw reply (``raws``, by key), answer, correctness, confidence (a
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
        reply = _reply_text(raws.get(str(r["key"])))
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
