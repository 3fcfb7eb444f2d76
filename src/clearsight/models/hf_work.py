"""The hf backend's units of work, shared by its modules: an item ready to encode
(:class:`WorkItem`), what its computation produced (:class:`WorkOut`), the KV-cache fork that
lets items share a prefilled prefix (:func:`fork_cache`, :func:`past_cache`), and what the
prefix-sharing and batch-sizing modules need of the backend (:class:`ChunkRunner`). Kept apart
from :mod:`~clearsight.models.hf_backend` so that those modules and the backend do not import
each other."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypedDict

import torch

from clearsight.models.base import Request, TokenLogprob

if TYPE_CHECKING:
    from clearsight.models.hf_inputs import Batch, ChatInputs


@dataclass
class WorkItem:
    """One distinct request, ready to encode."""

    request: Request
    prompt: str
    images: list[Any]
    dropped: int


@dataclass
class WorkOut:
    """What the computation produced for one item."""

    candidate_probs: dict[str, float] | None = None
    texts: tuple[str, ...] = ()
    token_logprobs: tuple[tuple[TokenLogprob, ...], ...] | None = None
    completion_tokens: int = 0
    prompt_tokens: int = 0
    extra: dict[str, object] = field(default_factory=dict)


def fork_cache(cache: Any, rows: torch.Tensor) -> Any:
    """A copy of ``cache`` holding the batch rows ``rows`` (repeats allowed); the original is
    untouched (tensors are re-indexed or cloned, never written in place). Each layer selects its
    own rows (``batch_select_indices``: keys and values); a linear-attention layer (Qwen3.5's)
    also holds per-state dicts of ``conv_states`` / ``recurrent_states``, batch first, which
    are re-indexed here (transformers' own selection skips them)."""
    new = copy.copy(cache)
    new.layers = []
    for layer in cache.layers:
        forked = copy.copy(layer)
        for key, value in vars(layer).items():
            if key in ("conv_states", "recurrent_states") and isinstance(value, dict):
                setattr(forked, key, {i: None if t is None else t[rows] for i, t in value.items()})
            elif isinstance(value, dict):
                setattr(forked, key, dict(value))
            elif isinstance(value, torch.Tensor) and key not in ("keys", "values"):
                setattr(forked, key, value.clone())
        if hasattr(forked, "batch_select_indices"):
            forked.batch_select_indices(rows)
        new.layers.append(forked)
    return new


def past_cache(out: Any) -> Any:
    """The KV cache a forward pass returned (``cache`` or ``past_key_values``)."""
    cache = getattr(out, "cache", None)
    return out.past_key_values if cache is None else cache


class BatchSize(TypedDict):
    """The batch size ``batch_size: auto`` chose for one image size, and how."""

    rows: int
    how: str


class ChunkRunner(Protocol):
    """What :mod:`~clearsight.models.hf_prefix` and :mod:`~clearsight.models.hf_memory` use of
    the hf backend: its device, dtype, inputs and tokenizer, the batch sizes it found, and its
    passes (one chunk of items; one model call; the outputs of items from a prompt pass)."""

    device: torch.device
    dtype: torch.dtype
    inputs: ChatInputs
    tokenizer: Any
    batch_sizes: dict[str, BatchSize]

    def _chunk(self, items: list[WorkItem]) -> list[WorkOut]: ...

    def _forward(self, **kwargs: Any) -> Any: ...

    def _read(self, items: Sequence[WorkItem], batch: Batch, out: Any) -> list[WorkOut]: ...
