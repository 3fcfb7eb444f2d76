"""``clearsight scenes``, ``preview`` and ``equivalence``: look at the bundled scenes and their
degradations before running anything (the options of ``preview`` and ``equivalence`` generated
from :class:`PreviewOptions` and :class:`EquivalenceOptions`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from clearsight import sweep
from clearsight.cli.generate import ConfigCommand, option_model
from clearsight.validate import InputError

if TYPE_CHECKING:
    from clearsight.cli.options import EquivalenceOptions, PreviewOptions
    from clearsight.scenes.model import Scene


def scenes(
    all_: Annotated[
        bool, typer.Option("--all", help="Also list scenes whose photo is missing.")
    ] = False,
) -> None:
    """List the bundled scenes: id, source photo (crops of one photo share it and are one
    bootstrap cluster), depth provenance and targets."""
    from clearsight.scenes.bundled import bundled_specs, photo_missing

    for spec in bundled_specs().values():
        missing = photo_missing(spec)
        if missing and not all_:
            continue
        targets = ", ".join(t.category for t in spec.targets)
        depth = "measured" if spec.depth.get("kind") == "stereo" else "assumed"
        status = "  (photo missing: run `make data`)" if missing else ""
        photo = spec.photo + (" (crop)" if spec.crop is not None else "")
        typer.echo(f"{spec.id:28s} {photo:33s} depth {depth:8s} targets: {targets}{status}")


def preview(
    options: PreviewOptions,
    scene_id: Annotated[
        str,
        typer.Argument(
            help="A bundled scene id (see `clearsight scenes`), or with --coco-annotations a "
            "COCO scene id (coco-<image id>)."
        ),
    ],
) -> None:
    """Write a contact sheet of a scene (the paper's Fig. 2: one scene under the sweep's
    levels): clean, fog and pure water (and, with the turbid water's coefficients, turbid
    water) at the eight levels, ImageNet-C severities 1-5 and the depth map with its
    provenance. A bundled scene, or a COCO scene loaded as a COCO sweep loads it."""
    turbid = _turbid_water(options.turbid_absorption, options.turbid_scattering)
    scene = _preview_scene(scene_id, options)
    out = options.out or Path(f"preview-{scene_id}.png")
    path = sweep.contact_sheet(scene, out, options.target, options.seed, turbid)
    typer.echo(f"wrote {path}")


def _preview_scene(scene_id: str, options: PreviewOptions) -> Scene:
    """The scene ``scene_id``: bundled, or (``--coco-annotations``) the COCO scene of that id
    among those the sweep's selection rules choose from the annotations, with its depth from
    ``--coco-depth`` as a COCO sweep estimates it (:func:`~clearsight.sweep.unit.load_scene`)."""
    if options.coco_annotations is None:
        if options.coco_images is not None:
            raise InputError("--coco-images goes with --coco-annotations")
        from clearsight.scenes.bundled import load_bundled_scene

        return load_bundled_scene(scene_id)
    if options.coco_images is None:
        raise InputError("--coco-annotations needs --coco-images, the folder of the images")
    from clearsight.scenes.coco import CocoSelectionConfig, select_coco_targets
    from clearsight.sweep.scenes import require_depth_model
    from clearsight.sweep.specs import SceneRef
    from clearsight.sweep.unit import load_scene

    require_depth_model(options.coco_depth)
    chosen = select_coco_targets(
        options.coco_annotations, options.coco_images, CocoSelectionConfig(n=10**9)
    )
    found = next((t for t in chosen if t.scene_id == scene_id), None)
    if found is None:
        shown = ", ".join(t.scene_id for t in chosen[:5])
        raise InputError(
            f"no COCO scene {scene_id!r} among the {len(chosen)} the selection rules choose "
            f"from {options.coco_annotations} (e.g. {shown})"
        )
    ref = SceneRef("coco", found.scene_id, (found.category,), (found.box,), coco=found)
    return load_scene(ref, options.coco_depth)


def _turbid_water(
    absorption: str | None, scattering: str | None
) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
    """The turbid water's (absorption, scattering) from the two flags (both or neither)."""
    if absorption is None and scattering is None:
        return None
    if absorption is None or scattering is None:
        raise InputError("--turbid-absorption and --turbid-scattering go together")
    try:
        return tuple(float(v) for v in absorption.split(",")), tuple(
            float(v) for v in scattering.split(",")
        )
    except ValueError:
        raise InputError(
            f"turbid coefficients must be numbers R,G,B in 1/m, got {absorption!r} and "
            f"{scattering!r}"
        ) from None


def equivalence(options: EquivalenceOptions) -> None:
    """Place ImageNet-C severities 1-5 (fog unless --corruptions names others) on the physical
    fog axis (gain-matched V_eq) for the bundled scenes: median and IQR per severity, the detail
    each added and whether it is placed (a corruption that adds detail is not lost contrast),
    and the share of scenes whose V_eq falls monotonically."""
    table = sweep.equivalence_table(
        seed=options.seed, plasma=options.plasma, corruptions=options.corruptions
    )
    if options.out is not None:
        table.to_csv(options.out, index=False)
        typer.echo(f"wrote {options.out}")
    typer.echo(sweep.summarise_equivalence(table))


PREVIEW = ConfigCommand(
    "preview", option_model("PreviewOptions"), preview, what="preview options", files=False
)
EQUIVALENCE = ConfigCommand(
    "equivalence",
    option_model("EquivalenceOptions"),
    equivalence,
    what="equivalence options",
    files=False,
)
