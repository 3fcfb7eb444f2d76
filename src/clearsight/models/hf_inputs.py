"""Chat messages to model inputs for the ``hf`` backend, one adapter per way a family is fed.

Two adapters cover the families clearsight loads:

* :class:`TextInputs` — a text-only causal LM: the tokenizer's chat template over the messages'
  text; images are dropped (and counted, so the caller can record it).
* :class:`ProcessorInputs` — a VLM fed by its own processor (Idefics3 / SmolVLM, Qwen-VL,
  InternVL, Gemma 3, LLaVA, ...): the chat template puts one image placeholder per image, in
  message order, and the processor expands placeholders and prepares pixels. Several processors
  also build a *video* half that needs torchvision although image-only use never calls it;
  :func:`load_processor` then builds the processor from its image processor and tokenizer (and
  chat template) alone.

Both pad on the LEFT, so the next-token distribution of every row sits at the last position,
and compute explicit position ids (``cumsum(mask) - 1``; multimodal
RoPE positions from the model's ``get_rope_index`` where it has one), so later passes over a KV
cache (decode steps, multi-token candidates) can continue each row at ``next_position``.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict

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


class _ImageEntry(TypedDict):
    """An image's place in a message's content (the processor is given the image itself)."""

    type: Literal["image"]


class _TextEntry(TypedDict):
    """A text part of a message's content."""

    type: Literal["text"]
    text: str


class _HfMessage(TypedDict):
    """One message in the chat format transformers' templates read: its content a text, or
    (an image model's) a list of image and text entries."""

    role: str
    content: str | list[_ImageEntry | _TextEntry]


def _hf_messages(messages: Sequence[Message], with_images: bool) -> list[_HfMessage]:
    """clearsight messages as the list-of-dicts chat format transformers templates read."""
    out: list[_HfMessage] = []
    for m in messages:
        if with_images:
            parts: list[_ImageEntry | _TextEntry] = [
                _ImageEntry(type="image")
                if isinstance(p, ImagePart)
                else _TextEntry(type="text", text=p.text)
                for p in m.content
            ]
            out.append({"role": m.role, "content": parts})
        else:
            out.append({"role": m.role, "content": m.text})
    return out


