"""The visibility sweep's configuration: scenes, arms, levels, controls, tasks, wordings and
models of a run, validated once (loaded from YAML by :func:`clearsight.config.load_config`)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any, ClassVar, Literal, cast

from pydantic import (
    ConfigDict,
    Field,
    JsonValue,
    PositiveInt,
    field_validator,
    model_validator,
)

from clearsight.physics import (
    DEFAULT_WAVELENGTHS_NM,
    SWEEP_LEVELS_M,
    WATER_TABLES,
)
from clearsight.provenance import (
    RunConfig,
    named_once,
    refuse_bad_subsets,
    refuse_unknown_models,
)
from clearsight.sweep.conditions import (
    Arm,
    check_turbid_water,
    check_water_table,
    corruptions_field,
)
from clearsight.sweep.references.observer import ObserverConfig
from clearsight.validate import InputError

Control = Literal["clean", "blank", "shuffled", "imagenet_c"]
Wording = Literal[
    "mcq.reason", "mcq.generic", "mcq.none", "verbal.plain", "verbal.percent", "verbal.scale"
]
#: The paper's five wordings (the default); ``mcq.none``, the letter read-out without an abstain
#: option, is asked only where a config names it.
ALL_WORDINGS: tuple[Wording, ...] = (
    "mcq.reason",
    "mcq.generic",
    "verbal.plain",
    "verbal.percent",
    "verbal.scale",
)


class SweepConfig(RunConfig):
    """Everything that determines a visibility sweep's records (docs/methods.md §1-3)."""

    added_later: ClassVar[tuple[str, ...]] = (
        "wording_scenes",
        "turbid_absorption_per_m",
        "turbid_scattering_per_m",
        "prior_scene_ids",
        "model_scenes",
        "w_accuracy",
        "imagenet_c_corruptions",
        "conformal_alpha",
    )

    model_config = ConfigDict(frozen=True, extra="forbid")

    scenes: Literal["bundled", "coco"] = Field(
        "bundled", description="Scene source: the bundled photos or a local COCO copy."
    )
    scene_ids: tuple[str, ...] | None = Field(
        None, description="Bundled scene ids to use (default: every scene whose photo is present)."
    )
    prior_scene_ids: tuple[str, ...] | None = Field(
        None,
        description="Bundled scene ids whose targets make the category prior the distractors "
        "follow (default: the run's scenes); they must include the run's scenes. A run on a few "
        "of them then asks the very questions (and keys) a run on all of them asks.",
    )
    coco_annotations: Path | None = Field(
        None, description="COCO instances JSON (scenes='coco'), e.g. instances_val2017.json."
    )
    coco_images: Path | None = Field(None, description="Folder of the COCO images (scenes='coco').")
    coco_n: int = Field(1000, ge=1, description="Number of COCO scenes drawn (frequency-balanced).")
    coco_depth_model: str = Field(
        "depth-anything/Depth-Anything-V2-Metric-Outdoor-Small-hf",
        description="Depth of COCO scenes: a Depth Anything V2 metric model (local path or "
        "Hugging Face cache; the default's size, Small, is clearsight's choice: the paper names "
        "none), or 'assumed:<metres>' for a stated constant depth.",
    )
    all_targets: bool = Field(
        True, description="Ask about every annotated target of a scene (False: the first only)."
    )
    arms: tuple[Arm, ...] = Field(
        ("fog", "water"),
        description="Physical degradation arms: fog, pure water ('water') and turbid water "
        "('turbid', which needs turbid_absorption_per_m and turbid_scattering_per_m).",
    )
    levels_m: tuple[float, ...] = Field(
        SWEEP_LEVELS_M, description="Visibility levels in metres, clearest first."
    )
    controls: tuple[Control, ...] = Field(
        ("clean", "blank", "shuffled", "imagenet_c"), description="Control conditions."
    )
    imagenet_c_severities: tuple[int, ...] = Field(
        (1, 2, 3, 4, 5), description="ImageNet-C severities of the nominal control."
    )
    imagenet_c_corruptions: tuple[str, ...] = Field(
        ("fog",),
        description="ImageNet-C corruptions of the nominal control, by the imagecorruptions "
        "package's names (gaussian_noise, ..., fog, ..., saturate) or groups: 'common' (the "
        "benchmark's 15), 'validation' (its 4 others), 'all'. Default the paper's fog.",
    )
    tasks: tuple[Literal["identify", "verify"], ...] = Field(
        ("identify", "verify"), description="t2 identification and t3 verification."
    )
    wordings: tuple[Wording, ...] = Field(
        ALL_WORDINGS,
        description="Prompt variants: letter read-out with the reason-naming (mcq.reason) or "
        "generic (mcq.generic) abstain option or with none (mcq.none: accuracy and internal "
        "confidence without an abstain option; not in the paper's design, so not a default), "
        "and three verbalized-confidence wordings (each with the reason-naming option).",
    )
    distractors: Literal["auto", "exchangeable", "proportional"] = Field(
        "auto",
        description="How distractors follow the category prior: 'exchangeable' makes guessing "
        "from the prior score exactly chance (docs/methods.md §3) but exists only when no category "
        "exceeds 1/4 of the targets; 'auto' uses it where it exists, else 'proportional'.",
    )
    models: tuple[str, ...] = Field(("observer",), description="Backends by name.")
    model_options: dict[str, dict[str, JsonValue]] = Field(
        default_factory=dict, description="Options per model name, passed to its backend."
    )
    model_wordings: dict[str, tuple[Wording, ...]] = Field(
        default_factory=dict,
        description="Per model name, the subset of `wordings` it is asked (default: all of "
        "them), so a costly model can skip the generated (verbalized) wordings.",
    )
    model_conditions: dict[str, tuple[Arm | Control, ...]] = Field(
        default_factory=dict,
        description="Per model name, the conditions it is shown, by arm or control name "
        "(default: every arm and control of the run), so a costly model can skip some.",
    )
    wording_scenes: dict[Wording, PositiveInt] = Field(
        default_factory=dict,
        description="Per wording, ask it on the first N scenes only (in the scene set's order; "
        "the paper asked its three verbalized wordings on the first 300 of 1000 images, "
        "Table VI); default: every scene.",
    )
    model_scenes: dict[str, PositiveInt] = Field(
        default_factory=dict,
        description="Per model name, ask it on the first N scenes only (in the scene set's "
        "order; the paper ran two of its five models on image subsets); default: every scene.",
    )
    w_accuracy: Literal["main", "own"] = Field(
        "main",
        description="The accuracy crossing each blind-spot width W = log10(V*_acc / V*_aware) "
        "uses: 'main' (clearsight's reading of the paper, which does not say) one per model, "
        "task and arm, that of the model's "
        "main wording (mcq.reason first); 'own' each awareness signal's own wording's (the "
        "verbalized confidence's W with the verbal replies' accuracy, the generic abstain "
        "option's with that wording's). An analysis choice: it changes no record (the manifest "
        "records it as its own entry; a run stored before it resumes and reads 'main').",
    )
    conformal_alpha: float = Field(
        0.05,
        gt=0,
        lt=1,
        description="The target risk alpha of the report's split-conformal abstention "
        "threshold: fitted on the clean images' answers so that at most this share of "
        "exchangeable answers is given and wrong, then applied at every visibility level to "
        "show where the clean guarantee stops holding. An analysis choice: it changes no "
        "record (left out of a stored configuration at its default).",
    )
    imagenet_c_plasma: Literal["independent", "common"] = Field(
        "independent",
        description="ImageNet-C fog's plasma fractal: 'independent' (the benchmark's, each "
        "image and severity drawn on its own) seeds a draw per scene and severity from the "
        "item; 'common' shares one draw per scene across the severities, as runs made before "
        "the choice did: to resume such a run that shows ImageNet-C images, give 'common' "
        "with --allow-mismatch (its stored configuration lacks the field; every key stays).",
    )
    observer: ObserverConfig = Field(
        default_factory=ObserverConfig, description="The reference observer's psychometrics."
    )
    seed: int = Field(0, description="Run seed: option orders, shuffled pairing, plasma.")
    airlight: float = Field(0.8, ge=0, le=1, description="Fog veiling light (linear).")
    wavelengths_nm: tuple[float, float, float] = Field(
        DEFAULT_WAVELENGTHS_NM, description="Underwater channel wavelengths R, G, B."
    )
    water_table: str = Field("pope_fry_1997", description="Pure-water absorption table.")
    veil: Literal["absorption_limited", "grey"] = Field(
        "absorption_limited", description="Underwater veiling light."
    )
    turbid_absorption_per_m: tuple[float, float, float] | None = Field(
        None,
        description="Turbid arm: the water's absorption coefficients a (1/m) at the R, G, B "
        "channel wavelengths (e.g. of a Jerlov water type); only their ratios to the "
        "scattering and to each other matter (clearsight.physics.turbid_coefficients).",
    )
    turbid_scattering_per_m: tuple[float, float, float] | None = Field(
        None, description="Turbid arm: the water's scattering coefficients b (1/m), R, G, B."
    )
    box_thickness_px: int = Field(8, ge=1, description="Red box thickness in pixels.")
    max_new_tokens: int = Field(24, ge=1, description="Generation budget of verbalized replies.")

    @field_validator("levels_m")
    @classmethod
    def _levels_decrease(cls, v: tuple[float, ...]) -> tuple[float, ...]:
        if not v or any(x <= 0 for x in v) or any(b >= a for a, b in itertools.pairwise(v)):
            raise ValueError("levels_m must be positive and strictly decreasing (clearest first)")
        return v

    @field_validator("water_table")
    @classmethod
    def _known_table(cls, v: str) -> str:
        if v not in WATER_TABLES:
            raise ValueError(f"unknown water table {v!r}; known: {WATER_TABLES}")
        return v

    @field_validator("imagenet_c_corruptions", mode="before")
    @classmethod
    def _corruptions(cls, v: Any) -> tuple[str, ...]:
        return corruptions_field(v)

    @field_validator("imagenet_c_severities")
    @classmethod
    def _severities(cls, v: tuple[int, ...]) -> tuple[int, ...]:
        if not all(1 <= s <= 5 for s in v) or len(set(v)) != len(v):
            raise ValueError("must be distinct severities 1..5")
        return v

    @model_validator(mode="after")
    def _wavelengths_in_table(self) -> SweepConfig:
        """The water table must cover every channel wavelength (it is never extrapolated)."""
        if self.water_table in WATER_TABLES:  # else its own check has said so
            try:
                check_water_table(self.wavelengths_nm, self.water_table)
            except InputError as exc:
                raise ValueError(str(exc)) from None
        return self

    @field_validator("scene_ids")
    @classmethod
    def _scenes_once(cls, v: tuple[str, ...] | None) -> tuple[str, ...] | None:
        named_once(v, "scene_ids")
        return v

    @field_validator("prior_scene_ids")
    @classmethod
    def _prior_scenes_once(cls, v: tuple[str, ...] | None) -> tuple[str, ...] | None:
        named_once(v, "prior_scene_ids")
        if v is not None and not v:
            raise ValueError("prior_scene_ids must name at least one scene (or be left out)")
        return v

    @field_validator("models")
    @classmethod
    def _known_models(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        from clearsight.models import split_model_spec

        if not v:
            raise ValueError("at least one model is needed")
        named_once(v, "models")
        for spec in v:
            try:
                split_model_spec(spec)
            except InputError as exc:
                raise ValueError(str(exc)) from None
        return v

    @model_validator(mode="after")
    def _model_wordings_known(self) -> SweepConfig:
        refuse_unknown_models(self.model_options, self.models, "model_options")
        refuse_bad_subsets(self.model_wordings, self.models, "model_wordings", self.wordings)
        refuse_unknown_models(self.model_scenes, self.models, "model_scenes")
        unknown = sorted(set(self.wording_scenes) - set(self.wordings))
        if unknown:
            raise ValueError(f"wording_scenes names {unknown}, not in wordings")
        refuse_bad_subsets(
            self.model_conditions,
            self.models,
            "model_conditions",
            (*self.arms, *self.controls),
            "the arms and controls",
        )
        return self

    @model_validator(mode="after")
    def _turbid_water_given(self) -> SweepConfig:
        """The turbid arm needs the water's coefficients, and they mean nothing without it."""
        try:
            check_turbid_water(
                self.arms, self.turbid_absorption_per_m, self.turbid_scattering_per_m
            )
        except InputError as exc:
            raise ValueError(str(exc)) from None
        return self

    def options_of(self, model: str) -> dict[str, JsonValue]:
        """The options ``model`` runs with: its ``model_options`` over its preset's
        (:func:`clearsight.models.resolve.resolve_options`; the reference observer's over
        ``observer``, its psychometrics)."""
        from clearsight.models.resolve import resolve_options

        options = dict(self.model_options.get(model, {}))
        if model == "observer":
            options = {**self.observer.model_dump(), **options}
        return resolve_options(model, options)

    def wordings_of(self, model: str) -> tuple[Wording, ...]:
        """The wordings asked of ``model``."""
        return self.model_wordings.get(model, self.wordings)

    def asks_on_scene(self, wording: str, index: int) -> bool:
        """Whether ``wording`` is asked on the scene at ``index`` (0-based) of the scene set."""
        limit = self.wording_scenes.get(cast(Wording, wording))
        return limit is None or index < limit

    def unused_later_fields(self) -> frozenset[str]:
        """``imagenet_c_plasma`` and ``imagenet_c_corruptions`` where the run shows no
        ImageNet-C image (its records do not depend on them, and a run stored before the
        choices resumes)."""
        shows = "imagenet_c" in self.controls and bool(self.imagenet_c_severities)
        return frozenset() if shows else frozenset({"imagenet_c_plasma", "imagenet_c_corruptions"})

    def model_on_scene(self, model: str, index: int) -> bool:
        """Whether ``model`` is asked on the scene at ``index`` (0-based) of the scene set."""
        limit = self.model_scenes.get(model)
        return limit is None or index < limit

    def conditions_of(self, model: str) -> tuple[str, ...]:
        """The arms and controls shown to ``model``."""
        return self.model_conditions.get(model, (*self.arms, *self.controls))
