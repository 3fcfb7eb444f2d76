"""``clearsight plan CONFIG``: a sweep's dry run — what it will ask of each model, and cost.

The sweep is planned as ``clearsight sweep run`` plans it (nothing rendered, no model loaded,
nothing written) and its budget printed per model and in total
(:mod:`clearsight.sweep.budget`): items, units, prompt passes, generations, distinct images,
vision encodes, the store's size and, from ``--rate`` (items per second, measured on a first
run or a benchmark), the model time. It takes the options ``sweep`` takes (one generated set,
:data:`~clearsight.cli.sweep.ALIASES` included), and plans a COCO design before anything is
downloaded: without its annotation file, on ``coco_n`` stand-in scenes of one target each
(:func:`~clearsight.sweep.scenes.stand_in_refs`); without its depth model, with depth assumed.
Either is said in a note.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from clearsight.cli.generate import ConfigCommand
from clearsight.cli.sweep import ALIASES, narrowed_wordings

if TYPE_CHECKING:
    from clearsight.sweep import SweepConfig
    from clearsight.sweep.budget import ModelBudget
    from clearsight.sweep.specs import SceneRef

#: The printed columns: (heading, field).
COLUMNS = (
    ("items", "items"),
    ("units", "units"),
    ("prompt passes", "prompt_passes"),
    ("generations", "generations"),
    ("distinct images", "distinct_images"),
    ("vision encodes", "vision_encodes"),
    ("encodes saved", "encodes_saved"),
    ("store", "store_bytes"),
    ("model time", "model_s"),
)

#: The depth a plan assumes where the design's depth model is not fetched (counts do not
#: depend on depth).
ASSUMED_DEPTH_M = 40
ASSUMED_DEPTH = f"assumed:{ASSUMED_DEPTH_M}"


def plan(
    config: SweepConfig,
    rate: Annotated[
        float | None,
        typer.Option(
            "--rate", help="Model items per second (from a first run or a benchmark), for time."
        ),
    ] = None,
) -> None:
    """Plan a sweep without running it and print what it will cost, per model and in total.

    Vision encodes are counted as the backend will do them: on hf: one per distinct image where
    the model's family shares an image's encode among the requests that show it (read from its
    config.json, or its preset), one per item where it never does (Gemma 3, Mllama, PaliGemma,
    Qwen3.5), none for a text-only model; one per item on other backends; none for the
    reference observer. "encodes saved" is what sharing saves. A COCO design plans without its
    files: stand-in scenes where the annotation file is missing, depth assumed where the depth
    model is."""
    import time

    from clearsight.sweep.budget import budget, totals
    from clearsight.sweep.plan import plan_sweep
    from clearsight.validate import InputError

    if rate is not None and not rate > 0:
        raise InputError(f"--rate must be a positive number of items per second, got {rate}")
    started = time.perf_counter()
    config, refs = _without_assets(config)
    budgets = budget(plan_sweep(config, refs), dict.fromkeys(config.models, rate) if rate else None)
    for b in budgets:
        if b.encoding is None:
            _note(
                f"{b.model}: no config.json found locally and no preset names its family; "
                "vision encodes counted as shared (as most families do)"
            )
    for line in table([*budgets, totals(budgets)]):
        typer.echo(line)
    typer.echo(f"planned in {time.perf_counter() - started:.1f} s")


def _without_assets(config: SweepConfig) -> tuple[SweepConfig, list[SceneRef] | None]:
    """``config`` with depth assumed where its depth model is not fetched, and stand-in scenes
    where its COCO annotation file is missing (None: its own scenes), each said in a note."""
    from clearsight.sweep.scenes import require_depth_model, stand_in_refs
    from clearsight.validate import InputError

    if config.scenes != "coco":
        return config, None
    try:
        require_depth_model(config.coco_depth_model)
    except InputError:
        _note(
            f"the depth model {config.coco_depth_model} is not fetched: depth {ASSUMED_DEPTH} "
            f"(every pixel at {ASSUMED_DEPTH_M} m; the counts do not depend on depth)"
        )
        config = config.model_copy(update={"coco_depth_model": ASSUMED_DEPTH})
    annotations = config.coco_annotations
    if annotations is not None and annotations.is_file():
        return config, None
    _note(
        f"no COCO annotation file at {annotations}: planned on {config.coco_n} stand-in scenes "
        "of one target each (coco_n; the counts a real selection of as many images gives)"
    )
    return config, stand_in_refs(config)


def _note(text: str) -> None:
    typer.secho(f"note: {text}", fg=typer.colors.YELLOW, err=True)


def table(budgets: list[ModelBudget]) -> list[str]:
    """The budgets as aligned text lines, one per model and the total last."""
    rows = [["model", *(h for h, _ in COLUMNS)]]
    for b in budgets:
        values = b.as_dict()
        rows.append([b.model, *(_shown(f, values[f]) for _, f in COLUMNS)])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in rows
    ]


def _shown(field: str, value: object) -> str:
    if value is None:
        return "-"
    if field == "store_bytes":
        return f"{float(value) / 1e9:.2f} GB"  # type: ignore[arg-type]
    if field == "model_s":
        hours = float(value) / 3600  # type: ignore[arg-type]
        return f"{hours:.1f} h"
    return f"{value:,}"


def _sweep_config() -> type[SweepConfig]:
    from clearsight.sweep import SweepConfig

    return SweepConfig


#: ``plan``, generated as ``sweep run`` is (the same fields and aliases), its design file the
#: positional CONFIG.
PLAN = ConfigCommand(
    "plan", _sweep_config, plan, aliases=ALIASES, narrow=narrowed_wordings, file_argument=True
)
