"""What ``clearsight verify`` knows of each item kind it re-asks: its run's protocol, how its
items are stratified, how its typed items are had again, what a model must do to answer it,
and how a batch of them is answered.

* **sweep** (a question to a VLM): items planned again from the run's configuration (an item
  is a pure function of its spec, so the same configuration plans the same keys); answered by
  the sweep's own request and read-outs (:func:`clearsight.sweep.unit.item_request`).
* **grounding elicitations** (an 11-way confidence distribution after a trajectory): items
  rebuilt from their stored form — their problem, trajectory, template and read-out are all
  in it — and kept only where the rebuilt item's key is the stored one; answered by
  trajectory grounding's own unit (:func:`clearsight.grounding.unit.run_unit`).
* **the probe's direct answers** (the sensor answering the question itself, one sample):
  rebuilt from their stored form the same way; answered by the probe's own unit
  (:func:`clearsight.probe.unit.run_probe_unit`) with the sensor swapped for the model asked,
  its random stream still the item's (its key). Conversations (a reasoner and K sensor samples
  a turn) are not re-asked: their turns depend on every earlier reply.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from clearsight.models.base import Capabilities
from clearsight.specs import Spec
from clearsight.store import Record

if TYPE_CHECKING:
    from clearsight.grounding.problems.problem import Problem

__all__ = ["KINDS", "Reaskable", "reaskable"]

#: A batch of typed items, the model spec and options that answer them, and the context of
#: :attr:`Reaskable.context` -> their records, under the items' own keys.
Answer = Callable[[Sequence[Any], str, Mapping[str, Any], Mapping[str, Any]], list[Record]]

#: A run's configuration (from its manifest) and the stored specs of the sampled items by key
#: -> the typed items that could be had again, by key.
Typed = Callable[[Mapping[str, Any], Mapping[str, Mapping[str, Any]]], dict[str, Spec]]


@dataclass(frozen=True)
class Reaskable:
    """One item kind verify re-asks (see the module docstring)."""

    protocol: str
    kind: str
    stratum: Callable[[Mapping[str, Any]], tuple[Any, ...]]
    typed: Typed
    needs: Callable[[Any], Capabilities]
    answer: Answer
    context: Callable[[Mapping[str, Any]], dict[str, Any]]
    """What every unit needs from the run's configuration (the sweep: its depth model and
    generation budget)."""
    eligible: Callable[[Mapping[str, Any]], bool] = lambda spec: True
    """Which stored items of the kind can be re-asked (the probe: direct answers)."""
    view: Callable[[Mapping[str, Any]], Mapping[str, Any]] = lambda readouts: readouts
    """The read-outs as :func:`clearsight.verify.pairs.paired_readouts` reads them."""
    model_field: str = "model"
    """The spec field that names the model that answered (the probe: ``sensor``)."""


# ------------------------------------------------------------------------------------ sweep


def _sweep_stratum(spec: Mapping[str, Any]) -> tuple[Any, ...]:
    cell = (spec["condition"], spec.get("level_m"), spec.get("severity"))
    return (spec["model"], *cell, spec["task"], spec["wording"])


def _sweep_typed(
    config: Mapping[str, Any], stored: Mapping[str, Mapping[str, Any]]
) -> dict[str, Spec]:
    from clearsight.sweep.config import SweepConfig
    from clearsight.sweep.plan import plan_sweep

    found: dict[str, Spec] = {}
    for unit in plan_sweep(SweepConfig.model_validate(config)).units:
        for item in unit.items:
            if item.key in stored:
                found[item.key] = item
    return found


def _sweep_needs(item: Any) -> Capabilities:
    verbal = item.question.readout == "verbalized"
    return Capabilities(generate=verbal, candidate_probs=not verbal)


def _sweep_context(config: Mapping[str, Any]) -> dict[str, Any]:
    from clearsight.sweep.config import SweepConfig

    sweep = SweepConfig.model_validate(config)
    return {"depth_model": sweep.coco_depth_model, "max_new_tokens": sweep.max_new_tokens}


def _sweep_answer(
    items: Sequence[Any], model: str, options: Mapping[str, Any], context: Mapping[str, Any]
) -> list[Record]:
    """The sweep's own request of each item, all sent in one call, each reply read as the
    sweep reads it (records under the items' own keys)."""
    import time

    from clearsight.models import Request, shared_backend
    from clearsight.models.replies import checked_replies
    from clearsight.sweep.unit import item_record, item_request

    started = time.perf_counter()
    try:
        backend = shared_backend(model, options)
    except Exception as exc:  # recorded with its reason
        return [Record.failed(item.key, exc) for item in items]
    depth, budget = context["depth_model"], context["max_new_tokens"]
    built: list[Request | BaseException] = []
    for item in items:
        try:
            built.append(item_request(item, depth, budget))
        except Exception as exc:  # this re-ask fails alone, with its reason
            built.append(exc)
    answers = iter(checked_replies(backend, [r for r in built if isinstance(r, Request)]))
    replies = [r if isinstance(r, BaseException) else next(answers) for r in built]
    elapsed = (time.perf_counter() - started) / max(len(replies), 1)
    return [item_record(item, reply, elapsed) for item, reply in zip(items, replies, strict=True)]


# -------------------------------------------------------------------------------- grounding


def _grounding_stratum(spec: Mapping[str, Any]) -> tuple[Any, ...]:
    variant = str(spec.get("variant", "")).split("/")[0]
    return (spec.get("model"), variant, spec.get("share"))


def problem_of(stored: Mapping[str, Any]) -> Problem:
    """A grounding problem from its stored form."""
    from clearsight.grounding.problems.problem import Problem

    problem = dict(stored)
    problem["options"] = tuple(problem.get("options") or ())
    return Problem(**problem)


def elicit_of(stored: Mapping[str, Any]) -> Spec:
    """A grounding elicitation from its stored form."""
    from clearsight.grounding.specs import ElicitSpec, ReadoutRef, TemplateRef
    from clearsight.grounding.trajectories.written import trajectory_from_json

    readout = stored.get("readout")
    return ElicitSpec(
        problem=problem_of(stored["problem"]),
        variant=stored["variant"],
        trajectory=trajectory_from_json(dict(stored["trajectory"])),
        share=stored["share"],
        seed=stored["seed"],
        model=stored["model"],
        model_options=dict(stored["model_options"]),
        template=TemplateRef(**stored["template"]),
        meta=dict(stored["meta"]),
        readout=None if readout is None else ReadoutRef(**readout),
    )


def _grounding_typed(
    config: Mapping[str, Any], stored: Mapping[str, Mapping[str, Any]]
) -> dict[str, Spec]:
    return _rebuilt(elicit_of, stored)


def _grounding_answer(
    items: Sequence[Any], model: str, options: Mapping[str, Any], context: Mapping[str, Any]
) -> list[Record]:
    """Trajectory grounding's own elicitation of each item, all in one unit."""
    from clearsight.grounding.specs import ELICIT
    from clearsight.grounding.unit import GroundingUnit, run_unit

    return run_unit(GroundingUnit(ELICIT, model, options, tuple(items)))


def _masked(item: Any) -> Capabilities:
    return Capabilities(generate=False, attention_mask=True)


# ------------------------------------------------------------------------------------ probe


def _direct(spec: Mapping[str, Any]) -> bool:
    return spec.get("strategy") == "direct" and "instance" in spec


def _probe_stratum(spec: Mapping[str, Any]) -> tuple[Any, ...]:
    return (spec.get("sensor"), (spec.get("instance") or {}).get("dataset"), spec.get("run"))


def direct_of(stored: Mapping[str, Any]) -> Spec:
    """A probe's direct answer from its stored form."""
    from clearsight.probe.instances import Instance
    from clearsight.probe.specs import DirectSpec

    return DirectSpec(
        instance=Instance.from_json(stored["instance"]),
        sensor=stored["sensor"],
        sensor_options=dict(stored.get("sensor_options") or {}),
        sensor_max_new_tokens=stored["sensor_max_new_tokens"],
        temperature=stored["temperature"],
        seed=stored["seed"],
        prompt=stored["prompt"],
        run=stored["run"],
    )


def _probe_typed(
    config: Mapping[str, Any], stored: Mapping[str, Mapping[str, Any]]
) -> dict[str, Spec]:
    return _rebuilt(direct_of, stored)


def _probe_answer(
    items: Sequence[Any], model: str, options: Mapping[str, Any], context: Mapping[str, Any]
) -> list[Record]:
    """Each direct answer by the probe's own unit, the sensor swapped for ``model``; the
    item's key kept (its records' key and the seed of its random stream)."""
    import dataclasses

    from clearsight.probe.plan import ProbeUnit
    from clearsight.probe.unit import run_probe_unit

    records = []
    for item in items:
        asked = dataclasses.replace(item, sensor=model, sensor_options=dict(options))
        asked.__dict__["key"] = item.key  # the cached key: the item's, not the swapped spec's
        records += run_probe_unit(ProbeUnit(asked))
    return records


def _probe_view(readouts: Mapping[str, Any]) -> Mapping[str, Any]:
    return {"answer": readouts.get("committed")}


def _rebuilt(
    rebuild: Callable[[Mapping[str, Any]], Spec], stored: Mapping[str, Mapping[str, Any]]
) -> dict[str, Spec]:
    """The items ``rebuild`` makes again from their stored form whose key is the stored one
    (a stored form this code no longer reads, or reads into another item, is left out)."""
    found: dict[str, Spec] = {}
    for key, spec in stored.items():
        try:
            item = rebuild(spec)
        except (KeyError, TypeError, ValueError):
            continue
        if item.key == key:
            found[key] = item
    return found


KINDS: dict[str, Reaskable] = {
    "sweep": Reaskable(
        "sweep", "sweep", _sweep_stratum, _sweep_typed, _sweep_needs, _sweep_answer, _sweep_context
    ),
    "grounding.elicit": Reaskable(
        "grounding",
        "grounding.elicit",
        _grounding_stratum,
        _grounding_typed,
        _masked,
        _grounding_answer,
        lambda config: {},
    ),
    "probe": Reaskable(
        "probe",
        "probe",
        _probe_stratum,
        _probe_typed,
        lambda item: Capabilities(generate=True),
        _probe_answer,
        lambda config: {},
        eligible=_direct,
        view=_probe_view,
        model_field="sensor",
    ),
}


def reaskable(protocol: str | None) -> Reaskable | None:
    """The kind verify re-asks in a run of ``protocol`` (None: none)."""
    return next((k for k in KINDS.values() if k.protocol == protocol), None)
