"""What the sweep's page states of a run besides its numbers, read off the run once by the
analysis: its name, models, tasks, arms and levels, wordings, record counts and failures, where
its depth came from (:class:`RunFacts`), and per task which wordings each signal is shown in —
the curves of Fig. 3 (:func:`curve_lines`) and the columns of the crossings' headline table
(:func:`crossing_columns`), both iterating :data:`~clearsight.sweep.signals.SIGNALS`. The page
reads these fields and never goes back to the run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from clearsight.pages.cost import devices_line
from clearsight.scenes.depth import DEFAULT_DEPTH_MODEL, depth_checkpoint
from clearsight.sweep.results import RunData, is_person, is_verbal
from clearsight.sweep.signals import AWARENESS, CONFIDENCES, SIGNALS, Signal

__all__ = ["CurveLine", "RunFacts", "crossing_columns", "curve_lines", "run_facts"]


@dataclass(frozen=True)
class RunFacts:
    """A run as its page states it (:class:`~clearsight.sweep.results.RunData`'s values, read
    once): ``counts`` and ``failures`` (message, number, most frequent first) as stored; from
    its manifest ``created``, ``config_hash``, ``git_revision``, ``packages`` (name, version),
    ``scene_set`` (its config's ``scenes``) and ``plasma`` (how ImageNet-C fog drew its
    plasma, ``common`` or ``independent``; '' without the control); ``models``, ``tasks``,
    ``arms`` and ``wordings`` in the report's orders; ``levels`` per arm, clearest first;
    ``people``: the models that are persons; ``confidence``: the confidence signal each
    (model, wording) reads; ``verbal``: the verbalized wordings;
    ``depth_source``: where the scenes' depth came from, in words; ``devices``: where each
    model ran (:func:`~clearsight.pages.cost.devices_line`); ``first_task``: the task the
    report's single-task sections show (identification where the run has it, else its first;
    '' without records)."""

    name: str
    run_dir: Path
    created: str
    config_hash: str
    git_revision: str
    packages: tuple[tuple[str, str], ...]
    scene_set: str
    plasma: str
    counts: Mapping[str, int]
    failures: tuple[tuple[str, int], ...]
    models: tuple[str, ...]
    tasks: tuple[str, ...]
    arms: tuple[str, ...]
    levels: Mapping[str, tuple[float, ...]]
    wordings: tuple[str, ...]
    people: frozenset[str]
    confidence: Mapping[tuple[str, str], str]
    verbal: frozenset[str]
    has_records: bool
    has_veq: bool
    depth_source: str
    devices: str
    first_task: str


def run_facts(data: RunData) -> RunFacts:
    """The :class:`RunFacts` of ``data``."""
    wordings = tuple(data.wordings())
    m, config = data.manifest, data.manifest.get("config", {})
    return RunFacts(
        name=data.name,
        run_dir=data.run_dir,
        created=str(m.get("created_at", "?")),
        config_hash=str(m.get("config_hash", "?")),
        git_revision=str(m.get("git_revision") or "(unknown)"),
        packages=tuple((str(k), str(v)) for k, v in sorted(m.get("packages", {}).items())),
        scene_set=str(config.get("scenes", "?")),
        plasma=_plasma(config),
        counts=data.counts,
        failures=tuple((str(m), int(n)) for m, n in data.failures.items()),
        models=tuple(data.models),
        tasks=tuple(data.tasks),
        arms=tuple(data.arms),
        levels=data.levels,
        wordings=wordings,
        people=frozenset(m for m in data.models if is_person(m)),
        confidence={
            (m, w): next(s.name for s in CONFIDENCES if s.reads(m, w))
            for m in data.models
            for w in wordings
        },
        verbal=frozenset(w for w in wordings if is_verbal(w)),
        has_records=not data.records.empty,
        has_veq=not data.veq.empty,
        depth_source=_depth_source(data),
        devices=devices_line(data.manifest),
        first_task="identify" if "identify" in data.tasks else (data.tasks or [""])[0],
    )


def _plasma(config: Mapping[str, object]) -> str:
    """How the run drew ImageNet-C fog's plasma: '' without the control, else its config's
    ``imagenet_c_plasma`` (``common`` for a run whose manifest names none: one per scene)."""
    controls = config.get("controls", ())
    if not isinstance(controls, (list, tuple)) or "imagenet_c" not in controls:
        return ""
    return "independent" if config.get("imagenet_c_plasma") == "independent" else "common"


def _depth_source(data: RunData) -> str:
    """Where the scenes' depth came from, in words, then the depth checkpoint and its size as
    the manifest records them (:func:`~clearsight.scenes.depth.depth_checkpoint`; for a run
    made before it did, from its configuration)."""
    config = data.manifest.get("config", {})
    source = str(config.get("scenes", data.records["scene.source"].dropna().unique()[:1]))
    model = str(config.get("coco_depth_model", DEFAULT_DEPTH_MODEL))
    checkpoint = data.manifest.get("depth_checkpoint") or depth_checkpoint(model, source == "coco")
    named = (
        f"depth checkpoint {checkpoint['model']} (size {checkpoint['size']}; "
        f"{checkpoint['chosen']}), used for {checkpoint['used_for']}"
    )
    return f"{_scenes_depth(data, source, model)}; {named}"


def _scenes_depth(data: RunData, source: str, model: str) -> str:
    """Where the scenes' depth came from, in words."""
    scenes = sorted(set(data.records["scene"].dropna().astype(str)))
    if source == "coco":
        return f"estimated per image with {model}"
    try:
        from clearsight.scenes.bundled import bundled_specs

        kinds = [bundled_specs()[s].depth.get("kind", "?") for s in scenes if s in bundled_specs()]
    except Exception:  # the catalogue is optional for reporting
        kinds = []
    if not kinds:
        return "unknown"
    measured = sum(k == "stereo" for k in kinds)
    parts = [
        f"measured (stereo disparity) for {measured} scene(s)" if measured else "",
        f"assumed (a stated layout) for {len(kinds) - measured} scene(s)"
        if len(kinds) > measured
        else "",
    ]
    return ", ".join(p for p in parts if p)


