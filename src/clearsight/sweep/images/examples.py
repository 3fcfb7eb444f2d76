"""The sweep report's qualitative examples, read from the run: one target's records at three
conditions of the first arm (clean, the middle and the murkiest level), every wording and model,
each record's raw reply as text, and — where asked — the images the models saw, rendered again
from the scene (a bundled photo or a COCO image, loaded with its depth as the sweep loads it)
and the run's physics, the box drawn last. :func:`sweep_examples` computes them for the analysis
(:func:`~clearsight.sweep.analysis.analyse_run`); the page (:mod:`clearsight.sweep.page.examples`)
only renders them.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from clearsight.pages.plots import png_thumbnail
from clearsight.sweep.results import RunData, confidence_signal, is_verbal, level_label
from clearsight.validate import InputError

if TYPE_CHECKING:
    from clearsight.scenes.model import Scene

__all__ = ["EXAMPLE_RULE", "Examples", "example_target", "letter_text", "sweep_examples"]


@dataclass(frozen=True)
class Examples:
    """One target's records of ``task`` at the conditions ``picks`` of ``arm`` (``rows``: the
    run's records with ``condition_label`` and ``conf``, the confidence each reads; empty
    where it has none), the task's wordings in order with the header of the confidence each
    reads (``wordings``), each record's raw reply as text (``replies``, by key), and the
    thumbnails as (label, PNG) with the scene's notes (attribution, depth), or
    ``unrendered``: why the images could not be drawn here (empty where none were asked)."""

    task: str
    rows: pd.DataFrame
    arm: str
    picks: tuple[tuple[str, float], ...]
    wordings: tuple[tuple[str, str], ...] = ()
    replies: dict[str, str] = field(default_factory=dict)
    thumbnails: tuple[tuple[str, bytes], ...] = ()
    notes: tuple[str, ...] = ()
    unrendered: str = ""


def sweep_examples(data: RunData, task: str, thumbnails: bool) -> Examples:
    """The :class:`Examples` of ``task`` in the run ``data`` (``thumbnails``: draw the images;
    a few seconds, a scene load and the physics)."""
    rows, arm, picks = _example_rows(data, task)
    if rows.empty:
        return Examples(task, rows, arm, tuple(picks))
    raws = data.raw_outputs([str(k) for k in rows["key"]])
    replies = {str(k): _reply_text(raws.get(str(k))) for k in rows["key"]}
    wordings = tuple(
        (w, "verbalized conf" if is_verbal(w) else "internal conf") for w in data.wordings(task)
    )
    found = Examples(task, _labelled(rows, picks), arm, tuple(picks), wordings, replies)
    return _with_thumbnails(found, data) if thumbnails else found


def _labelled(rows: pd.DataFrame, picks: list[tuple[str, float]]) -> pd.DataFrame:
    """``rows`` in the order they are shown (the conditions ``picks``, then the models), with
    the label of each one's condition ('clean', 'fog 15.6 m') and the value of the confidence
    its model reads in its wording (a person's: the one they stated)."""
    order = {(c, 0.0 if c == "clean" else v): i for i, (c, v) in enumerate(picks)}
    at = zip(rows["condition"], rows["level_m"], strict=True)
    rank = [order.get((c, 0.0 if c == "clean" else float(v)), 99) for c, v in at]
    rows = rows.assign(_o=rank).sort_values(["_o", "model"]).drop(columns="_o")
    read = zip(rows.index, rows["model"], rows["wording"], strict=True)
    conf = pd.Series(
        [rows.at[i, confidence_signal(str(m), str(w))] for i, m, w in read], rows.index, float
    )
    conditions = zip(rows["condition"], rows["level_m"], strict=True)
    label = ["clean" if c == "clean" else f"{c} {level_label(v)} m" for c, v in conditions]
    return rows.assign(condition_label=label, conf=conf)


#: How the example's target is chosen (:func:`example_target`), in words for the page.
EXAMPLE_RULE = (
    "the target whose answers lose the most between its clean image and the murkiest level of "
    "the arm (correct answers on the clean image, over every model and wording, minus those at "
    "the murkiest level), the first such in the run's order where several tie"
)


def example_target(rec: pd.DataFrame, arm: str, murkiest: float) -> tuple[Any, Any]:
    """The (scene, target) of :data:`EXAMPLE_RULE` among ``rec`` (one task's records) shown
    ``arm``: the example that shows what the fog takes, not whichever target is first."""
    at = ["scene", "target"]
    shown = rec.loc[rec["condition"] == arm, at].drop_duplicates()
    clean = rec[rec["condition"] == "clean"].groupby(at)["correct"].sum()
    murky = rec[(rec["condition"] == arm) & (rec["level_m"] == murkiest)]
    lost = clean.sub(murky.groupby(at)["correct"].sum(), fill_value=0.0)
    scores = [float(lost.get((s, t), 0.0)) for s, t in shown.itertuples(index=False)]
    best = int(np.argmax(scores))  # the first of the largest
    return shown["scene"].iloc[best], shown["target"].iloc[best]


def _example_rows(data: RunData, task: str) -> tuple[pd.DataFrame, str, list[tuple[str, float]]]:
    """Records of the example's target (:func:`example_target`) at three conditions of the
    first arm: the clean image, the middle and the murkiest level."""
    rec = data.records[data.records["task"] == task]
    if rec.empty or not data.arms:
        return rec.iloc[0:0], "", []
    arm = data.arms[0]
    levels = data.levels[arm]
    scene, target = example_target(rec, arm, levels[-1])
    picks: list[tuple[str, float]] = []
    if (rec["condition"] == "clean").any():
        picks.append(("clean", math.nan))
    picks += [(arm, levels[len(levels) // 2]), (arm, levels[-1])]
    same = rec[(rec["scene"] == scene) & (rec["target"] == target)]
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
        return letter_text({str(k): float(v) for k, v in probs.items()})
    return json.dumps(raw, ensure_ascii=False)[:2000]


def letter_text(probs: dict[str, float]) -> str:
    """A scored reply's letter probabilities as text: as the model gave them (its raw mass on
    each letter, three significant digits, and their sum: a tiny sum means the model put its
    mass elsewhere) and, where the sum is not 1, renormalised over the letters — the scale the
    internal confidence reads (it renormalises over the content options)."""
    mass = sum(probs.values())
    given = ", ".join(f"{k} {v:.3g}" for k, v in probs.items())
    text = f"letter probabilities as given: {given} (sum {mass:.3g})"
    if mass > 0 and not math.isclose(mass, 1.0, rel_tol=1e-3):
        text += "; renormalised: " + ", ".join(f"{k} {v / mass:.3f}" for k, v in probs.items())
    return text


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


def _with_thumbnails(found: Examples, data: RunData) -> Examples:
    """``found`` with its images at the chosen conditions, rendered as the sweep renders them
    (the run's physics, the box drawn last), for bundled and COCO scenes alike; with why not
    instead where the scene cannot be loaded here (a COCO copy or depth model not on this
    machine): thumbnails are illustration only and never fail the report."""
    from dataclasses import replace

    first = found.rows.iloc[0]
    try:
        from clearsight.physics import draw_box
        from clearsight.sweep.conditions import arm_physics, arm_stack

        config = data.manifest.get("config", {})
        scene = _example_scene(data, str(first["key"]))
        box = tuple(int(v) for v in json.loads(str(first["box"])))
        levels = [v for c, v in found.picks if c != "clean"]
        physics = arm_physics(config)[found.arm]
        stack = arm_stack(scene, found.arm, levels, **physics)  # type: ignore[arg-type]
        images = [scene.image] * (len(found.picks) - len(levels)) + list(stack)
        thickness = int(config.get("box_thickness_px", 8))
        drawn = []
        for (cond, v), image in zip(found.picks, images, strict=True):
            boxed = draw_box(np.array(image), box, thickness)  # type: ignore[arg-type]
            label = "clean" if cond == "clean" else f"{cond} {level_label(v)} m"
            drawn.append((label, png_thumbnail(boxed)))
        notes = tuple(n for n in (scene.attribution, scene.depth_note) if n)
        return replace(found, thumbnails=tuple(drawn), notes=notes)
    except Exception as exc:  # thumbnails are illustration only; never fail the report
        return replace(found, unrendered=f"{type(exc).__name__}: {exc}")
