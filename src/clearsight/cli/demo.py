"""``clearsight demo``: the whole visibility-sweep method on this machine's embedded models in a
few minutes, with the demo's fixed :class:`~clearsight.sweep.config.SweepConfig`.

It runs in two stages into one run directory: first a small design (:func:`quick_config`: the
observer, the blind control and the detector perceiver on a few scenes, fog and water at the
levels where the models cross, the clean images) whose complete report is written within about
a minute, its path and headline printed; then the full demo (:func:`demo_config`), which reuses
the first stage's records (the small design asks the very questions of the full one, so its
items have the same keys and the store resumes) and rewrites the report."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from clearsight import sweep as protocol
from clearsight.cli.generate import ConfigCommand, RunDir, option_model
from clearsight.cli.sweep import BLIND_CONTROL, run_and_report, without_lone_shuffle

if TYPE_CHECKING:
    from clearsight.cli.execution import ExecutionOptions
    from clearsight.cli.options import DemoOptions
    from clearsight.driver import RunSummary
    from clearsight.sweep import SweepConfig

#: The perceiver modes (a real COCO detector, with and without SmolLM2 reading its evidence).
PERCEIVERS = ("perceiver:llm", "perceiver:detector")

#: The first stage's models (those this machine runs), the wordings the blind control is asked
#: in it (it answers without the image, and does not verbalize a parseable confidence), its
#: scenes (three small photos, of three different originals, whose targets stand 5-15 m away;
#: where the full demo lacks them, its first scenes) and its levels, which bracket where the
#: targets at those distances fade out for the observer and the detector in fog and water.
QUICK_MODELS = ("observer", BLIND_CONTROL, "perceiver:detector")
QUICK_BLIND_WORDINGS = ("mcq.reason", "mcq.generic")
QUICK_SCENES = ("darknet-dog-truck", "darknet-giraffe-zebra", "darknet-person-horse")
QUICK_LEVELS_M = (125.0, 62.5, 31.25, 15.625, 7.8125, 3.90625)
QUICK_CONDITIONS = ("clean", "fog", "water")


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


#: The scenes the LLM-reading perceiver answers: the first seven of the bundled set, seven
#: different photos (it runs the detector and then SmolLM2 on every image, about a second a
#: question on a CPU core, the demo's largest share of time).
LLM_PERCEIVER_SCENES = 7


def demo_config() -> SweepConfig:
    """The demo's sweep: every bundled scene, both arms and all controls on the paper's main
    task (t2) with three of the five wordings, minutes on two cores (`clearsight sweep` runs it
    all); the perceivers (a tenth of a second per question, not microseconds) answer the main
    wording on the clean images, the fog arm and the blank control only, the LLM-reading one
    on the first :data:`LLM_PERCEIVER_SCENES` scenes."""
    models = demo_models()
    return protocol.SweepConfig(
        models=models,
        tasks=("identify",),
        wordings=("mcq.reason", "mcq.generic", "verbal.plain"),
        model_wordings={m: ("mcq.reason",) for m in models if m in PERCEIVERS},
        model_conditions={m: ("clean", "fog", "blank") for m in models if m in PERCEIVERS},
        model_scenes={m: LLM_PERCEIVER_SCENES for m in models if m == "perceiver:llm"},
    )


def quick_config(full: SweepConfig) -> SweepConfig:
    """The first stage of the demo ``full``: its :data:`QUICK_MODELS` on its first
    :data:`QUICK_SCENES`, the clean images, fog and water at :data:`QUICK_LEVELS_M` (all of
    ``full``'s levels where it has none of them);
    the category prior stays the full demo's scenes' (``prior_scene_ids``), so every item is
    one of the full demo's, under the same key."""
    scenes = tuple(r.id for r in protocol.scene_refs(full))
    models = tuple(m for m in full.models if m in QUICK_MODELS)
    shown = set(QUICK_CONDITIONS)
    wordings = {m: w for m, w in full.model_wordings.items() if m in models}
    if BLIND_CONTROL in models:
        wordings[BLIND_CONTROL] = tuple(w for w in full.wordings if w in QUICK_BLIND_WORDINGS)
    first = [s for s in QUICK_SCENES if s in scenes]
    first += [s for s in scenes if s not in first][: len(QUICK_SCENES) - len(first)]
    data = full.model_dump(mode="json") | {
        "scene_ids": [s for s in scenes if s in first],
        "prior_scene_ids": scenes,
        "models": models,
        "levels_m": [v for v in full.levels_m if v in QUICK_LEVELS_M] or full.levels_m,
        "arms": [a for a in full.arms if a in shown],
        "controls": [c for c in full.controls if c in shown],
        "model_wordings": wordings,
        "model_conditions": {
            m: [c for c in conds if c in shown]
            for m, conds in full.model_conditions.items()
            if m in models
        },
        "model_scenes": {m: n for m, n in full.model_scenes.items() if m in models},
    }
    return protocol.SweepConfig.model_validate(data)


def demo(options: DemoOptions, out: RunDir = Path("runs/demo")) -> None:
    """The whole visibility-sweep method in a few minutes, then its report.

    First a small design (the observer, the blind control and the detector perceiver on a few
    scenes, fog and water where the models cross) whose report comes within about a minute:
    its path and headline are printed. Then every bundled scene under fog, water and the
    controls, asked of the reference observer, the blind control and both perceiver modes (the
    LLM-reading one on the first seven scenes), reusing the first stage's records, and the
    report rewritten. A rerun resumes or just
    reports."""
    from clearsight.cli.execution import ExecutionOptions, finished

    scenes, quick = options.scenes, options.quick
    scene_ids = None if scenes is None else tuple(s.strip() for s in scenes.split(",") if s.strip())
    config = without_lone_shuffle(_only_scenes(demo_config(), scene_ids))
    _say_what_runs(config)
    _prepare_embedded(config)
    execution = ExecutionOptions(executor="process", workers=options.workers, fresh=options.fresh)
    if not options.fresh and _stored_config(out) == config.model_dump(mode="json"):
        typer.echo(f"demo: {out} holds the full demo: resuming it")
        if quick:
            _print_headline(out)
            return
    else:
        first = _first_stage(quick_config(config), out, execution)
        if quick:
            finished(first)
            return
        typer.echo(f"demo: first stage: {first.describe()}")
        execution = execution.model_copy(update={"fresh": False, "allow_mismatch": True})
        typer.echo("demo: the full demo now (the first stage's records are reused)")
    finished(run_and_report(config, out, execution))


def _prepare_embedded(config: SweepConfig) -> None:
    """Convert SmolLM2's GGUF now where a model of ``config`` needs it and it is not converted
    yet (about a minute, once: ``make embedded`` / ``clearsight fetch --steps embedded`` do it
    ahead), so the first stage's minute is the sweep's own."""
    from clearsight.models.embedded import smollm2_dir

    if any(m == BLIND_CONTROL or m in PERCEIVERS for m in config.models):
        smollm2_dir()


def _first_stage(config: SweepConfig, out: Path, execution: ExecutionOptions) -> RunSummary:
    """Run the demo's first stage ``config`` into ``out``, write its report and print the
    report's path and its headline (summary.md's ``## Headline`` section)."""
    typer.echo(
        f"demo: first stage: {len(config.scene_ids or ())} scenes, {' and '.join(config.arms)} at "
        f"{', '.join(f'{v:g}' for v in config.levels_m)} m, models: {', '.join(config.models)}"
    )
    # in this process: its few items cost less than loading the models in every worker
    serial = execution.model_copy(update={"executor": "serial", "workers": 1})
    summary = serial.start(protocol.run_sweep, config, out)
    _print_headline(out)
    return summary


def _print_headline(out: Path) -> None:
    """Write the report of the run in ``out`` (without the examples' thumbnails, seconds
    faster) and print its headline (summary.md's ``## Headline`` section) and its path."""
    from clearsight.pages.output import markdown_section
    from clearsight.report import build_report

    paths = build_report(out, thumbnails=False)
    typer.echo(markdown_section(paths.summary_md.read_text(encoding="utf-8"), "Headline"))
    typer.echo(f"report: {paths.html}")


def _stored_config(out: Path) -> object:
    """The configuration the run in ``out`` holds (None where there is no run yet)."""
    from clearsight.store import DB_NAME, RunStore

    if not (out / DB_NAME).is_file():
        return None
    with RunStore.open(out, read_only=True) as store:
        return store.manifest().get("config")


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


DEMO = ConfigCommand("demo", option_model("DemoOptions"), demo, what="demo options", files=False)