@dataclass(frozen=True)
class CurveLine:
    """One curve of a Fig. 3 panel: ``signal`` read in ``wording``, its line ``style`` (None:
    the signal's own) and its legend ``label``."""

    wording: str
    signal: Signal
    style: str | None
    label: str


def _kinds(order: Sequence[str]) -> tuple[list[str], list[str]]:
    """The letter and the verbalized wordings of ``order``, each in its order (main first)."""
    return [w for w in order if not is_verbal(w)], [w for w in order if is_verbal(w)]


def curve_lines(order: Sequence[str], model: str) -> tuple[CurveLine, ...]:
    """The curves of ``model``'s Fig. 3 panels (``order``: the task's wordings, main first):
    each signal in the first wording of its headline kind that reads it (else of the other
    kind: the accuracy without a letter wording, a person's stated confidence beside their
    letter answers), a signal drawn in every wording in each letter wording that reads it (the
    ones after the first dotted; the main wording where none does)."""
    letters, verbals = _kinds(order)
    lines = []
    for signal in SIGNALS:
        verbal = signal.headline_wording == "verbal"
        own, other = (verbals, letters) if verbal else (letters, verbals)
        reading = [w for w in own if signal.reads(model, w)]
        if signal.every_wording:
            shown = reading or [*letters, *verbals][:1]
        else:
            shown = (reading or [w for w in other if signal.reads(model, w)])[:1]
        for i, wording in enumerate(shown):
            stated = signal.headline_wording == "verbal" and wording in letters
            label = "stated confidence" if stated else signal.label
            lines.append(CurveLine(wording, signal, ":" if i else None, f"{label} ({wording})"))
    return tuple(lines)


def crossing_columns(order: Sequence[str]) -> tuple[tuple[str, Signal], ...]:
    """(wording, signal) of each awareness column of the crossings' headline table: each
    signal in the first wording of its headline kind that reads it (for a model; a person's
    stated confidence is found in their letter wording's column), a signal drawn in every
    wording in each letter wording (the main wording without one)."""
    letters, verbals = _kinds(order)
    columns: list[tuple[str, Signal]] = []
    for signal in AWARENESS:
        own = verbals if signal.headline_wording == "verbal" else letters
        reading = [w for w in own if signal.reads("", w)]
        shown = (letters or verbals[:1]) if signal.every_wording else reading[:1]
        columns += [(w, signal) for w in shown]
    return tuple(columns)
