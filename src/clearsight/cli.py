"""The ``clearsight`` command line. Heavy imports happen inside commands, so ``--help`` is fast."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(
    help="Measure whether vision-language models know when they cannot see.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


def _fail(message: str) -> typer.Exit:
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    return typer.Exit(code=2)


@app.command()
def scenes(
    all_: Annotated[
        bool, typer.Option("--all", help="Also list scenes whose photo is missing.")
    ] = False,
) -> None:
    """List the bundled scenes: id, size, depth provenance and targets."""
    from clearsight.scenes.bundled import bundled_specs, photo_missing

    for spec in bundled_specs().values():
        missing = photo_missing(spec)
        if missing and not all_:
            continue
        targets = ", ".join(t.category for t in spec.targets)
        depth = "measured" if spec.depth.get("kind") == "stereo" else "assumed"
        status = "  (photo missing: run `make data`)" if missing else ""
        typer.echo(f"{spec.id:28s} depth {depth:8s} targets: {targets}{status}")


@app.command()
def preview(
    scene_id: Annotated[str, typer.Argument(help="A bundled scene id (see `clearsight scenes`).")],
    out: Annotated[
        Path | None, typer.Option(help="PNG to write; default preview-SCENE.png")
    ] = None,
    target: Annotated[int, typer.Option(help="Index of the boxed target.")] = 0,
    seed: Annotated[int, typer.Option(help="Seed of the ImageNet-C plasma.")] = 0,
) -> None:
    """Write a contact sheet of a scene: clean, fog and water at the eight levels, ImageNet-C
    severities 1-5 and the depth map with its provenance."""
    from clearsight.preview import contact_sheet
    from clearsight.scenes.bundled import load_bundled_scene
    from clearsight.validate import InputError

    try:
        scene = load_bundled_scene(scene_id)
        path = contact_sheet(scene, out or Path(f"preview-{scene_id}.png"), target, seed)
    except InputError as exc:
        raise _fail(str(exc)) from exc
    typer.echo(f"wrote {path}")


@app.command()
def equivalence(
    seed: Annotated[int, typer.Option(help="Run seed of the ImageNet-C plasma.")] = 0,
    out: Annotated[Path | None, typer.Option(help="Also write the per-scene table as CSV.")] = None,
) -> None:
    """Place ImageNet-C fog severities 1-5 on the physical fog axis (gain-matched V_eq) for the
    bundled scenes: median and IQR per severity, and the share of scenes whose V_eq falls
    monotonically."""
    from clearsight.equivalence_table import equivalence_table, summarise

    table = equivalence_table(seed=seed)
    if out is not None:
        table.to_csv(out, index=False)
        typer.echo(f"wrote {out}")
    typer.echo(summarise(table))


@app.command()
def demo(
    out: Annotated[Path, typer.Option(help="Folder for the demo's outputs.")] = Path("runs/demo"),
) -> None:
    """A first look: contact sheets of three bundled scenes and where ImageNet-C fog sits on the
    physical visibility axis."""
    from clearsight.equivalence_table import equivalence_table, summarise
    from clearsight.preview import contact_sheet
    from clearsight.scenes.bundled import bundled_scene_ids, load_bundled_scene

    ids = bundled_scene_ids()
    for scene_id in [
        i for i in ("skimage-stereo-motorcycle", "darknet-person", "darknet-horses") if i in ids
    ]:
        path = contact_sheet(load_bundled_scene(scene_id), out / f"preview-{scene_id}.png")
        typer.echo(f"wrote {path}")
    table = equivalence_table(seed=0)
    table.to_csv(out / "imagenet_c_equivalence.csv", index=False)
    typer.echo(summarise(table))


def main() -> None:  # pragma: no cover - console entry point
    app()
