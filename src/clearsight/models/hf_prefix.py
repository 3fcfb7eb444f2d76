"""Shared image prefixes for the ``hf`` backend: one vision encode per distinct image.

The sweep shows each degraded image with five to eight questions (tasks, abstain wordings,
verification true and distractor, verbalized wordings), and each prompt is the image followed
by its question: ``<turn>User:<image>`` then the question. Requests of one ``complete`` call
whose rendered prompts agree up to and including their last image placeholder, and that show
the same images, form a *group*: the group's prefix (its text and images) goes through the
processor and the model once — one vision-tower pass per distinct image — and its KV cache is
forked to every item of the group (as ``n`` samples fork one prefill), which then runs only its
own suffix, the question, on top.

Why the read-outs do not change: attention is causal, so a prefix token never reads the suffix
and the prefix pass computes what the full prompt's pass computes over those tokens; the suffix
tokens continue each row at the prefix's next position (multimodal RoPE included: text after
an image continues at its largest position plus one); padding is handled once per pass — the
prefixes are left-padded among themselves, and the suffixes among themselves (their padding
sits between prefix and suffix, masked), so every row's last token is the last position. Floats
move only as batching moves them (other shapes of the matrix products).

A prompt is split only where that is exact: its plain tokenization (placeholders unexpanded)
must be the prefix's tokens followed by the suffix's, so the processor's expansion of the
prefix followed by the suffix tokens is the full prompt's tokens. A family whose prompt is not
causal (PaliGemma's bidirectional prefix, recurrent layers: the ``attention_mask`` capability
withheld), whose image tokens attend both ways (Gemma 3) or which carries per-token inputs
(Mllama) is never split (:attr:`~clearsight.models.families.Family.shares_prefix`).

Chunks are length-bucketed (:func:`plan_chunks`): groups in order of prefix length and items in
order of suffix length, whole groups to a batch up to ``batch_size`` rows (a group larger than
that is a batch of its own: its items share one prefix pass). A group of one is not split: a
request alone takes one pass, as before.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from clearsight.models.hf_inputs import Batch
from clearsight.models.hf_work import fork_cache, past_cache

if TYPE_CHECKING:
    from clearsight.models.hf_work import ChunkRunner, WorkItem, WorkOut

#: Whether the backend shares prefixes (switched off to compare against the unshared path).
ENABLED = True


@dataclass(frozen=True)
class Split:
    """A prompt cut right after its last image placeholder: the prefix text and the suffix's
    token ids (the suffix tokenized on its own gives the same ids as in the whole prompt)."""

    prefix: str
    suffix_ids: tuple[int, ...]


def split_prompt(tokenizer: Any, placeholder_id: int, prompt: str) -> Split | None:
    """``prompt`` split after its last image placeholder token, or None where it has none,
    nothing follows it, or the two halves do not tokenize to the whole prompt's tokens."""
    enc = tokenizer(prompt, add_special_tokens=False, return_offsets_mapping=True)
    ids = list(enc["input_ids"])
    found = [i for i, t in enumerate(ids) if t == placeholder_id]
    if not found:
        return None
    cut = int(enc["offset_mapping"][found[-1]][1])
    prefix, suffix = prompt[:cut], prompt[cut:]
    if not suffix:
        return None
    head = list(tokenizer(prefix, add_special_tokens=False)["input_ids"])
    tail = list(tokenizer(suffix, add_special_tokens=False)["input_ids"])
    if not tail or head + tail != ids:
        return None
    return Split(prefix, tuple(tail))


def image_digest(images: Sequence[Any]) -> str:
    """A digest of PIL images' sizes, modes and pixels: requests with equal digests show the
    same images."""
    h = hashlib.blake2b(digest_size=16)
    for im in images:
        h.update(f"{im.size}{im.mode}".encode())
        h.update(im.tobytes())
    return h.hexdigest()


@dataclass(frozen=True)
class Chunk:
    """One batch: groups of item indices; ``shared`` when each group runs one prefix pass."""

    groups: tuple[tuple[int, ...], ...]
    shared: bool

    @property
    def indices(self) -> list[int]:
        """The chunk's items in the order their results come back."""
        return [i for g in self.groups for i in g]


