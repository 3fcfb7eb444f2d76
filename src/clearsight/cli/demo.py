"""``clearsight demo``: the whole visibility-sweep method on this machine's embedded models in a
few minutes, with the demo's fixed :class:`~clearsight.sweep.config.SweepConfig`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from clearsight import sweep as protocol
from clearsight.cli.execution import ExecutionOptions, RunDir
from clearsight.cli.sweep import BLIND_CONTROL, run_and_report

if TYPE_CHECKING:
    from clearsight.sweep import SweepConfig

#: The perceiver modes (a real COCO detector, with and without SmolLM2 reading its evidence).
PERCEIVERS = ("perceiver:llm", "perceiver:detector")


def demo_skipped() -> dict[str, str]:
    """The demo's models this machine cannot run, each with what it needs: the blind control
    and both perceiver modes need SmolLM2 (and transformers), the perceivers the detectors."""
    from clearsight.card.parts import missing_model

    why = {m: missing_model(m) for m in (BLIND_CONTROL, *PERCEIVERS)}
    return {m: reason for m, reason in why.items() if reason is not None}


def demo_models() -> tuple[str, ...]:
    """The reference observer plus every embedded model this machine can run: the blind
    control and both perceiver modes where SmolLM2 and the fetched detectors are present."""
    skipped = demo_skipped()
    return ("observer", *(m for m in (BLIND_CONTROL, *PERCEIVERS) if m not in skipped))


def demo_config() -> SweepConfig:
    """The demo's sweep: every bundled scene, both arms and all controls on the paper's main
    task (t2) with three of the five wordings, minutes on two cores (`clearsight sweep` runs it
    all); the perceivers (a tenth of a second per question, not microseconds) answer the main
    wording on the clean images, the fog arm and the blank control only."""
    models = demo_models()
    return protocol.SweepConfig(
        models=models,
        tasks=("identify",),
        wordings=("mcq.reason", "mcq.generic", "verbal.plain"),
        model_wordings={m: ("mcq.reason",) for m in models if m in PERCEIVERS},
        model_conditions={m: ("clean", "fog", "blank") for m in models if m in PERCEIVERS},
    )


def demo(
    out: RunDir = Path("runs/demo"),
    workers: Annotated[int, typer.Option(min=1, help="Worker processes.")] = 2,
    fresh: Annotated[
        bool,
        typer.Option(
            help="Discard OUT's records and start over (needed when the demo's models changed, "
            "e.g. after `make models`)."
        ),
    ] = False,
    scenes: Annotated[
        str | None, typer.Option(help="Comma-separated bundled scene ids (default: all present).")
    ] = None,
) -> None:
    """The whole visibility-sweep method in a few minutes, then its report.

    Every bundled scene under fog, water and the controls, asked of the reference observer,
    the blind control and both perceiver modes, then the report and its summary. A rerun
    resumes or just reports."""
    from clearsight.cli.execution import finished

    scene_ids = None if scenes is None else tuple(s.strip() for s in scenes.split(",") if s.strip())
    config = _only_scenes(demo_config(), scene_ids)
    _say_what_runs(config)
    execution = ExecutionOptions(executor="process", workers=workers, fresh=fresh)
    finished(run_and_report(config, out, execution))


def _only_scenes(config: SweepConfig, scene_ids: tuple[str, ...] | None) -> SweepConfig:
    """``config`` on the bundled scenes ``scene_ids`` only (None: ``config`` as it is)."""
    if scene_ids is None:
        return config
    return protocol.SweepConfig.model_validate(
        config.model_dump(mode="json") | {"scene_ids": scene_ids}
    )


def _say_what_runs(cfg: SweepConfig) -> None:
    """Print the scenes and models the demo runs and those it skips (with what each needs and
    the command that fetches it)."""
    from clearsight.card.parts import FETCH_COMMAND
    from clearsight.scenes.bundled import bundled_scene_ids, bundled_specs, photo_missing

    specs = bundled_specs()
    absent = [s for s in bundled_scene_ids(available_only=False) if photo_missing(specs[s])]
    typer.echo(f"demo: {len(protocol.scene_refs(cfg))} scenes, models: {', '.join(cfg.models)}")
    notes = [f"{m} skipped: {why}" for m, why in demo_skipped().items()]
    if absent and cfg.scene_ids is None:
        notes.append(f"{len(absent)} scenes skipped (photo not fetched): {', '.join(absent)}")
    for note in notes:
        typer.secho(f"note: {note}", fg=typer.colors.YELLOW, err=True)
    if notes:
        typer.secho(
            f"note: `{FETCH_COMMAND}` fetches what is missing, then rerun with --fresh",
            fg=typer.colors.YELLOW,
            err=True,
        )
