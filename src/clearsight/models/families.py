"""Model-family quirks of the ``hf`` backend: one table, one row per family that needs one.

Most families need nothing: the backend renders the chat template, lets the family's processor
expand image placeholders and prepare pixels, left-pads a batch, passes explicit position ids
and reads the answer at the last position. What differs between families, and what clearsight
cannot run faithfully, is written here and nowhere else in the backend.

A row (:class:`Family`, keyed by the config's ``model_type`` in :data:`FAMILIES`) may say:

``refuse``
    the family cannot be run faithfully at all: loading stops with this reason.
``masked_scoring``
    custom attention masks (trajectory grounding's hidden text, ``score_hidden``) cannot be
    honoured: the ``attention_mask`` capability is withheld with this reason, so a run that
    needs it stops before it starts.
``bidirectional_image``
    the layer types in which the tokens of one image attend each other in both directions
    (Gemma 3: all). A custom mask keeps that pattern: it is OR-ed in, as transformers does.
``per_token_inputs``
    model inputs with one row per token that tokens appended after the prompt (multi-token
    candidates, generated tokens) must also get, as a copy of the prompt's last row, which is
    what ``generate`` does (Mllama's ``cross_attention_mask``: which image tiles a token reads).
``attention``
    the attention kernel a new run computes with where its options name none
    (:mod:`clearsight.models.attention`): ``sdpa``, faster than ``eager``, wherever it gives
    what ``eager`` gives under the backend's custom masks and batches (the conformance suite's
    masked and batch checks, ``tests/models/test_conformance.py``, run with it: every family
    there passes); ``eager`` for a family where it does not.

Rules that follow from the config alone are derived by :func:`family_of`, so that a new family
needs at most a row:

* an encoder-decoder (``is_encoder_decoder``) is refused: the read-out assumes one decoder
  reading the prompt, and no encoder-decoder path exists;
* a config with a vision part whose model type transformers maps to a causal LM, not to an
  image-text-to-text model, is refused unless ``kind: text`` asks for a blind run on purpose:
  it would load text-only and silently drop every image (Phi-4-multimodal);
* attention layers other than full and sliding-window ones withhold masked scoring: a
  linear-attention or state-space layer's recurrent state carries hidden tokens forward
  whatever the mask says, and other patterns (chunked attention) are not reproduced; so does a
  text model configured to attend bidirectionally (``use_bidirectional_attention``);
* sliding-window layers get their window applied to a custom mask (a per-layer-type mask), so a
  long prompt is masked as the model masks it.

This module imports neither torch nor transformers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from clearsight.validate import InputError

#: Attention layer types a custom 4-D mask is exact for (the window of a sliding layer is
#: applied by the backend).
MASKABLE_LAYER_TYPES = frozenset({"full_attention", "sliding_attention"})


@dataclass(frozen=True)
class Family:
    """What the ``hf`` backend does differently for one model family (see the module
    docstring); the defaults are what most families need. :func:`family_of` fills the last
    three fields from the config."""

    refuse: str | None = None
    masked_scoring: str | None = None
    bidirectional_image: frozenset[str] = frozenset()
    per_token_inputs: tuple[str, ...] = ()
    attention: Literal["sdpa", "eager"] = "sdpa"
    # derived from the config by family_of: the model type, each decoder layer's attention
    # type (one entry when all layers are alike) and the window of sliding-window layers
    model_type: str = ""
    layer_types: tuple[str, ...] = ("full_attention",)
    sliding_window: int | None = None

    @property
    def shares_prefix(self) -> bool:
        """Whether the backend may split this family's prompts at their last image and share
        the image's encode and prefill among the requests that show it
        (:mod:`clearsight.models.hf_prefix`): a causal prompt (masked scoring possible), image
        tokens that attend causally, no per-token inputs."""
        return (
            self.masked_scoring is None
            and not self.bidirectional_image
            and not self.per_token_inputs
        )


#: The rows, by ``config.model_type``. Families absent here need no row.
FAMILIES: dict[str, Family] = {
    "gemma3": Family(bidirectional_image=frozenset({"full_attention", "sliding_attention"})),
    "gemma4": Family(
        masked_scoring="Gemma 4's image tokens attend each other bidirectionally in its "
        "sliding-window layers only, depending on the config; that mask is not reproduced"
    ),
    "paligemma": Family(
        masked_scoring="PaliGemma's whole prompt (image and text) is one bidirectional "
        "prefix: text before a hidden range reads it and passes it on"
    ),
    "mllama": Family(per_token_inputs=("cross_attention_mask",)),
}


def family_of(config: Any, vlm_types: frozenset[str], kind: str = "auto") -> Family:
    """The resolved :class:`Family` of a transformers ``config``: its row (if any) with the
    derived rules applied. ``vlm_types`` are the model types transformers maps to an
    image-text-to-text model; ``kind`` is the backend option (``auto``, ``vlm`` or ``text``)."""
    model_type = str(getattr(config, "model_type", ""))
    row = FAMILIES.get(model_type, Family())
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    layer_types = tuple(getattr(text, "layer_types", None) or ())
    if not layer_types:  # one kind of layer: a window on all of them (Mistral) or none
        sliding = getattr(text, "sliding_window", None) is not None
        layer_types = ("sliding_attention" if sliding else "full_attention",)
    refuse = row.refuse
    if refuse is None and (
        getattr(config, "is_encoder_decoder", False) or getattr(text, "is_encoder_decoder", False)
    ):
        refuse = (
            "an encoder-decoder model: the read-outs assume one decoder reading the prompt, "
            "and no encoder-decoder path exists"
        )
    has_vision = any(
        getattr(config, a, None) is not None for a in ("vision_config", "image_token_id")
    )
    if refuse is None and has_vision and model_type not in vlm_types and kind != "text":
        refuse = (
            "it has a vision part, but transformers maps it to a causal LM, not an "
            "image-text-to-text model: it would run text-only and drop every image "
            "(set kind: text to run it blind on purpose)"
        )
    masked = row.masked_scoring
    unmaskable = [t for t in dict.fromkeys(layer_types) if t not in MASKABLE_LAYER_TYPES]
    if masked is None and unmaskable:
        masked = (
            f"a custom mask is exact for full and sliding-window attention only; its "
            f"{', '.join(unmaskable)} layers (a recurrent state, another pattern) would let "
            "hidden tokens through"
        )
    if masked is None and getattr(text, "use_bidirectional_attention", None) in (True, "all"):
        masked = "its text attends bidirectionally: earlier tokens read a hidden range too"
    window = getattr(text, "sliding_window", None) if "sliding_attention" in layer_types else None
    return replace(
        row,
        refuse=refuse,
        masked_scoring=masked,
        model_type=model_type,
        layer_types=layer_types,
        sliding_window=None if window is None else int(window),
    )


class _JsonConfig:
    """A checkpoint's ``config.json`` read as the attributes :func:`family_of` asks a
    transformers config for (a missing key is None)."""

    def __init__(self, fields: Mapping[str, object]) -> None:
        self._fields = fields

    def __getattr__(self, name: str) -> Any:
        return self._fields.get(name)

    def get_text_config(self) -> _JsonConfig:
        text = self._fields.get("text_config")
        return _JsonConfig(text) if isinstance(text, Mapping) else self


def family_of_json(config: Mapping[str, object]) -> Family:
    """The :class:`Family` of a checkpoint's ``config.json`` as read, without transformers
    (what a plan needs: it counts, it loads nothing). The refusal of a vision config that
    transformers maps to a causal LM needs transformers' tables and is left to loading."""
    model_type = str(config.get("model_type", ""))
    return family_of(_JsonConfig(config), frozenset({model_type}))


def check_loadable(family: Family, name: str) -> None:
    """InputError naming the reason when ``family`` cannot be run faithfully."""
    if family.refuse is not None:
        raise InputError(f"{name} ({family.model_type}) is refused: {family.refuse}")
