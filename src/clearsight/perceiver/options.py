"""The perceiver's options (``model_options`` of a run), validated into one frozen value."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from clearsight.validate import invalid_options

#: Images with a side shorter than this are not given to the detector.
MIN_SIDE_PX: Final = 32


class PerceiverOptions(BaseModel):
    """Options of the ``perceiver`` backend (``model_options`` of a run)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    detector: Literal["nanodet", "centernet"] = Field(
        "centernet",
        description="COCO detector. CenterNet is the better one on the bundled scenes: precision "
        "0.55 / recall 0.84 at 0.3 against NanoDet's 0.42 / 0.81, and 0.98 against 0.93 "
        "accuracy of detector mode on the clean identification questions.",
    )
    score_threshold: float = Field(
        0.3, ge=0.0, lt=1.0, description="Detections scoring at or below this are ignored."
    )
    crop_factor: float = Field(
        2.0,
        ge=1.0,
        le=10.0,
        description="The crop detected besides the whole image: the box enlarged this many "
        "times about its centre (context helps the detector), clipped to the image.",
    )
    min_crop_px: int = Field(
        64, ge=MIN_SIDE_PX, description="Smallest side of that crop in pixels (tiny boxes)."
    )
    box_thickness_px: int = Field(
        8,
        ge=1,
        description="Band thickness of the red box as drawn; bands up to twice this are "
        "accepted, and a solid red strip thicker than it is not taken for a box.",
    )
    erase_box: bool = Field(
        True, description="Paint the red band over before detection (nearest non-band pixels)."
    )
    llm: str = Field(
        "hf:smollm2-135m",
        description="The text LLM of LLM mode, as a model spec (not loaded in detector mode).",
    )
    llm_options: dict[str, JsonValue] = Field(
        default_factory=dict, description="Options passed to the LLM's backend."
    )
    readout: Literal["cloze", "letter"] = Field(
        "cloze",
        description="How LLM mode scores lettered options: 'cloze' scores, per option, the LLM's "
        "probability of a sentence naming it in answer to the question in its own words; "
        "'letter' asks the question verbatim and takes the LLM's next-token probabilities of "
        "the letters (SmolLM2-135M then answers 'A' whatever the evidence).",
    )
    detector_threads: int = Field(
        0,
        ge=0,
        description="onnxruntime threads of the detector (0: OMP_NUM_THREADS where set, as in "
        "a pool worker, else one per core).",
    )


def parse_options(options: Mapping[str, JsonValue]) -> PerceiverOptions:
    """Validate options; an unknown or bad one is an InputError naming it."""
    try:
        return PerceiverOptions(**dict(options))
    except ValidationError as exc:
        raise invalid_options(exc, "perceiver options") from exc
