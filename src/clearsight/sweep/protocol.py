"""The visibility sweep as a protocol (docs/methods.md §1-§4): its stages, manifest and run.

:data:`SWEEP` is the value :func:`clearsight.driver.run` runs: the models it needs (each with
the capabilities its wordings ask for), the plan (:func:`~clearsight.sweep.plan.plan_sweep`),
the manifest (the config, the prompts' hashes, the category prior, the distractor scheme and,
with the turbid arm, its water's coefficients), the plan's fingerprint and three stages — the
questions to the models (:func:`~clearsight.sweep.unit.run_unit`), then the model-free
ImageNet-C equivalents and depth profiles, one unit per scene. :func:`run_sweep` is the same
as ``driver.run(SWEEP, ...)`` with the execution options spelled out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, Unpack

import numpy as np

from clearsight import driver
from clearsight.driver import ModelNeed, Protocol, RunOptions, RunSummary, Stage
from clearsight.models import Capabilities
from clearsight.physics import VISIBILITY_CONSTANT, turbid_coefficients
from clearsight.provenance import run_manifest
from clearsight.scenes.depth import depth_checkpoint
from clearsight.specs import Spec
from clearsight.store import RunStore, SpecGrid, SpecGrids, keys_of, select
from clearsight.sweep.config import SweepConfig
from clearsight.sweep.model_free import DepthUnit, VeqUnit, run_depth_unit, run_veq_unit
from clearsight.sweep.plan import SweepPlan, plan_sweep
from clearsight.sweep.specs import DEPTH_PROTOCOL, PROTOCOL, VEQ_PROTOCOL
from clearsight.sweep.unit import SweepUnit, run_unit

if TYPE_CHECKING:
    pass


def _models(config: SweepConfig) -> list[ModelNeed]:
    """Every model the sweep asks, with the options it runs with; it must load and give letter
    probabilities when asked a letter wording, generate when asked a verbalized one (images are
    not required: the blind control is text-only on purpose)."""
    needs = []
    for m in config.models:
        wordings = config.wordings_of(m)
        can = Capabilities(
            generate=any(w.startswith("verbal.") for w in wordings),
            candidate_probs=any(w.startswith("mcq.") for w in wordings),
        )
        needs.append(ModelNeed(m, config.options_of(m), can, "the visibility sweep"))
    return needs


def _stages(config: SweepConfig, plan: SweepPlan, store: RunStore) -> Iterator[Stage[Any]]:
    """Questions to the models, then the model-free ImageNet-C equivalents and depth
    profiles."""
    if plan.units:
        items = SpecGrids([u.items for u in plan.units])
        yield Stage(PROTOCOL, items, partial(_pending_units, plan.units), run_unit)
    if plan.veq_units:
        veq = [item for u in plan.veq_units for item in u.items]
        yield Stage(VEQ_PROTOCOL, veq, partial(_pending_units, plan.veq_units), run_veq_unit)
    if plan.depth_units:
        depth = [item for u in plan.depth_units for item in u.items]
        units = partial(_pending_units, plan.depth_units)
        yield Stage(DEPTH_PROTOCOL, depth, units, run_depth_unit)


U = TypeVar("U", SweepUnit, VeqUnit, DepthUnit)


def _pending_units(units: Sequence[U], pending: Sequence[Spec]) -> list[U]:
    """The planned units cut down to their pending items (units with none dropped; all of
    them as planned when every item is pending)."""
    if len(pending) == sum(len(u.items) for u in units):
        return [u for u in units if u.items]
    keys = set(keys_of(pending))
    cut = (dataclasses.replace(u, items=_kept(u.items, keys)) for u in units)
    return [u for u in cut if u.items]


def _kept(items: Sequence[Spec], keys: set[str]) -> Any:
    """``items`` (a unit's grid or tuple) cut down to ``keys``, of the same type."""
    kept = select(items, keys)
    return kept if isinstance(kept, SpecGrid) else tuple(kept)


def _manifest(config: SweepConfig, plan: SweepPlan) -> dict[str, object]:
    return run_manifest(
        config.model_dump(mode="json"),
        PROTOCOL,
        prompt_hashes=plan.prompt_hashes,
        category_prior=plan.prior,
        distractor_scheme=plan.distractor_scheme,
        w_accuracy=config.w_accuracy,
        depth_checkpoint=depth_checkpoint(config.coco_depth_model, config.scenes == "coco"),
        **_turbid_manifest(config),
    )


def _turbid_manifest(config: SweepConfig) -> dict[str, object]:
    """With the turbid arm: which channel defines its V, the per-channel attenuation ratios
    and the veil its coefficients give (:func:`~clearsight.physics.turbid_coefficients`)."""
    a, b = config.turbid_absorption_per_m, config.turbid_scattering_per_m
    if "turbid" not in config.arms or a is None or b is None:
        return {}
    beta, veil = turbid_coefficients(VISIBILITY_CONSTANT, a, b, config.airlight)
    return {
        "turbid_water": {
            "visibility_channel": "RGB"[int(np.argmin(beta))],
            "attenuation_ratio_rgb": [round(float(x), 6) for x in beta],
            "veil_rgb": [round(float(x), 6) for x in veil],
        }
    }


#: Version of the sweep's planner: raise it when the same config plans other items.
PLAN_VERSION = 1


def _fingerprint(config: SweepConfig) -> list[Any]:
    """What the plan is a function of: the planner's version, the config and (COCO scenes)
    the annotation file's size and modification time."""
    annotations = config.coco_annotations
    stat = annotations.stat() if config.scenes == "coco" and annotations is not None else None
    file = None if stat is None else [stat.st_size, stat.st_mtime_ns]
    return [PLAN_VERSION, config.model_dump(mode="json"), file]


#: The visibility sweep as a value for :func:`clearsight.driver.run`.
SWEEP: Protocol[SweepConfig, SweepPlan] = Protocol(
    PROTOCOL, _models, plan_sweep, _manifest, _stages, fingerprint=_fingerprint
)


def run_sweep(
    config: SweepConfig,
    run_dir: Path | str,
    **options: Unpack[RunOptions],
) -> RunSummary:
    """Plan the sweep, store its items, run what is not finished, and return what ran.

    A rerun of a finished run does nothing but check; an interrupted run resumes. The same as
    ``driver.run_with(SWEEP, config, run_dir, **options)``.
    """
    return driver.run_with(SWEEP, config, run_dir, **options)
