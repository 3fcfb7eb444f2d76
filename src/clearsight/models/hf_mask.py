"""Custom attention masks for the ``hf`` backend: hide key positions, keep every position.

Trajectory grounding (docs/methods.md §5) removes the rationale's tokens from the attention of every
later position while the tokens stay in the sequence with their positions. With a 4-D mask that
is exact: query ``q`` may attend key ``k`` iff

    k <= q  and  k is not padding  and  not (k in a hidden range [s, e) and q >= e)

so nothing after a hidden range reads it in any layer, and its content cannot influence the
logits there. Queries inside a hidden range still see it (causally); that changes nothing after
the range. transformers passes a 4-D mask through unchanged (``masking_utils`` returns an
already-prepared 4-D mask as is) and the eager and SDPA attention kernels add it to the scores,
so masks are built as boolean "may attend" arrays here and converted to additive float masks
(0 or the dtype's minimum, never ``-inf``, so a fully hidden row cannot produce NaN).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from clearsight.validate import InputError

#: Half-open token index ranges [start, end) per batch row.
Ranges = Sequence[tuple[int, int]]


def check_ranges(ranges: Ranges, length: int, what: str = "hidden range") -> list[tuple[int, int]]:
    """``ranges`` as a list, after checking each is a non-empty [start, end) inside ``length``."""
    out = []
    for start, end in ranges:
        if not 0 <= start < end <= length:
            raise InputError(
                f"{what} [{start}, {end}) is empty or outside the sequence of {length} tokens"
            )
        out.append((int(start), int(end)))
    return out


def hiding_mask(padding_mask: torch.Tensor, hidden: Sequence[Ranges]) -> torch.Tensor:
    """Boolean ``(B, 1, L, L)`` "may attend" mask: causal, padding keys removed, and each row's
    hidden key ranges removed from every query at or after the range's end.

    ``padding_mask`` is the usual ``(B, L)`` 1/0 mask (left or right padding); ``hidden[b]`` the
    token ranges of row ``b``, in that row's (padded) coordinates. Every query keeps its own key
    (the diagonal), so no row is empty even at a padding position.
    """
    if padding_mask.ndim != 2:
        raise InputError(f"padding_mask must be (batch, length), got shape {padding_mask.shape}")
    batch, length = padding_mask.shape
    if len(hidden) != batch:
        raise InputError(f"{len(hidden)} lists of hidden ranges for a batch of {batch} rows")
    device = padding_mask.device
    idx = torch.arange(length, device=device)
    causal = idx[None, :] <= idx[:, None]  # [q, k]
    mask = causal[None] & padding_mask.bool()[:, None, :]
    for b, ranges in enumerate(hidden):
        for start, end in check_ranges(ranges, length):
            key_in = (idx >= start) & (idx < end)
            mask[b] &= ~(key_in[None, :] & (idx[:, None] >= end))
    mask |= torch.eye(length, dtype=torch.bool, device=device)[None]
    return mask[:, None]


def continuation_mask(
    prompt_visible: torch.Tensor, continuation_padding: torch.Tensor
) -> torch.Tensor:
    """Boolean ``(B, 1, Q, P + Q)`` mask for ``Q`` tokens appended after a ``P``-token prompt.

    ``prompt_visible`` ``(B, P)`` says which prompt keys the new tokens may read (real and not
    hidden); the new tokens attend each other causally, and padding among them is hidden.
    """
    batch, q = continuation_padding.shape
    idx = torch.arange(q, device=continuation_padding.device)
    causal = (idx[None, :] <= idx[:, None])[None] & continuation_padding.bool()[:, None, :]
    causal |= torch.eye(q, dtype=torch.bool, device=causal.device)[None]
    prompt = prompt_visible.bool()[:, None, :].expand(batch, q, prompt_visible.shape[1])
    return torch.cat([prompt, causal], dim=2)[:, None]


def additive(mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """A boolean "may attend" mask as the additive float mask attention kernels expect."""
    if mask.dtype != torch.bool:
        raise InputError(f"expected a boolean attention mask, got dtype {mask.dtype}")
    out = torch.zeros(mask.shape, dtype=dtype, device=mask.device)
    return out.masked_fill(~mask, torch.finfo(dtype).min)


def with_image_blocks(mask: torch.Tensor, image: torch.Tensor) -> torch.Tensor:
    """``mask`` ``(B, 1, L, L)`` with the tokens of each image attending each other in both
    directions, as Gemma 3 attends: an image is a run of consecutive image tokens (``image``
    ``(B, L)``, True at image tokens), and every pair inside one run is allowed."""
    before = torch.nn.functional.pad(image[:, :-1], (1, 0), value=False)
    run = torch.cumsum((image & ~before).long(), dim=1)
    run = torch.where(image, run, torch.zeros_like(run))
    same = (run[:, :, None] == run[:, None, :]) & (run[:, :, None] > 0)
    return mask | same[:, None]


def windowed(mask: torch.Tensor, window: int) -> torch.Tensor:
    """``mask`` ``(B, 1, Q, K)`` cut to a sliding window: query ``q`` keeps keys ``k`` with
    ``k > q - window`` (indices; the queries are the last ``Q`` of the ``K`` keys), the rule of
    transformers' sliding-window layers."""
    q, k = mask.shape[-2:]
    rows = torch.arange(k - q, k, device=mask.device)[:, None]
    cols = torch.arange(k, device=mask.device)[None, :]
    return mask & (cols > rows - window)
