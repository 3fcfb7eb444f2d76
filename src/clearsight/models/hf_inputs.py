"""Chat messages to model inputs for the ``hf`` backend, one adapter per way a family is fed.

Three adapters cover the families clearsight loads:

* :class:`TextInputs` — a text-only causal LM: the tokenizer's chat template over the messages'
  text; images are dropped (and counted, so the caller can record it).
* :class:`ProcessorInputs` — a VLM with a working ``AutoProcessor`` (Idefics3 / SmolVLM, LLaVA,
  ...): the processor's chat template puts one image placeholder per image, in message order,
  and the processor expands placeholders and prepares pixels.
* :class:`ExpandedImageTokenInputs` — a VLM whose processor cannot be built here (Qwen2-VL's
  processor needs torchvision for its video half): the tokenizer's chat template, the image
  processor alone, and the image pad token repeated ``grid_thw.prod() // merge_size**2`` times
  per image — exactly what ``Qwen2VLProcessor`` does.

All three pad on the LEFT, so the next-token distribution of every row sits at the last
position, and compute explicit position ids (``cumsum(mask) - 1``; multimodal RoPE positions
from the model's ``get_rope_index`` where it has one), so later passes over a KV cache (decode
steps, multi-token candidates) can continue each row at ``next_position``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from clearsight.models.base import ImagePart, Message
from clearsight.validate import InputError


@dataclass
class Batch:
    """Left-padded inputs of one batch of prompts."""

    input_ids: torch.Tensor  # (B, L)
    attention_mask: torch.Tensor  # (B, L), 1 = real token
    position_ids: torch.Tensor  # (B, L), or (3, B, L) for multimodal RoPE
    next_position: torch.Tensor  # (B,): position id of the first token after the prompt
    model_inputs: dict[str, torch.Tensor] = field(default_factory=dict)  # pixels and the like

    @property
    def lengths(self) -> list[int]:
        """Real (unpadded) prompt length of each row."""
        return [int(n) for n in self.attention_mask.sum(dim=1).tolist()]

    def to(self, device: torch.device, dtype: torch.dtype) -> Batch:
        """The batch on ``device``; floating-point model inputs (pixels) cast to ``dtype``."""
        inputs = {
            k: v.to(device=device, dtype=dtype) if v.is_floating_point() else v.to(device)
            for k, v in self.model_inputs.items()
        }
        return Batch(
            self.input_ids.to(device),
            self.attention_mask.to(device),
            self.position_ids.to(device),
            self.next_position.to(device),
            inputs,
        )


def continued_positions(next_position: torch.Tensor, steps: int, mrope: bool) -> torch.Tensor:
    """Position ids of ``steps`` tokens appended to each row: ``next_position + arange``."""
    pos = next_position[:, None] + torch.arange(steps, device=next_position.device)[None, :]
    return pos[None].expand(3, *pos.shape) if mrope else pos


def _text_positions(attention_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    pos = (attention_mask.long().cumsum(-1) - 1).clamp(min=0)
    return pos, attention_mask.long().sum(-1)


def _hf_messages(messages: Sequence[Message], with_images: bool) -> list[dict[str, Any]]:
    """clearsight messages as the list-of-dicts chat format transformers templates read."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if with_images:
            parts: list[dict[str, Any]] = [
                {"type": "image"} if isinstance(p, ImagePart) else {"type": "text", "text": p.text}
                for p in m.content
            ]
            out.append({"role": m.role, "content": parts})
        else:
            out.append({"role": m.role, "content": m.text})
    return out


def _render(template_owner: Any, messages: Sequence[Message], with_images: bool, name: str) -> str:
    """Apply the chat template. A conversation that ends with an assistant turn is continued
    (the turn is a prefix of the answer); otherwise the generation prompt is appended."""
    if not getattr(template_owner, "chat_template", None):
        raise InputError(
            f"model {name!r} has no chat template (tokenizer_config.json / chat_template.jinja); "
            "clearsight needs one to place the prompt and the answer position"
        )
    cont = messages[-1].role == "assistant"
    text = template_owner.apply_chat_template(
        _hf_messages(messages, with_images),
        tokenize=False,
        add_generation_prompt=not cont,
        continue_final_message=cont,
    )
    if isinstance(text, list):  # some processors always return a batch
        text = text[0]
    return str(text)


def to_pil(image: npt.NDArray[np.uint8], max_side: int | None) -> Any:
    """A PIL image of ``image``, shrunk (aspect kept, bicubic) so its longer side <= max_side."""
    from PIL import Image

    pil = Image.fromarray(np.ascontiguousarray(image))
    if max_side is not None and max(pil.size) > max_side:
        scale = max_side / max(pil.size)
        size = (max(1, round(pil.size[0] * scale)), max(1, round(pil.size[1] * scale)))
        pil = pil.resize(size, Image.Resampling.BICUBIC)
    return pil


