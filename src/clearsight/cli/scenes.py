"""``clearsight scenes``, ``preview`` and ``equivalence``: look at the bundled scenes and their
degradations before running anything."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer

from clearsight import sweep
from clearsight.validate import InputError


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
    scene_id: Annotated[str, typer.Argument(help="A bundled scene id (see `clearsight scenes`).")],
    out: Annotated[
        Path | None, typer.Option(help="PNG to write; default preview-SCENE.png")
    ] = None,
    target: Annotated[int, typer.Option(help="Index of the boxed target.")] = 0,
    seed: Annotated[int, typer.Option(help="Seed of the ImageNet-C plasma.")] = 0,
    turbid_absorption: Annotated[
        str | None,
        typer.Option(help="Add a turbid-water row: the water's absorption a (1/m) as R,G,B."),
    ] = None,
    turbid_scattering: Annotated[
        str | None, typer.Option(help="The turbid water's scattering b (1/m) as R,G,B.")
    ] = None,
) -> None:
    """Write a contact sheet of a scene: clean, fog and pure water (and, with the turbid
    water's coefficients, turbid water) at the eight levels, ImageNet-C severities 1-5 and the
    depth map with its provenance."""
    from clearsight.scenes.bundled import load_bundled_scene

    turbid = _turbid_water(turbid_absorption, turbid_scattering)
    scene = load_bundled_scene(scene_id)
    path = sweep.contact_sheet(scene, out or Path(f"preview-{scene_id}.png"), target, seed, turbid)
    typer.echo(f"wrote {path}")


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


def equivalence(
    seed: Annotated[int, typer.Option(help="Run seed of the ImageNet-C plasma.")] = 0,
    out: Annotated[Path | None, typer.Option(help="Also write the per-scene table as CSV.")] = None,
    plasma: Annotated[
        Literal["independent", "common"],
        typer.Option(help="Plasma per scene and severity (independent) or one per scene (common)."),
    ] = "independent",
) -> None:
    """Place ImageNet-C fog severities 1-5 on the physical fog axis (gain-matched V_eq) for the
    bundled scenes: median and IQR per severity, and the share of scenes whose V_eq falls
    monotonically."""
    table = sweep.equivalence_table(seed=seed, plasma=plasma)
    if out is not None:
        table.to_csv(out, index=False)
        typer.echo(f"wrote {out}")
    typer.echo(sweep.summarise_equivalence(table))
