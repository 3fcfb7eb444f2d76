"""``clearsight plan CONFIG``: a sweep's dry run — what it will ask of each model, and cost.

The sweep is planned as ``clearsight sweep run`` plans it (nothing rendered, no model loaded,
nothing written) and its budget printed per model and in total
(:mod:`clearsight.sweep.budget`): items, units, prompt passes, generations, distinct images,
vision encodes, the store's size and, from ``--rate`` (items per second, measured on a first
run or a benchmark), the model time.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from clearsight.sweep.budget import ModelBudget

#: The printed columns: (heading, field).
COLUMNS = (
    ("items", "items"),
    ("units", "units"),
    ("prompt passes", "prompt_passes"),
    ("generations", "generations"),
    ("distinct images", "distinct_images"),
    ("vision encodes", "vision_encodes"),
    ("store", "store_bytes"),
    ("model time", "model_s"),
)


def plan(
    config: Annotated[Path, typer.Argument(help="A sweep configuration file (YAML).")],
    rate: Annotated[
        float | None,
        typer.Option(
            "--rate", help="Model items per second (from a first run or a benchmark), for time."
        ),
    ] = None,
    assignments: Annotated[
        list[str] | None,
        typer.Option("--set", help="FIELD=VALUE over the file (repeatable; a dotted FIELD)."),
    ] = None,
) -> None:
    """Plan a sweep without running it and print what it will cost, per model and in total.

    Vision encodes count one per distinct image on hf: (the requests that show one image share
    its encode; Gemma 3, Mllama, PaliGemma and Qwen3.5 encode per item), one per item on other
    backends, none for the reference observer."""
    import time

    from clearsight.config import load_config, parse_assignment
    from clearsight.sweep.budget import budget, totals
    from clearsight.sweep.config import SweepConfig
    from clearsight.sweep.plan import plan_sweep
    from clearsight.validate import InputError

    if rate is not None and not rate > 0:
        raise InputError(f"--rate must be a positive number of items per second, got {rate}")
    if not config.is_file():
        raise InputError(f"{config} is not a file")
    started = time.perf_counter()
    sets = [parse_assignment(a) for a in assignments or ()]
    cfg = load_config(config, SweepConfig, None, sets)
    budgets = budget(plan_sweep(cfg), dict.fromkeys(cfg.models, rate) if rate else None)
    for line in table([*budgets, totals(budgets)]):
        typer.echo(line)
    typer.echo(f"planned in {time.perf_counter() - started:.1f} s")


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