class ChatInputs:
    """Base adapter: renders messages with a chat template and encodes prompts with left padding.

    ``tokenizer`` must be a fast tokenizer (offsets are used to map hidden text to tokens).
    """

    images: bool = False

    def __init__(self, tokenizer: Any, model: Any, name: str) -> None:
        self.tokenizer = tokenizer
        self.model = model
        self.name = name
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        inner = getattr(model, "model", None)
        self._rope_index = getattr(inner, "get_rope_index", None)

    @property
    def mrope(self) -> bool:
        """Whether the model uses multimodal (3-axis) RoPE positions."""
        return self._rope_index is not None

    def render(self, messages: Sequence[Message]) -> str:
        """The prompt text: chat template applied, image placeholders in message order."""
        return _render(self.tokenizer, messages, False, self.name)

    def encode(self, prompts: Sequence[str], images: Sequence[Sequence[Any]]) -> Batch:
        """Token ids (left-padded), mask, positions and model inputs of rendered prompts."""
        enc = self.tokenizer(
            list(prompts),
            return_tensors="pt",
            padding=True,
            padding_side="left",
            add_special_tokens=False,
        )
        return self._batch(enc["input_ids"], enc["attention_mask"], {})

    def _batch(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, inputs: dict[str, torch.Tensor]
    ) -> Batch:
        grid = inputs.get("image_grid_thw")
        if self._rope_index is not None and grid is not None:
            token_types = inputs.get("mm_token_type_ids")
            if token_types is None:
                token_types = (input_ids == self.model.config.image_token_id).int()
                inputs["mm_token_type_ids"] = token_types
            pos, _ = self._rope_index(
                input_ids,
                mm_token_type_ids=token_types,
                image_grid_thw=grid,
                attention_mask=attention_mask,
            )
            masked = pos.masked_fill(attention_mask[None] == 0, -1)
            return Batch(input_ids, attention_mask, pos, masked.amax(dim=(0, 2)) + 1, inputs)
        pos, nxt = _text_positions(attention_mask)
        if self._rope_index is not None:
            pos = pos[None].expand(3, *pos.shape)
        return Batch(input_ids, attention_mask, pos, nxt, inputs)

    def plain_tokens(self, prompt: str) -> tuple[list[int], list[tuple[int, int]]]:
        """Token ids and character offsets of a rendered prompt tokenized as plain text (image
        placeholders unexpanded): the map from hidden text to token positions."""
        enc = self.tokenizer(prompt, add_special_tokens=False, return_offsets_mapping=True)
        return list(enc["input_ids"]), [tuple(o) for o in enc["offset_mapping"]]


class TextInputs(ChatInputs):
    """A text-only causal LM: images are dropped by the caller before encoding."""


class ProcessorInputs(ChatInputs):
    """A VLM fed by its ``AutoProcessor`` (chat template, placeholder expansion, pixels)."""

    images = True

    def __init__(self, processor: Any, model: Any, name: str) -> None:
        super().__init__(processor.tokenizer, model, name)
        self.processor = processor

    def render(self, messages: Sequence[Message]) -> str:
        owner = self.processor if getattr(self.processor, "chat_template", None) else self.tokenizer
        return _render(owner, messages, True, self.name)

    def encode(self, prompts: Sequence[str], images: Sequence[Sequence[Any]]) -> Batch:
        kwargs: dict[str, Any] = {}
        if any(images):
            kwargs["images"] = [list(x) for x in images]
        enc = self.processor(
            text=list(prompts),
            return_tensors="pt",
            padding=True,
            padding_side="left",
            add_special_tokens=False,
            **kwargs,
        )
        inputs = {
            k: v
            for k, v in enc.items()
            if k not in ("input_ids", "attention_mask") and isinstance(v, torch.Tensor)
        }
        return self._batch(enc["input_ids"], enc["attention_mask"], inputs)


class ExpandedImageTokenInputs(ChatInputs):
    """A Qwen2-VL-style VLM without its processor: the image processor makes patches and
    ``image_grid_thw``; each image pad token in the rendered prompt becomes
    ``grid_thw.prod() // merge_size**2`` of them."""

    images = True

    def __init__(self, tokenizer: Any, image_processor: Any, model: Any, name: str) -> None:
        super().__init__(tokenizer, model, name)
        self.image_processor = image_processor
        token_id = getattr(model.config, "image_token_id", None)
        if token_id is None:
            raise InputError(f"model {name!r}: its config names no image_token_id")
        self.image_token = str(tokenizer.convert_ids_to_tokens(int(token_id)))
        self.merge = int(getattr(image_processor, "merge_size", 2))

    def render(self, messages: Sequence[Message]) -> str:
        return _render(self.tokenizer, messages, True, self.name)

    def encode(self, prompts: Sequence[str], images: Sequence[Sequence[Any]]) -> Batch:
        flat = [im for row in images for im in row]
        inputs: dict[str, torch.Tensor] = {}
        counts: list[int] = []
        if flat:
            out = self.image_processor(images=flat, return_tensors="pt")
            inputs = {"pixel_values": out["pixel_values"], "image_grid_thw": out["image_grid_thw"]}
            counts = [int(g.prod()) // self.merge**2 for g in out["image_grid_thw"]]
        expanded, k = [], 0
        for prompt, row in zip(prompts, images, strict=True):
            pieces = prompt.split(self.image_token)
            if len(pieces) - 1 != len(row):
                raise InputError(
                    f"model {self.name!r}: the chat template placed {len(pieces) - 1} image "
                    f"tokens for {len(row)} images"
                )
            text = pieces[0]
            for piece in pieces[1:]:
                text += self.image_token * counts[k] + piece
                k += 1
            expanded.append(text)
        enc = self.tokenizer(
            expanded,
            return_tensors="pt",
            padding=True,
            padding_side="left",
            add_special_tokens=False,
        )
        return self._batch(enc["input_ids"], enc["attention_mask"], inputs)
