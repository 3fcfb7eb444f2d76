"""The option models of the commands that run no protocol's own configuration (``demo``,
``fetch``, ``preview``, ``equivalence``, ``export``, ``push``, ``guard calibrate``, ``probe
judges``, ``probe query-types``): pydantic models whose fields :mod:`clearsight.cli.generate`
makes options of. They live here, imported when their command is built
(:func:`~clearsight.cli.generate.option_model`), so that the command line starts without
pydantic (about a tenth of a second of CPU: ``clearsight --help`` starts in under a second)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = [
    "CalibrateOptions",
    "DemoOptions",
    "DrawOptions",
    "EquivalenceOptions",
    "ExportCommandOptions",
    "FetchOptions",
    "JudgesOptions",
    "PreviewOptions",
    "PushOptions",
    "QueryTypesOptions",
]


class DemoOptions(BaseModel):
    """What ``clearsight demo`` runs (the design itself is fixed: :func:`demo_config`)."""

    model_config = ConfigDict(frozen=True, extra="forbid", title="Demo options")

    workers: int = Field(2, ge=1, description="Worker processes.")
    fresh: bool = Field(
        False,
        description="Discard OUT's records and start over (needed when the demo's models "
        "changed, e.g. after `make models`).",
    )
    scenes: str | None = Field(
        None, description="Comma-separated bundled scene ids (default: all present)."
    )
    quick: bool = Field(
        False, description="Stop after the first stage's report (a small design, ~1 min)."
    )


class FetchOptions(BaseModel):
    """What ``clearsight fetch`` fetches."""

    model_config = ConfigDict(frozen=True, extra="forbid", title="What to fetch")

    steps: tuple[str, ...] | None = Field(
        None,
        description="Steps: photos, detectors, embedded (none given: all, unless --dataset, "
        "--model or --depth names what to fetch).",
    )
    dataset: tuple[str, ...] = Field(
        (),
        description="A dataset the papers use, downloaded and verified: a hub snapshot into "
        "$CLEARSIGHT_CACHE/datasets/NAME (mmstar, MathVista, ...), or coco (val2017 into "
        "$CLEARSIGHT_CACHE/coco).",
    )
    model: tuple[str, ...] = Field(
        (),
        description="A Hugging Face hub id (or a preset's name, `clearsight models`) to download "
        "into the Hugging Face cache and verify.",
    )
    depth: bool = Field(
        False,
        description="Download and verify the default depth model "
        "(depth-anything/Depth-Anything-V2-Metric-Outdoor-Small-hf: Small is clearsight's "
        "choice of size, the paper names none).",
    )
    revision: str | None = Field(None, description="Branch, tag or commit of --model (main).")
    split: str | None = Field(
        None,
        description="Another split of each --dataset's repository (e.g. MATH-Vision's "
        "testmini), kept in $CLEARSIGHT_CACHE/datasets/NAME@SPLIT; a run reads it as "
        "--dataset NAME@SPLIT.",
    )
    config: str | None = Field(
        None,
        description="Another config of each --dataset's repository (e.g. MMMU-Pro's "
        "'standard (4 options)'), kept in $CLEARSIGHT_CACHE/datasets/NAME[CONFIG]; a run reads "
        "it as --dataset 'NAME[CONFIG]'.",
    )


class PreviewOptions(BaseModel):
    """What ``clearsight preview`` draws, and where."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    out: Path | None = Field(None, description="PNG to write; default preview-SCENE.png")
    target: int = Field(0, description="Index of the boxed target.")
    seed: int = Field(0, description="Seed of the ImageNet-C plasma.")
    turbid_absorption: str | None = Field(
        None, description="Add a turbid-water row: the water's absorption a (1/m) as R,G,B."
    )
    turbid_scattering: str | None = Field(
        None, description="The turbid water's scattering b (1/m) as R,G,B."
    )
    coco_annotations: Path | None = Field(
        None,
        description="A COCO instances JSON: SCENE is then a COCO scene id (coco-<image id>) of "
        "those the sweep's selection rules choose (Fig. 2 for a COCO scene).",
    )
    coco_images: Path | None = Field(None, description="Folder of the COCO images.")
    coco_depth: str = Field(
        "depth-anything/Depth-Anything-V2-Metric-Outdoor-Small-hf",
        description="Depth of the COCO scene, as a sweep's coco_depth_model: a Depth Anything V2 "
        "metric model (local path or Hugging Face cache) or assumed:<metres>.",
    )


