"""The ``hf`` backend's options, validated without importing torch or transformers (a run's
configuration is checked before anything loads)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from clearsight.validate import invalid_options


class HfOptions(BaseModel):
    """Options of the ``hf`` backend (``model_options`` of a run)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    device: Literal["auto", "cpu", "cuda", "mps"] = Field(
        "auto", description="Where to run: 'auto' takes CUDA, else MPS, else the CPU."
    )
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = Field(
        "auto",
        description="Weights and activations: 'auto' is bfloat16 on CUDA where supported "
        "(float16 otherwise), float16 on MPS and float32 on the CPU.",
    )
    batch_size: Annotated[int, Field(ge=1)] | Literal["auto"] = Field(
        8,
        description="Requests per forward pass (prompts are left-padded together); 'auto' "
        "finds the largest batch that fits the device's memory once per image size (CUDA: "
        "from a probe batch's peak memory; CPU and MPS: 8) and records it in the manifest.",
    )
    max_image_side: int | None = Field(
        None,
        ge=1,
        description="Shrink images (aspect kept, bicubic) so their longer side is at most this "
        "many pixels before the processor sees them; None leaves them to the processor.",
    )
    trust_remote_code: bool = Field(
        False, description="Allow model code shipped in the checkpoint (off: only built-ins)."
    )
    attn_implementation: Literal["eager", "sdpa", "flash_attention_2"] = Field(
        "eager",
        description="Attention kernel. Left out, a new run gives the model its family's "
        "(models/families.py: 'sdpa' wherever it reproduces the custom masks) and records it "
        "in its items' options; options without it (a run stored before) mean 'eager'. Custom "
        "4-D masks (trajectory grounding) need 'eager' or 'sdpa'; 'flash_attention_2' disables "
        "the attention_mask capability.",
    )
    kind: Literal["auto", "vlm", "text"] = Field(
        "auto",
        description="Force the loader: 'vlm' (AutoModelForImageTextToText + AutoProcessor) or "
        "'text' (AutoModelForCausalLM + AutoTokenizer); 'auto' decides from the config.",
    )
    revision: str | None = Field(
        None, description="Revision of a Hugging Face id in the local cache (branch or commit)."
    )
    cache_dir: str | None = Field(
        None,
        description="Hugging Face cache to look a model id up in; None is the default cache "
        "(HF_HUB_CACHE, or HF_HOME/hub).",
    )


def parse_options(options: Mapping[str, JsonValue]) -> HfOptions:
    """Validate backend options; an unknown or bad option is an InputError naming it."""
    try:
        return HfOptions(**dict(options))
    except ValidationError as exc:
        raise invalid_options(exc, "hf backend options") from exc
