"""``clearsight guard calibrate``: fit the visibility guard's threshold on a calibration split
of a finished sweep and write the file ``guard:<model>`` loads (docs/guard.md). Its options are
generated from :class:`CalibrateOptions`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from clearsight.cli.generate import ConfigCommand, command_group, option_model
from clearsight.validate import InputError

if TYPE_CHECKING:
    from clearsight.cli.options import CalibrateOptions


def guard_calibrate(
    options: CalibrateOptions,
    run: Annotated[Path, typer.Argument(help="A finished sweep run directory.")],
) -> None:
    """Fit the threshold at MODEL's accuracy crossing on the calibration scenes; print the
    file's path, the threshold and the held-out scene ids to sweep on."""
    from clearsight.guard.calibrate import calibrate

    model, scale = options.model, options.scale
    if scale not in ("estimate", "true"):
        raise InputError(f"--scale must be estimate or true, got {scale!r}")
    cal = calibrate(run, model, options.split_seed, options.calibration_share, scale)  # type: ignore[arg-type]
    safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in model)
    path = cal.write(options.out or run / f"guard-{safe}.json")
    t = "" if cal.threshold_t is None else f", threshold_t {cal.threshold_t:.4f}"
    typer.echo(f"calibration: {path}")
    typer.echo(f"threshold_m {cal.threshold_m:.3g} m{t} (scale: {cal.scale})")
    typer.echo(f"held-out scenes (--scene-ids): {','.join(cal.held_out_scenes)}")


CALIBRATE = ConfigCommand(
    "calibrate",
    option_model("CalibrateOptions"),
    guard_calibrate,
    what="calibrate options",
    files=False,
)

app = typer.Typer(
    cls=command_group(CALIBRATE),
    help="The visibility guard: abstain when the image is too murky (docs/guard.md).",
    no_args_is_help=True,
)