class EquivalenceOptions(BaseModel):
    """How ``clearsight equivalence`` draws its plasma, and where its table goes."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    seed: int = Field(0, description="Run seed of the ImageNet-C plasma.")
    out: Path | None = Field(None, description="Also write the per-scene table as CSV.")
    plasma: Literal["independent", "common"] = Field(
        "independent",
        description="Plasma per scene and severity (independent) or one per scene (common).",
    )
    corruptions: tuple[str, ...] = Field(
        ("fog",),
        description="ImageNet-C corruptions to place, as a sweep's imagenet_c_corruptions: "
        "the imagecorruptions package's names or the groups common, validation, all.",
    )

    @field_validator("corruptions", mode="before")
    @classmethod
    def _corruptions(cls, v: Any) -> tuple[str, ...]:
        """The sweep's own parser (:func:`clearsight.sweep.conditions.corruptions_field`):
        groups expanded, each name once, an unknown name refused."""
        from clearsight.sweep.conditions import corruptions_field

        return corruptions_field(v)


_FORMAT_HELP = (
    "parquet: the details dataset (data/details.parquet, README.md); eval-results: each "
    "model's .eval_results/clearsight-PROTOCOL.yaml; eee: Every Eval Ever records."
)


#: The options both commands take: which model's numbers, how they are bootstrapped, and how
#: many rows of the details' sample carry their image.
_Model = Annotated[
    str | None,
    Field(
        description="Only this model of the run (a one-model run's numbers: their model's name)."
    ),
]
_NBoot = Annotated[int, Field(ge=100, description="Bootstrap draws of every interval.")]
_Seed = Annotated[int, Field(description="Seed of the bootstrap and of the details' sample.")]
_Images = Annotated[
    int, Field(ge=0, description="Rows of the details' sample with the image the model was shown.")
]


class ExportCommandOptions(BaseModel):
    """What ``clearsight export`` writes, and where."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: str = Field(description=_FORMAT_HELP)
    out: Path | None = Field(None, description="Export folder (default: RUN/export).")
    hub: str | None = Field(None, description="The Hub dataset ORG/NAME holding the details.")
    model: _Model = None
    n_boot: _NBoot = 1000
    seed: _Seed = 0
    images: _Images = 64


class PushOptions(BaseModel):
    """Where ``clearsight push`` uploads a run's details and eval results."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    hub: str = Field(description="The Hub dataset ORG/NAME the details go to.")
    pr: bool = Field(False, description="Open the dataset's upload as a PR.")
    model_repo: str | None = Field(
        None, description="The model repository ORG/NAME (default: the one the model names)."
    )
    model: _Model = None
    n_boot: _NBoot = 1000
    seed: _Seed = 0
    images: _Images = 64


class CalibrateOptions(BaseModel):
    """How ``clearsight guard calibrate`` fits the threshold."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str = Field(description="The model to guard, as named in the run.")
    split_seed: int = Field(0, description="Seed of the scene split.")
    calibration_share: float = Field(0.5, description="Share of the scenes to calibrate on.")
    scale: str = Field(
        "estimate",
        description="estimate: the threshold as the guard's estimate reads M's crossing on the "
        "calibration scenes (bundled scenes); true: the crossing V* itself.",
    )
    out: Path | None = Field(None, description="Calibration file (default RUN/guard-<model>.json).")


class JudgesOptions(BaseModel):
    """Which judges ``clearsight probe judges`` compares, and on what."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    a: str = Field("embedding", description="First judge.")
    b: str = Field("llm:hf:smollm2-135m", description="Second judge.")
    limit: int | None = Field(None, description="At most this many replies.")
    human_labels: Path | None = Field(
        None,
        description="JSONL of sensor replies with people's u (docs/probe.md): validate both "
        "judges against the people instead, stored in RUN for the report's Table 5.",
    )


class DrawOptions(BaseModel):
    """What ``clearsight probe draw`` draws: the instances, whose sensor, how many, the seed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    instances: str = Field(
        description="The instances to draw from: a JSONL file of them (what `probe build` "
        "keeps for one sensor) or any source a probe run takes."
    )
    dataset: str | None = Field(None, description="Their loader, as for a probe run.")
    sensor: str = Field(
        description="The sensor whose benchmark these instances are (part of each rank, so "
        "each (sensor, dataset) cell is drawn on its own)."
    )
    per: int = Field(
        100,
        description="Instances per dataset: 100, as the paper's 100-instance draws per dataset; "
        "50 for its human sample of 50 questions per setting (with the same seed, the first 50 "
        "of the 100).",
    )
    seed: int = Field(0, description="The draw's seed.")
    out: Path = Field(description="JSONL file of the drawn instances.")


class QueryTypesOptions(BaseModel):
    """The query-type judge ``clearsight probe query-types`` checks, and the people's labels."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    human_labels: Path = Field(
        description="JSONL of queries with people's query types (docs/probe.md)."
    )
    judge: str = Field("hf:smollm2-135m", description="The query-type judge (any text backend).")
    readout: str = Field(
        "judge", description="judge (the paper's: rationale and JSON label) or scores."
    )
    limit: int | None = Field(None, description="At most this many labels.")
