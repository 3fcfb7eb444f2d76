"""The blind-spot card's sizes, in one place: a compact version of the three protocols.

:class:`CardConfig` holds every size of a card (which scenes, conditions and wordings the sweep
asks, how many problems grounding generates, which questions the probe asks and how often) and
turns them into the three protocols' own configurations for one model
(:meth:`CardConfig.sweep`, :meth:`CardConfig.grounding`, :meth:`CardConfig.probe`). The
defaults keep a card of the reference observer or a perceiver to a few minutes on two CPU
cores; ``clearsight card --config card.yaml`` changes any of them (docs/card.md).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveInt

from clearsight.grounding import GroundingConfig
from clearsight.models.embedded import SMOLLM2_ALIAS
from clearsight.physics import SWEEP_LEVELS_M
from clearsight.probe.config import ProbeConfig
from clearsight.sweep.config import Control, SweepConfig, Wording

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
    controls: tuple[Control, ...] = Field(("clean", "blank"), description="Controls.")
    wordings: tuple[Wording, ...] = Field(
        ("mcq.reason", "verbal.plain"),
        description="One letter wording (internal confidence, abstain rate) and one "
        "verbalized wording.",
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

    def sweep(self, models: tuple[str, ...]) -> SweepConfig:
        """The card's sweep: its scenes x arms (at ``levels_m``) x controls, t2 identification,
        both wordings (the verbalized one on the first ``verbal_scenes`` scenes)."""
        verbal = {w: self.verbal_scenes for w in self.wordings if w.startswith("verbal.")}
        return SweepConfig(
            scene_ids=self.scene_ids,
            arms=self.arms,
            levels_m=self.levels_m,
            controls=self.controls,
            tasks=("identify",),
            wordings=self.wordings,
            wording_scenes=verbal,
            models=models,
            seed=self.seed,
        )

    def grounding(self, model: str) -> GroundingConfig:
        """Trajectory grounding of ``model`` on bundled problems, TGS-Bench pairs from the
        rule edits only (no generator model), without variation and hesitation."""
        return GroundingConfig(
            model=model,
            model_options={},  # the backend's own defaults (not every backend takes batch_size)
            generator=None,
            n_problems=self.grounding_problems,
            max_new_tokens=self.grounding_max_new_tokens,
            variation=False,
            hesitation=False,
            n_boot=self.n_boot,
            seed=self.seed,
        )

    def probe(self, model: str, sensor: bool) -> ProbeConfig:
        """The probe with ``model`` as the sensor answering directly (``sensor``), or as the
        text-only reasoner asking :attr:`probe_sensor`."""
        common = {
            "instance_ids": self.probe_questions,
            "runs": self.probe_runs,
            "seed": self.seed,
            "judge": "exact",
        }
        if sensor:
            return ProbeConfig(sensor=model, strategies=("direct",), k=1, **common)
        return ProbeConfig(
            sensor=self.probe_sensor,
            reasoners=(model,),
            strategies=(self.probe_strategy,),
            k=self.probe_k,
            budget=self.probe_budget,
            max_new_tokens=self.probe_max_new_tokens,
            **common,
        )
