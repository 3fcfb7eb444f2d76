"""How a protocol takes part in a card run: the card's sizes (:class:`CardConfig`), a part of
the card (:class:`Part`: whether it runs, in what role, why not) and :class:`CardRun`, what a
protocol's face declares to be run by ``clearsight card`` and read by ``clearsight board``.

:class:`CardConfig` holds every size of a card (which scenes, conditions and wordings the sweep
asks, how many problems grounding generates, which questions the probe asks and how often);
each protocol turns the sizes into its own configuration in its :class:`CardRun` (its
``plan`` checks what can run, its ``run`` runs it), so :mod:`clearsight.card` iterates the
registry's card runs and never builds a protocol's configuration itself. The defaults keep a
card of the reference observer or a perceiver to a few minutes on two CPU cores; ``clearsight
card --config card.yaml`` changes any of them (docs/card.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypedDict

from pydantic import BaseModel, ConfigDict, Field, PositiveInt

from clearsight.models.embedded import SMOLLM2_ALIAS
from clearsight.physics import SWEEP_LEVELS_M

if TYPE_CHECKING:
    import pandas as pd

    from clearsight.driver import RunOptions, RunSummary

__all__ = [
    "BLIND_CONTROL",
    "OBSERVER",
    "CardConfig",
    "CardRun",
    "Part",
    "PartJSON",
    "serial",
]

#: The reference observer: limited by contrast only, its W is about 0 (the physical anchor).
OBSERVER = "observer"
#: The blind control: a text-only model asked the same questions without the image.
BLIND_CONTROL = f"hf:{SMOLLM2_ALIAS}"

#: The scenes whose photos ship inside installed packages (scikit-image, matplotlib), so a
#: card means the same on every machine, with or without the fetched darknet photos.
PACKAGE_SCENES: tuple[str, ...] = (
    "skimage-astronaut",
    "skimage-chelsea",
    "skimage-coffee",
    "skimage-camera",
    "skimage-stereo-motorcycle",
    "mpl-grace-hopper",
)
#: Probe questions on those same photos (two per photo where the bundled set has them).
PACKAGE_QUESTIONS: tuple[str, ...] = (
    "bundled/coffee-drink",
    "bundled/coffee-cup-colour",
    "bundled/astronaut-job",
    "bundled/astronaut-suit-colour",
    "bundled/motorcycle-colour",
    "bundled/motorcycle-place",
    "bundled/chelsea-animal",
    "bundled/chelsea-eyes",
    "bundled/hopper-uniform",
    "bundled/camera-device",
)


class CardConfig(BaseModel):
    """Every size of a blind-spot card (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    anchors: tuple[str, ...] = Field(
        (OBSERVER, BLIND_CONTROL),
        description="Models asked the card's sweep questions beside the card's model: the "
        "reference observer and the blind control (an anchor this machine lacks is skipped "
        "with a note).",
    )
    scene_ids: tuple[str, ...] = Field(PACKAGE_SCENES, description="Bundled scenes of the sweep.")
    arms: tuple[Literal["fog", "water"], ...] = Field(("fog", "water"), description="Arms.")
    levels_m: tuple[float, ...] = Field(
        SWEEP_LEVELS_M,
        description="Visibility levels (m), clearest first: the full sweep's eight, 250 m to "
        "1.95 m, halving. With every other level (to 3.9 m) the perceiver's fog W of its "
        "verbalized confidence was undetermined (both crossings below 3.9 m on these close-up "
        "photos); with all eight it is a lower bound.",
    )
    controls: tuple[str, ...] = Field(
        ("clean", "blank"), description="Controls (checked by the sweep's configuration)."
    )
    wordings: tuple[str, ...] = Field(
        ("mcq.reason", "verbal.plain"),
        description="One letter wording (internal confidence, abstain rate) and one "
        "verbalized wording (checked by the sweep's configuration).",
    )
    verbal_scenes: PositiveInt = Field(
        2, description="The verbalized wording is asked on the first N scenes only."
    )
    grounding_problems: int = Field(12, ge=1, description="Bundled grounding problems.")
    grounding_max_new_tokens: PositiveInt = Field(48, description="Trajectory length limit.")
    probe_questions: tuple[str, ...] = Field(
        PACKAGE_QUESTIONS, description="Bundled probe question ids."
    )
    probe_runs: int = Field(3, ge=2, description="Runs R per question (cross-run ECE needs 2).")
    probe_sensor: str = Field(
        "perceiver:detector",
        description="The sensor a text-only card model reasons through (an image model is "
        "the sensor itself and answers directly).",
    )
    probe_strategy: Literal["react", "uot", "bp"] = Field(
        "react", description="The strategy of a text-only card model as the reasoner."
    )
    probe_k: int = Field(3, ge=1, le=50, description="Sensor samples K per query (reasoner).")
    probe_budget: PositiveInt = Field(3, description="Turns T of a reasoner's conversation.")
    probe_max_new_tokens: int = Field(64, ge=8, description="Tokens per reasoner turn.")
    n_boot: int = Field(1000, ge=100, description="Bootstrap draws of every interval.")
    seed: int = Field(0, description="Seed of every protocol and bootstrap.")

    def sweep_models(self, model: str, available: tuple[str, ...]) -> tuple[str, ...]:
        """The card's model first, then the anchors among ``available`` (no repeats)."""
        anchors = [a for a in self.anchors if a in available and a != model]
        return (model, *anchors)


class PartJSON(TypedDict):
    """A :class:`Part` as card.json holds it."""

    name: str
    runs: bool
    role: str
    note: str


@dataclass(frozen=True)
class Part:
    """One part of a card: whether it runs, in what role, and why not when it does not. A
    protocol's own part is named as its face is (its run directory under the card's)."""

    name: str
    runs: bool
    role: str = ""
    note: str = ""

    def to_json(self) -> PartJSON:
        """The part as card.json holds it."""
        return {"name": self.name, "runs": self.runs, "role": self.role, "note": self.note}


def serial(options: RunOptions) -> RunOptions:
    """``options`` with the run in this process (the card's parts other than its sweep: their
    models are loaded once, not once per worker)."""
    return {**options, "executor": "serial", "workers": 1}


@dataclass(frozen=True)
class CardRun:
    """What a protocol's face declares for the card (:attr:`ProtocolFace.card_run
    <clearsight.faces.face.ProtocolFace.card_run>`):

    * ``plan(model, config)``: its parts for the card's ``model``, each with whether it runs
      (checked with the protocol's own configuration and this machine's models) — its own part,
      named as the face, and any others it brings (the sweep's anchors);
    * ``run(model, config, parts, run_dir, options)``: runs its configuration for the card into
      ``run_dir`` (called where its own part runs), its summary returned;
    * ``board(run_dir, model)``: what ``clearsight board`` pairs across cards (None: nothing),
      one row per item the model answered: ``item`` (the item's identity, the model aside),
      ``group`` (the board's row it counts in), ``cluster`` (the bootstrap's cluster) and
      ``correct``, in the order the board shows the groups.
    """

    plan: Callable[[str, CardConfig], list[Part]]
    run: Callable[[str, CardConfig, Sequence[Part], Path, RunOptions], RunSummary]
    board: Callable[[Path, str], pd.DataFrame] | None = None
