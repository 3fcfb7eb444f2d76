"""Asking a sample of a finished run's items again: the ``verify`` protocol the driver runs.

The sample (:func:`sample_keys`) is drawn with a seed from the run's finished items, stratified
over models, conditions (each level and severity its own), tasks and wordings (each stratum
shuffled, then one item from each in turn until ``sample`` are drawn), so a small sample still
covers every cell. The typed items are
planned again from the configuration the run's manifest holds (an item is a pure function of
its spec: the same configuration plans the same keys). The re-asks go shuffled — scenes,
conditions and wordings mixed — in batches of ``batch_size`` requests per call (and per
forward pass for an ``hf:`` model), by default to the model spec and options of the run, or
to ``against``. Each is a :class:`~clearsight.verify.specs.ReaskSpec` record added to the run
(the driver's ``adds_to``): the run's own records are never touched, and the same settings
resume what a killed verify left.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from clearsight.driver import ModelNeed, Protocol, Stage
from clearsight.execute.unit import KeyedItems
from clearsight.models.base import Capabilities
from clearsight.specs import Options
from clearsight.store import Record, RunStore
from clearsight.sweep.specs import PROTOCOL as SWEEP_KIND
from clearsight.sweep.specs import SweepItem
from clearsight.validate import InputError
from clearsight.verify.specs import VERIFY_KIND, ReaskSpec

__all__ = ["VERIFY", "ReaskPlan", "ReaskUnit", "VerifyConfig", "run_reask_unit", "sample_keys"]


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
    against_options: Mapping[str, Any] = field(default_factory=dict)
    batch_size: int = 5
    """Requests per call to the model."""

    def __post_init__(self) -> None:
        if self.sample < 1:
            raise InputError(f"--sample must be at least 1, got {self.sample}")
        if self.batch_size < 1:
            raise InputError(f"--batch-size must be at least 1, got {self.batch_size}")


@dataclass(frozen=True)
class ReaskUnit(KeyedItems):
    """One batch of re-asks to one model (its items' scenes and conditions mixed)."""

    items: tuple[ReaskSpec, ...]
    model: str
    model_options: dict[str, Any]
    depth_model: str
    max_new_tokens: int


@dataclass(frozen=True)
class ReaskPlan:
    """The re-asks in the order they go (``specs``), and the sampled keys the run's
    configuration no longer plans (``unplanned``: not asked, said)."""

    specs: tuple[ReaskSpec, ...]
    depth_model: str
    max_new_tokens: int
    unplanned: tuple[str, ...] = ()


def sample_keys(strata: Mapping[tuple[Any, ...], Sequence[str]], n: int, seed: int) -> list[str]:
    """``n`` keys drawn from ``strata`` (stratum -> its keys): the strata in a seeded order,
    each stratum's keys shuffled, then one key from each stratum in turn until ``n`` are drawn
    (all keys where there are fewer). The same strata, ``n`` and ``seed`` draw the same keys."""
    rng = np.random.default_rng(seed)
    names = sorted(strata, key=repr)
    queues = [list(rng.permutation(np.array(strata[name], dtype=object))) for name in names]
    order = rng.permutation(len(queues)) if queues else np.array([], dtype=int)
    drawn: list[str] = []
    while len(drawn) < n and any(queues):
        for q in order:
            if queues[q] and len(drawn) < n:
                drawn.append(str(queues[q].pop()))
    return drawn


def _strata(store: RunStore) -> dict[tuple[Any, ...], list[str]]:
    """The run's finished sweep items by model, condition (at its level or severity), task
    and wording."""
    strata: dict[tuple[Any, ...], list[str]] = defaultdict(list)
    for rec in store.iter_records("ok", kind=SWEEP_KIND, raw=False):
        spec = rec.spec
        cell = (spec["condition"], spec.get("level_m"), spec.get("severity"))
        strata[(spec["model"], *cell, spec["task"], spec["wording"])].append(rec.key)
    return strata


def _planned_items(manifest: Mapping[str, Any], keys: set[str]) -> tuple[dict[str, Any], Any]:
    """The typed items of ``keys`` planned again from the run's configuration, and the
    configuration."""
    from clearsight.sweep.config import SweepConfig
    from clearsight.sweep.plan import plan_sweep

    config = SweepConfig.model_validate(manifest.get("config") or {})
    found: dict[str, SweepItem] = {}
    for unit in plan_sweep(config).units:
        for item in unit.items:
            if item.key in keys:
                found[item.key] = item
    return found, config


def plan_reasks(config: VerifyConfig) -> ReaskPlan:
    """The re-asks of a verify (see the module docstring)."""
    with RunStore.open(config.run_dir, read_only=True) as store:
        store.expect_protocol(SWEEP_KIND)
        manifest = store.manifest()
        keys = sample_keys(_strata(store), config.sample, config.seed)
    if not keys:
        raise InputError(f"the run {config.run_dir} has no finished sweep item to verify")
    items, sweep = _planned_items(manifest, set(keys))
    specs = []
    for key in keys:
        item = items.get(key)
        if item is None:
            continue
        model = config.against or item.model
        options = dict(config.against_options if config.against else item.model_options.values)
        if model.startswith("hf:"):  # its forward passes take the batch of the re-ask
            options["batch_size"] = config.batch_size
        specs.append(
            ReaskSpec(
                key,
                SWEEP_KIND,
                model,
                Options(options),
                config.batch_size,
                config.seed,
                item=item,
            )
        )
    unplanned = tuple(k for k in keys if k not in items)
    return ReaskPlan(tuple(specs), sweep.coco_depth_model, sweep.max_new_tokens, unplanned)


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
            units.append(
                ReaskUnit(
                    batch,
                    first.model,
                    dict(first.model_options.values),
                    plan.depth_model,
                    plan.max_new_tokens,
                )
            )
    return units


def run_reask_unit(unit: ReaskUnit) -> list[Record]:
    """Records of one batch of re-asks: the sweep's own request of each item, all sent in one
    call, each reply read as the sweep reads it, stored under the re-ask's key."""
    import dataclasses

    from clearsight.models import Request, shared_backend
    from clearsight.models.replies import checked_replies
    from clearsight.sweep.unit import item_record, item_request

    started = time.perf_counter()
    try:
        backend = shared_backend(unit.model, unit.model_options)
    except Exception as exc:  # recorded with its reason
        return [Record.failed(spec.key, exc) for spec in unit.items]
    built: list[Request | BaseException] = []
    for spec in unit.items:
        try:
            built.append(item_request(spec.item, unit.depth_model, unit.max_new_tokens))
        except Exception as exc:  # this re-ask fails alone, with its reason
            built.append(exc)
    answers = iter(checked_replies(backend, [r for r in built if isinstance(r, Request)]))
    replies = [r if isinstance(r, BaseException) else next(answers) for r in built]
    elapsed = (time.perf_counter() - started) / max(len(replies), 1)
    return [
        dataclasses.replace(item_record(spec.item, reply, elapsed), key=spec.key)
        for spec, reply in zip(unit.items, replies, strict=True)
    ]


def _models(config: VerifyConfig) -> list[ModelNeed]:
    """The models the re-asks go to, each able to do what its items' wordings need."""
    needs: dict[tuple[str, str], ModelNeed] = {}
    for spec in _plan_of(config).specs:
        verbal = spec.item.question.readout == "verbalized"
        found = needs.get((spec.model, spec.model_options.digest))
        can = Capabilities(
            generate=verbal or bool(found and found.needs.generate),
            candidate_probs=not verbal or bool(found and found.needs.candidate_probs),
        )
        needs[(spec.model, spec.model_options.digest)] = ModelNeed(
            spec.model, dict(spec.model_options.values), can, "clearsight verify"
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


#: Re-asking a finished sweep's items, as a value for :func:`clearsight.driver.run`.
VERIFY: Protocol[VerifyConfig, ReaskPlan] = Protocol(
    VERIFY_KIND, _models, _plan_of, None, _stages, adds_to=(SWEEP_KIND,)
)
