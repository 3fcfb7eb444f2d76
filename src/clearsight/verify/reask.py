"""Asking a sample of a finished run's items again: the ``verify`` protocol the driver runs.

The sample (:func:`clearsight.faces.sample.sample_keys`, shared with the export's and the
trackers' samples) is drawn with a seed from the run's finished items of the kind verify
re-asks (the run's protocol's face says which, :attr:`ProtocolFace.reask
<clearsight.faces.face.ProtocolFace.reask>`: a sweep's questions, trajectory grounding's
elicitations), stratified — a sweep's over models, conditions (each level and severity its
own), tasks and wordings; grounding's over models, variants and masked shares — each stratum
shuffled, then one item from each in turn until ``sample`` are drawn, so a small sample still
covers every cell. The re-asks go shuffled in batches of ``batch_size`` items per call (and per
forward pass for an ``hf:`` model), by default to each item's own model spec and options, or
to ``against``. Each is a :class:`~clearsight.verify.specs.ReaskSpec` record added to the run
(the driver's ``adds_to``): the run's own records are never touched, and the same settings
resume what a killed verify left.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import JsonValue

from clearsight.driver import ANY_RUN, ModelNeed, Protocol, Stage
from clearsight.execute.unit import KeyedItems
from clearsight.faces import face_of, face_of_kind, registered
from clearsight.faces.sample import sampled_specs
from clearsight.faces.verifying import Reaskable
from clearsight.models.base import Capabilities
from clearsight.specs import Options
from clearsight.store import Record, RunStore, run_protocol
from clearsight.validate import InputError
from clearsight.verify.specs import VERIFY_KIND, ReaskSpec

__all__ = ["VERIFY", "ReaskPlan", "ReaskUnit", "VerifyConfig", "run_reask_unit"]


@dataclass(frozen=True)
class VerifyConfig:
    """What ``clearsight verify`` asks again, and how."""

    run_dir: Path
    sample: int = 50
    """Finished items to ask again (all of them where the run has fewer)."""
    seed: int = 0
    """Seed of the sample and of the order the re-asks go in."""
    against: str | None = None
    """Another model spec to ask (None: each item's own model spec and options)."""
    against_options: Mapping[str, JsonValue] = field(default_factory=dict)
    batch_size: int = 5
    """Requests per call to the model."""

    def __post_init__(self) -> None:
        if self.sample < 1:
            raise InputError(f"sample must be at least 1, got {self.sample}")
        if self.batch_size < 1:
            raise InputError(f"batch_size must be at least 1, got {self.batch_size}")


@dataclass(frozen=True)
class ReaskUnit(KeyedItems):
    """One batch of re-asks of one kind to one model (their scenes, conditions or problems
    mixed); ``context``: what the kind needs from the run's configuration."""

    items: tuple[ReaskSpec, ...]
    of_kind: str
    model: str
    model_options: dict[str, JsonValue]
    context: object


@dataclass(frozen=True)
class ReaskPlan:
    """The re-asks in the order they go (``specs``), what their kind needs from the run's
    configuration (``context``), and the sampled keys that could not be had again as typed
    items (``unplanned``: not asked, said)."""

    specs: tuple[ReaskSpec, ...]
    context: object
    unplanned: tuple[str, ...] = ()


def _reaskable(protocol: str) -> Reaskable[Any] | None:
    """The kind verify re-asks in a run of ``protocol`` (None: none)."""
    return face_of(protocol).reask if protocol in registered() else None


def _of_kind(kind: str) -> Reaskable[Any]:
    """The re-askable kind ``kind``, as its protocol's face declares it."""
    face = face_of_kind(kind)
    if face is None or face.reask is None or face.reask.kind != kind:
        raise InputError(f"verify re-asks no item of kind {kind!r}")
    return face.reask


def plan_reasks(config: VerifyConfig) -> ReaskPlan:
    """The re-asks of a verify (see the module docstring)."""
    with RunStore.open(config.run_dir, read_only=True) as store:
        manifest = store.manifest()
        kind = _reaskable(run_protocol(config.run_dir))
        if kind is None:
            readable = ", ".join(n for n in registered() if face_of(n).reask is not None)
            raise InputError(
                f"the run {config.run_dir} is a {manifest.get('protocol') or 'unknown'} run: "
                f"verify re-asks the items of {readable} runs"
            )
        sampled = sampled_specs(store, kind, config.sample, config.seed)
    if not sampled:
        raise InputError(f"the run {config.run_dir} has no finished {kind.kind} item to verify")
    run_config = manifest.get("config") or {}
    items = kind.typed(run_config, sampled)
    specs = []
    for key in sampled:
        item = items.get(key)
        if item is None:
            continue
        stored = sampled[key]
        model = config.against or str(stored[kind.model_field])
        own = stored.get(f"{kind.model_field}_options") or {}
        options = dict(config.against_options if config.against else own)
        if model.startswith("hf:"):  # its forward passes take the batch of the re-ask
            options["batch_size"] = config.batch_size
        specs.append(
            ReaskSpec(
                key, kind.kind, model, Options(options), config.batch_size, config.seed, item=item
            )
        )
    unplanned = tuple(k for k in sampled if k not in items)
    return ReaskPlan(tuple(specs), kind.context(run_config), unplanned)


def _units(plan: ReaskPlan, pending: Sequence[ReaskSpec]) -> list[ReaskUnit]:
    """The pending re-asks in their shuffled order, per model and options, in batches."""
    groups: dict[str, list[ReaskSpec]] = defaultdict(list)
    for spec in pending:
        groups[spec.model_options.digest + spec.model].append(spec)
    units = []
    for specs in groups.values():
        size = specs[0].batch_size
        for start in range(0, len(specs), size):
            batch = tuple(specs[start : start + size])
            first = batch[0]
            options = dict(first.model_options.values)
            units.append(ReaskUnit(batch, first.of_kind, first.model, options, plan.context))
    return units


def run_reask_unit(unit: ReaskUnit) -> list[Record]:
    """Records of one batch of re-asks: each item answered as its own protocol answers it
    (its protocol's :class:`~clearsight.faces.verifying.Reaskable`), stored under the re-ask's
    key."""
    import dataclasses

    keys = {spec.item.key: spec.key for spec in unit.items}
    try:
        items = [spec.item for spec in unit.items]
        records = _of_kind(unit.of_kind).answer(items, unit.model, unit.model_options, unit.context)
    except Exception as exc:  # recorded with its reason; the verify goes on
        return [Record.failed(spec.key, exc) for spec in unit.items]
    return [dataclasses.replace(r, key=keys[r.key]) for r in records]


def _models(config: VerifyConfig) -> list[ModelNeed]:
    """The models the re-asks go to, each able to do what its items need."""
    needs: dict[tuple[str, str], ModelNeed] = {}
    for spec in _plan_of(config).specs:
        need = _of_kind(spec.of_kind).needs(spec.item)
        found = needs.get((spec.model, spec.model_options.digest))
        if found is not None:
            need = Capabilities(
                **{
                    name: getattr(need, name) or getattr(found.needs, name)
                    for name in need.__dataclass_fields__
                }
            )
        needs[(spec.model, spec.model_options.digest)] = ModelNeed(
            spec.model, dict(spec.model_options.values), need, "clearsight verify"
        )
    return list(needs.values())


_PLANS: dict[str, ReaskPlan] = {}


def _plan_of(config: VerifyConfig) -> ReaskPlan:
    """The plan of ``config``, made once for the driver's two questions (the models it
    loads first, then the plan); only the latest configuration's is kept."""
    from clearsight.seeding import content_hash
    from clearsight.specs import to_plain

    key = content_hash([str(config.run_dir.resolve()), to_plain(config)])
    if key not in _PLANS:
        _PLANS.clear()
        _PLANS[key] = plan_reasks(config)
    return _PLANS[key]


def _stages(config: VerifyConfig, plan: ReaskPlan, store: RunStore) -> Iterator[Stage[Any]]:
    """One stage: the re-asks (the plan made for this run is forgotten after it)."""
    if plan.specs:
        yield Stage(VERIFY_KIND, plan.specs, lambda pending: _units(plan, pending), run_reask_unit)
    _PLANS.clear()


#: Re-asking a finished run's items, as a value for :func:`clearsight.driver.run`.
VERIFY: Protocol[VerifyConfig, ReaskPlan] = Protocol(
    VERIFY_KIND, _models, _plan_of, None, _stages, adds_to=ANY_RUN
)
