"""``clearsight guard calibrate``: fit the visibility guard's threshold on a calibration split
of a finished sweep and write the file ``guard:<model>`` loads (docs/guard.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from clearsight.cli.errors import Group
from clearsight.validate import InputError

app = typer.Typer(
    cls=Group,
    help="The visibility guard: abstain when the image is too murky (docs/guard.md).",
    no_args_is_help=True,
)


@app.command("calibrate")
def guard_calibrate(
    run: Annotated[Path, typer.Argument(help="A finished sweep run directory.")],
    model: Annotated[str, typer.Option(help="The model to guard, as named in the run.")],
    split_seed: Annotated[int, typer.Option(help="Seed of the scene split.")] = 0,
    calibration_share: Annotated[
        float, typer.Option(help="Share of the scenes to calibrate on.")
    ] = 0.5,
    scale: Annotated[
        str,
        typer.Option(
            help="estimate: the threshold as the guard's estimate reads M's crossing on the "
            "calibration scenes (bundled scenes); true: the crossing V* itself."
        ),
    ] = "estimate",
    out: Annotated[
        Path | None, typer.Option(help="Calibration file (default RUN/guard-<model>.json).")
    ] = None,
) -> None:
    """Fit the threshold at MODEL's accuracy crossing on the calibration scenes; print the
    file's path, the threshold and the held-out scene ids to sweep on."""
    from clearsight.guard.calibrate import calibrate

    if scale not in ("estimate", "true"):
        raise InputError(f"--scale must be estimate or true, got {scale!r}")
    cal = calibrate(run, model, split_seed, calibration_share, scale)  # type: ignore[arg-type]
    safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in model)
    path = cal.write(out or run / f"guard-{safe}.json")
    t = "" if cal.threshold_t is None else f", threshold_t {cal.threshold_t:.4f}"
    typer.echo(f"calibration: {path}")
    typer.echo(f"threshold_m {cal.threshold_m:.3g} m{t} (scale: {cal.scale})")
    typer.echo(f"held-out scenes (--scene-ids): {','.join(cal.held_out_scenes)}")
