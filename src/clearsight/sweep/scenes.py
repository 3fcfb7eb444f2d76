"""The sweep's scenes as references a worker can load (no pixels decoded here): the bundled
scenes or a COCO selection, the stand-ins ``clearsight plan`` counts a COCO design on before its
annotation file exists, the check that a COCO sweep's depth model is at hand, and the target
categories its category prior is made of."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from clearsight.models import install_hint
from clearsight.scenes.depth import DEFAULT_DEPTH_MODEL
from clearsight.sweep.config import SweepConfig
from clearsight.sweep.specs import SceneRef
from clearsight.validate import InputError

__all__ = ["prior_categories", "require_depth_model", "scene_refs", "stand_in_refs"]


def _bundled_refs(config: SweepConfig) -> list[SceneRef]:
    """The bundled scenes the sweep names (all of them by default), every target of each;
    InputError for an id that is not bundled."""
    from clearsight.scenes.bundled import bundled_scene_ids, bundled_specs

    specs = bundled_specs()
    ids = list(config.scene_ids) if config.scene_ids is not None else bundled_scene_ids()
    unknown = [i for i in ids if i not in specs]
    if unknown:
        raise InputError(f"unknown scene ids {unknown}; bundled scenes: {', '.join(specs)}")
    return [
        SceneRef(
            "bundled",
            i,
            tuple(t.category for t in specs[i].targets),
            tuple(t.box.as_tuple() for t in specs[i].targets),
        )
        for i in ids
    ]


def _coco_refs(config: SweepConfig) -> list[SceneRef]:
    """The COCO images the selection rules choose from the sweep's annotations, one target
    each; InputError without annotations or images, or without the depth model they need."""
    from clearsight.scenes.coco import CocoSelectionConfig, select_coco_targets

    if config.coco_annotations is None or config.coco_images is None:
        raise InputError("scenes='coco' needs coco_annotations and coco_images")
    require_depth_model(config.coco_depth_model)
    targets = select_coco_targets(
        config.coco_annotations,
        config.coco_images,
        CocoSelectionConfig(n=config.coco_n, seed=config.seed),
    )
    return [SceneRef("coco", t.scene_id, (t.category,), (t.box,), coco=t) for t in targets]


def scene_refs(config: SweepConfig) -> list[SceneRef]:
    """The scenes of a sweep, as references (no pixels are decoded here)."""
    refs = _bundled_refs(config) if config.scenes == "bundled" else _coco_refs(config)
    if not refs:
        raise InputError(
            "the scene set is empty: no scene to sweep (check scene ids or `make data`)"
        )
    if not config.all_targets:
        refs = [
            dataclasses.replace(r, categories=r.categories[:1], boxes=r.boxes[:1]) for r in refs
        ]
    return refs


def stand_in_refs(config: SweepConfig) -> list[SceneRef]:
    """``coco_n`` stand-in COCO scenes of one target each, their categories cycling through
    the selection's super-categories (the selection balances them): what
    ``clearsight plan`` counts a COCO design on before its annotation file is downloaded. The
    counts of items, units, passes and images are those of the real selection of ``coco_n``
    images; no stand-in is ever run."""
    from clearsight.scenes.categories import COCO_CATEGORIES
    from clearsight.scenes.coco import CocoSelectionConfig, CocoTarget

    kept = CocoSelectionConfig().supercategories
    names = [name for _, name, sup in COCO_CATEGORIES if sup in kept]
    box = (160, 120, 480, 360)
    return [
        SceneRef(
            "coco",
            f"stand-in-{i}",
            (names[i % len(names)],),
            (box,),
            coco=CocoTarget(
                f"stand-in-{i}",
                Path(f"stand-in-{i}.jpg"),
                i,
                640,
                480,
                box,
                names[i % len(names)],
                i,
                "",
                "",
            ),
        )
        for i in range(config.coco_n)
    ]


def require_depth_model(model: str) -> None:
    """A COCO sweep's depth model, unless stated (``assumed:<metres>``), must be a local
    directory or in the Hugging Face cache before the run starts (a worker never downloads):
    else one InputError saying how to fetch it."""
    if model.startswith("assumed:") or Path(model).expanduser().is_dir():
        return
    try:
        from clearsight.fetch.hub import cached_snapshot

        found = cached_snapshot(model)
    except ImportError:
        hint = install_hint("hf")
        raise InputError(f"the depth model {model!r} needs huggingface_hub: {hint}") from None
    if found is None:
        flag = "--depth" if model == DEFAULT_DEPTH_MODEL else f"--model {model}"
        raise InputError(
            f"the depth model {model!r} is neither a local directory nor in the Hugging Face "
            f"cache: fetch it once with `clearsight fetch {flag}` (or copy a cache that holds "
            "it), or state a depth with coco_depth_model: assumed:<metres>"
        )


def prior_categories(config: SweepConfig, refs: Sequence[SceneRef]) -> list[str]:
    """The target categories the category prior is made of: the run's scenes', or those of
    ``prior_scene_ids`` (bundled scenes, which must include the run's)."""
    if config.prior_scene_ids is None:
        return [c for r in refs for c in r.categories]
    if config.scenes != "bundled":
        raise InputError("prior_scene_ids names bundled scenes: it needs scenes='bundled'")
    outside = sorted({r.id for r in refs} - set(config.prior_scene_ids))
    if outside:
        raise InputError(f"prior_scene_ids must include the run's scenes; it lacks {outside}")
    every = scene_refs(config.model_copy(update={"scene_ids": config.prior_scene_ids}))
    return [c for r in every for c in r.categories]