def plan_chunks(
    lengths: Sequence[int],
    group_keys: Sequence[str | None],
    batch_size: int,
) -> list[Chunk]:
    """Batches of items ``0 .. n-1``: items with the same group key (None: not shared) in
    one group, groups ordered by their length, then batched whole up to ``batch_size`` rows;
    unshared items (and groups of one: a split would only add a pass) ordered by ``lengths``
    and batched ``batch_size`` at a time."""
    groups: dict[str, list[int]] = {}
    plain: list[int] = []
    for i, key in enumerate(group_keys):
        if key is None:
            plain.append(i)
        else:
            groups.setdefault(key, []).append(i)
    plain += [g[0] for g in groups.values() if len(g) == 1]  # nothing to share: one pass
    shared = [g for g in groups.values() if len(g) > 1]
    chunks: list[Chunk] = []
    current: list[tuple[int, ...]] = []
    for members in sorted(shared, key=lambda g: (min(lengths[i] for i in g), g[0])):
        group = tuple(sorted(members, key=lambda i: (lengths[i], i)))
        if current and sum(map(len, current)) + len(group) > batch_size:
            chunks.append(Chunk(tuple(current), True))
            current = []
        current.append(group)
    if current:
        chunks.append(Chunk(tuple(current), True))
    plain.sort(key=lambda i: (lengths[i], i))
    for start in range(0, len(plain), batch_size):
        chunks.append(Chunk(tuple((i,) for i in plain[start : start + batch_size]), False))
    return chunks


def suffix_batch(
    prefix: Batch, rows: torch.Tensor, suffixes: Sequence[Sequence[int]], pad: int
) -> tuple[Batch, torch.Tensor, torch.Tensor]:
    """The batch of ``rows`` of the prefix batch each continued by its suffix (suffixes
    left-padded among themselves), with the suffix ids and their positions to feed."""
    device = prefix.input_ids.device
    width = max(len(s) for s in suffixes)
    ids = torch.tensor([[pad] * (width - len(s)) + list(s) for s in suffixes], device=device)
    mask = torch.tensor(
        [[0] * (width - len(s)) + [1] * len(s) for s in suffixes], device=device
    ).to(prefix.attention_mask.dtype)
    start = prefix.next_position[rows]
    pos = start[:, None] + (mask.long().cumsum(-1) - 1).clamp(min=0)
    if prefix.position_ids.ndim == 3:
        pos = pos[None].expand(3, *pos.shape)
    batch = Batch(
        torch.cat([prefix.input_ids[rows], ids], dim=1),
        torch.cat([prefix.attention_mask[rows], mask], dim=1),
        torch.cat([prefix.position_ids.index_select(-2, rows), pos], dim=-1),
        start + mask.long().sum(-1),
    )
    return batch, ids, pos


@torch.inference_mode()
def run_groups(
    backend: ChunkRunner, items: Sequence[Sequence[WorkItem]], splits: Sequence[Sequence[Split]]
) -> list[WorkOut]:
    """Every item's output, each group's prefix computed once (one row per group) and forked
    to its items' suffixes; outputs in group order."""

    firsts = [group[0] for group in items]
    prefix = backend.inputs.encode([s[0].prefix for s in splits], [i.images for i in firsts]).to(
        backend.device, backend.dtype
    )
    out = backend._forward(
        input_ids=prefix.input_ids,
        attention_mask=prefix.attention_mask,
        position_ids=prefix.position_ids,
        use_cache=True,
        logits_to_keep=1,
        **prefix.model_inputs,
    )
    rows = torch.tensor([g for g, group in enumerate(items) for _ in group], device=backend.device)
    flat = [i for group in items for i in group]
    suffixes = [s.suffix_ids for group in splits for s in group]
    batch, ids, pos = suffix_batch(prefix, rows, suffixes, int(backend.tokenizer.pad_token_id))
    out = backend._forward(
        input_ids=ids,
        attention_mask=batch.attention_mask,
        position_ids=pos,
        cache=fork_cache(past_cache(out), rows),
        use_cache=True,
        logits_to_keep=1,
    )
    return backend._read(flat, batch, out)
