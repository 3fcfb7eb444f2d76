"""``clearsight sweep run``: the visibility sweep, its options generated from
:class:`~clearsight.sweep.config.SweepConfig`, then its report."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from clearsight import sweep as protocol
from clearsight.cli.generate import Alias, ConfigCommand, RunDir, command_group

if TYPE_CHECKING:
    from clearsight.cli.execution import ExecutionOptions
    from clearsight.driver import RunSummary
    from clearsight.sweep import SweepConfig

#: The blind control: a text-only model asked the same questions without the image.
BLIND_CONTROL = "hf:smollm2-135m"


def run(
    config: SweepConfig, execution: ExecutionOptions, out: RunDir = Path("runs/sweep")
) -> RunSummary:
    """Run the visibility sweep, then write its report.

    Resumes an interrupted run; `--executor ray` runs it on Ray (docs/scale.md). Definitions
    of the physics, read-outs and metrics: docs/methods.md (`clearsight docs methods`)."""
    return run_and_report(without_lone_shuffle(config), out, execution)


def run_and_report(config: SweepConfig, out: Path, execution: ExecutionOptions) -> RunSummary:
    """Run the sweep ``config`` into ``out``, then write its report and print its summary."""
    if BLIND_CONTROL in config.models:
        from clearsight.models.embedded import smollm2_dir

        smollm2_dir()  # convert the GGUF once here, not in every worker
    return execution.start(protocol.run_sweep, config, out, report=True)


def without_lone_shuffle(config: SweepConfig) -> SweepConfig:
    """``config`` without its shuffled control when the sweep has one scene (the control shows
    each scene another scene's pixels, so it needs two), said in a note: a one-scene sweep
    runs its other conditions rather than stopping."""
    if "shuffled" not in config.controls or len(protocol.scene_refs(config)) >= 2:
        return config
    typer.secho(
        "note: the shuffled control is skipped: it needs at least 2 scenes, the sweep has 1",
        fg=typer.colors.YELLOW,
        err=True,
    )
    data = config.model_dump(mode="json")
    data["controls"] = [c for c in config.controls if c != "shuffled"]
    data["model_conditions"] = {
        m: [c for c in conds if c != "shuffled"] for m, conds in config.model_conditions.items()
    }
    return protocol.SweepConfig.model_validate(data)


def narrowed_wordings(data: dict[str, object], given: Mapping[str, str]) -> dict[str, object]:
    """``data`` with the ``wording_scenes`` entries of wordings the command line's
    ``wordings`` no longer asks dropped, said in a note (a design narrowed from the command
    line, ``--wordings mcq.reason,mcq.generic`` on a file that limits its verbal wordings);
    ``wording_scenes`` given on the command line too is left as given."""
    if "wordings" not in given or "wording_scenes" in given:
        return data
    scenes = data.get("wording_scenes")
    wordings = data.get("wordings")
    if not isinstance(scenes, Mapping) or not isinstance(wordings, list | tuple):
        return data
    dropped = [w for w in scenes if w not in wordings]
    if not dropped:
        return data
    typer.secho(
        f"note: wording_scenes entries dropped ({', '.join(map(str, dropped))}): "
        f"{given['wordings']} does not ask them",
        fg=typer.colors.YELLOW,
        err=True,
    )
    return data | {"wording_scenes": {w: n for w, n in scenes.items() if w not in dropped}}


#: The documented short names of the sweep's fields (``sweep run`` and ``plan`` take them).
ALIASES = (
    Alias("--model", "models"),
    Alias("--n", "coco_n"),
    Alias("--coco-depth", "coco_depth_model"),
)

RUN = ConfigCommand(
    "run",
    lambda: protocol.SweepConfig,
    run,
    aliases=ALIASES,
    execution={"executor": "process"},
    narrow=narrowed_wordings,
)

app = typer.Typer(
    cls=command_group(RUN, default="run"),
    help="The visibility sweep: physical fog and water on a metric depth map (docs/methods.md "
    "§1-§4). Options without a command run `run`.",
    no_args_is_help=True,
)
