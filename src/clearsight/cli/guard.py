"""``clearsight guard calibrate``: fit the visibility guard's threshold on a calibration split
of a finished sweep and write the file ``guard:<model>`` loads (docs/guard.md). Its options are
generated from :class:`CalibrateOptions`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from pydantic import BaseModel, ConfigDict, Field

from clearsight.cli.generate import ConfigCommand, command_group
from clearsight.validate import InputError


class CalibrateOptions(BaseModel):
    """How ``clearsight guard calibrate`` fits the threshold."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str = Field(description="The model to guard, as named in the run.")
    split_seed: int = Field(0, description="Seed of the scene split.")
    calibration_share: float = Field(0.5, description="Share of the scenes to calibrate on.")
    scale: str = Field(
        "estimate",
        description="estimate: the threshold as the guard's estimate reads M's crossing on the "
        "calibration scenes (bundled scenes); true: the crossing V* itself.",
    )
    out: Path | None = Field(None, description="Calibration file (default RUN/guard-<model>.json).")


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
    lambda: CalibrateOptions,
    guard_calibrate,
    what="calibrate options",
    files=False,
)

app = typer.Typer(
    cls=command_group(CALIBRATE),
    help="The visibility guard: abstain when the image is too murky (docs/guard.md).",
    no_args_is_help=True,
)