def _render(
    tokenizer: Any,
    messages: Sequence[Message],
    with_images: bool,
    name: str,
    template: str | None = None,
) -> str:
    """Apply the chat template (``template``, else the tokenizer's own) with the tokenizer's
    renderer. A conversation that ends with an assistant turn is continued (the turn is a
    prefix of the answer); otherwise the generation prompt is appended."""
    template = template or getattr(tokenizer, "chat_template", None)
    if not template:
        raise InputError(
            f"model {name!r} has no chat template (tokenizer_config.json / chat_template.jinja); "
            "clearsight needs one to place the prompt and the answer position"
        )
    cont = messages[-1].role == "assistant"
    text = tokenizer.apply_chat_template(
        _hf_messages(messages, with_images),
        chat_template=template,
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
    """A VLM fed by its processor (chat template, placeholder expansion, pixels)."""

    images = True

    def __init__(self, processor: Any, model: Any, name: str) -> None:
        super().__init__(processor.tokenizer, model, name)
        self.processor = processor

    def render(self, messages: Sequence[Message]) -> str:
        # the processor's template where it has one (the tokenizer's may be text-only); the
        # tokenizer renders it (some processors' own renderers reach for their video half)
        template = getattr(self.processor, "chat_template", None)
        return _render(self.tokenizer, messages, True, self.name, template)

    def encode(self, prompts: Sequence[str], images: Sequence[Sequence[Any]]) -> Batch:
        kwargs = {"images": [list(x) for x in images]} if any(images) else {}
        enc = self.processor(
            text=list(prompts),
            return_tensors="pt",
            padding=True,
            padding_side="left",
            add_special_tokens=False,
            **kwargs,
        )
        # ``labels`` (PaliGemma's processor returns them) would make the model compute a loss
        inputs = {
            k: v
            for k, v in enc.items()
            if k not in ("input_ids", "attention_mask", "labels") and isinstance(v, torch.Tensor)
        }
        return self._batch(enc["input_ids"], enc["attention_mask"], inputs)


def load_processor(tf: Any, source: str, common: Mapping[str, object], name: str) -> Any:
    """The processor of the checkpoint ``source``: ``AutoProcessor``'s, or, where that fails
    for want of an optional package (torchvision for a video half, say), the same processor
    class built from its image processor and tokenizer alone (image-only use never calls the
    video half). InputError when neither can be built."""
    try:
        processor = tf.AutoProcessor.from_pretrained(source, **common)
    except (ImportError, ValueError) as exc:  # the video half's missing torchvision, say
        processor = _image_only_processor(tf, source, common, name, exc)
    except (OSError, TypeError) as exc:
        raise InputError(f"cannot build the processor of {name}: {exc}") from exc
    if not hasattr(processor, "tokenizer") or not hasattr(processor, "image_processor"):
        raise InputError(
            f"cannot build the processor of {name}: AutoProcessor gave a "
            f"{type(processor).__name__}, not a processor with an image processor and tokenizer"
        )
    return processor


def _image_only_processor(
    tf: Any, source: str, common: Mapping[str, object], name: str, why: Exception
) -> Any:
    """The checkpoint's processor class without its video half (see :func:`load_processor`).

    The image processor, tokenizer (and any other non-video part) are loaded the usual way,
    the processor's settings and chat template from the checkpoint; the class itself is then
    built with ``None`` for its video processor, which only video inputs would use.
    """
    from transformers.models.auto.processing_auto import processor_class_from_name

    try:
        config, _ = tf.ProcessorMixin.get_processor_dict(source, **common)
        class_name = config.get("processor_class")
        if class_name is None:
            meta = tf.ImageProcessingMixin.get_image_processor_dict(source, **common)[0]
            class_name = meta.get("processor_class")
        cls = processor_class_from_name(class_name) if class_name else None
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot build the processor of {name}: {exc}") from exc
    if cls is None:
        raise InputError(f"cannot build the processor of {name}: {why}") from why
    kept = [a for a in cls.get_attributes() if "video" not in a]
    absent = [a for a in cls.get_attributes() if a not in kept]

    def check(self: Any, attribute: str, value: Any) -> Any:
        # the video half is absent on purpose; every other part is checked as usual
        if value is None and attribute in absent:
            return None
        return cls.check_argument_for_proper_class(self, attribute, value)

    # ``loader`` reads only the kept parts from the checkpoint; ``image_only`` is the class
    # itself, accepting None for its video half
    loader: Any = type(cls.__name__, (cls,), {"get_attributes": classmethod(lambda _: kept)})
    image_only: Any = type(cls.__name__, (cls,), {"check_argument_for_proper_class": check})
    try:
        parts = _kept_parts(loader, source, config, kept, common)
        init = inspect.signature(cls.__init__).parameters
        kwargs = {k: v for k, v in config.items() if k in init and k not in cls.get_attributes()}
        kwargs |= dict.fromkeys(absent)
        return image_only(**parts, **kwargs)
    except (ImportError, OSError, ValueError, TypeError) as exc:
        raise InputError(
            f"cannot build the processor of {name}: {why}; without its video half: {exc}"
        ) from exc


def _kept_parts(
    loader: Any,
    source: str,
    config: Mapping[str, object],
    kept: list[str],
    common: Mapping[str, object],
) -> dict[str, object]:
    """The processor parts named ``kept`` (image processor, tokenizer, ...), loaded from the
    checkpoint by the processor class ``loader`` the way ``from_pretrained`` loads them:
    ``_get_arguments_from_pretrained`` before transformers 5.25, ``_resolve_subprocessors``
    (the parts into the processor's settings) since."""
    if hasattr(loader, "_get_arguments_from_pretrained"):
        args = loader._get_arguments_from_pretrained(source, config, **common)
        return dict(zip(kept, args, strict=True))
    resolved, _ = loader._resolve_subprocessors(source, dict(config), **common)
    return {name: resolved[name] for name in kept}
