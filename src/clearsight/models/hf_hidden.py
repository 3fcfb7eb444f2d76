"""Masked scoring for the ``hf`` backend (:meth:`HfBackend.score_hidden`), one pass per row.

A :class:`~clearsight.models.base.HiddenRequest` is a conversation whose last (assistant)
message ends at the slot, the candidates scored there, and character ranges of that message to
hide. Trajectory grounding (docs/methods.md §5) reads its confidence this way.

**In context, one forward pass per request.** Candidates are tokenized *in context* (the tokens
that ``prompt + c`` adds to ``prompt``), so whatever the tokenizer does with the space before a
numeral is respected. The conditional distributions that multi-token candidates need (after "1"
for "10" with digit-splitting tokenizers such as SmolLM2's) are read from the same pass by
appending the candidates' shared token path after the slot: the logits at the slot give p(t1),
the logits at the appended tokens give p(t2 | t1) and the end probabilities. That needs the
multi-token candidates to lie on one path (true of every tokenizer that splits digits);
otherwise, or when the slot and a candidate merge into one token, or two candidates tokenize
alike, the request fails with the reason.

**Hiding.** The character ranges are mapped to the tokens that overlap them
(:meth:`HfBackend.hidden_token_ranges`); a share ``r`` of those tokens, drawn from a generator
seeded by the request's seed (:func:`hidden_subset`), is removed from the attention of every
later position — the appended path included — with positions kept, through the backend's 4-D
mask (:func:`clearsight.models.hf_mask.hiding_mask`).

**Shared prefixes.** Rows of one conversation prefix (the messages before the last) shared by
at least :data:`MIN_SHARED_ROWS` rows compute that prefix once
(:meth:`HfBackend.forward_with_prefix`, its KV cache forked to every row) and then every row's
remaining tokens: two calls for the chunk instead of one long one. The prefix ends before the
first hidden token of any row, so no prefix position ever reads a hidden one and the result
equals the one-call path's.

Nothing here imports torch at import time (the read-out from log-probabilities,
:func:`row_scores`, is plain numpy); the passes import it when they run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from clearsight.execute import progress
from clearsight.models.base import HiddenRequest, HiddenScores, Request, RequestFailedError
from clearsight.seeding import rng_for
from clearsight.validate import InputError

if TYPE_CHECKING:
    import torch

    from clearsight.models.hf_inputs import Batch, ChatInputs

Seq = tuple[int, ...]
Scored = HiddenScores | RequestFailedError

#: Rows that must share a conversation prefix before it is computed once for them (below it,
#: one plain batched call is cheaper than a prefix call plus a rows call).
MIN_SHARED_ROWS = 3
#: The random stream of the hidden subset; its name is kept from when trajectory grounding drew
#: the subset itself, so the masks of earlier runs (and their records) are drawn again.
HIDE_STREAM = "grounding.elicit.mask"


class Host(Protocol):
    """What masked scoring needs of the backend (:class:`~clearsight.models.hf_backend.HfBackend`
    offers it)."""

    tokenizer: Any
    inputs: ChatInputs

    def prompt_text(self, request: Request) -> str: ...

    def hidden_token_ranges(
        self, request: Request, hide: Sequence[tuple[int, int]]
    ) -> list[tuple[int, int]]: ...

    def encode(self, requests: Sequence[Request]) -> Batch: ...

    def forward_with_mask(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        position_ids: torch.Tensor,
        logits_to_keep: int = 0,
        **model_inputs: torch.Tensor,
    ) -> torch.Tensor: ...

    def forward_with_prefix(
        self,
        prefix: Sequence[int],
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        position_ids: torch.Tensor,
        logits_to_keep: int,
    ) -> torch.Tensor: ...


@dataclass
class Prepared:
    """A request ready to run: its candidates' token sequences in context, their shared path,
    and the hidden token runs (in the unpadded input ids)."""

    request: Request
    seqs: tuple[Seq, ...]
    path: Seq
    hidden: list[tuple[int, int]] = field(default_factory=list)
    n_hidden: int = 0


def candidate_sequences(host: Host, prompt: str, candidates: Sequence[str]) -> tuple[Seq, ...]:
    """The token sequence each of ``candidates`` adds to ``prompt`` (in context).

    Raises InputError when a candidate merges with the end of the prompt, adds no token, or two
    candidates tokenize alike (a tokenizer that cannot spell them apart).
    """
    base, _ = host.inputs.plain_tokens(prompt)
    seqs: list[Seq] = []
    for k in candidates:
        ids, _ = host.inputs.plain_tokens(prompt + k)
        if ids[: len(base)] != base:
            raise InputError(
                f"the tokenizer merges numeral {k!r} with the text before the confidence slot"
            )
        seq = tuple(ids[len(base) :])
        if not seq:
            raise InputError(f"numeral {k!r} adds no token at the confidence slot")
        seqs.append(seq)
    if len(set(seqs)) < len(seqs):
        n = len(seqs)
        same = [
            (candidates[i], candidates[j])
            for i in range(n)
            for j in range(i + 1, n)
            if seqs[i] == seqs[j]
        ]
        raise InputError(f"the tokenizer spells numerals alike at the slot: {same[:3]}")
    unk = getattr(host.tokenizer, "unk_token_id", None)
    if unk is not None and any(unk in s for s in seqs):
        raise InputError("the tokenizer has no token for some numerals (unknown token)")
    return tuple(seqs)


def shared_path(seqs: Sequence[Seq]) -> Seq:
    """The one token path whose prefixes give every conditional distribution ``seqs`` need.

    A candidate of m tokens needs the distributions after its first 1..m-1 tokens, and one
    that is a token prefix of another needs the distribution after itself (its end
    probability). All of those prefixes must lie on one path; InputError otherwise.
    """
    needed: set[Seq] = set()
    for s in seqs:
        needed.update(s[:j] for j in range(1, len(s)))
    path: Seq = max(needed, key=len) if needed else ()
    stray = sorted(p for p in needed if path[: len(p)] != p)
    if stray:
        raise InputError(
            f"the numerals split into tokens along more than one path ({path} and {stray[0]}); "
            "one forward pass cannot score them"
        )
    return path


def hidden_subset(tokens: Sequence[int], share: float, seed: int) -> list[int]:
    """The token indices hidden: ``round(share * n)`` of the ``n`` distinct ``tokens``, drawn
    without replacement by a generator seeded from (:data:`HIDE_STREAM`, ``seed``, ``share``);
    all of them, sorted, when that is every one."""
    idx = sorted(set(tokens))
    k = round(share * len(idx))
    if k < len(idx):
        rng = rng_for(HIDE_STREAM, seed, share)
        idx = sorted(int(i) for i in rng.choice(idx, size=k, replace=False))
    return idx


def _slot_offset(prompt: str, content: str) -> int:
    """Where the last message's text starts in the rendered ``prompt`` (the prompt ends with
    it, trailing whitespace aside); InputError when the chat template puts anything after it."""
    if prompt.endswith(content):
        return len(prompt) - len(content)
    if content.rstrip() and prompt.endswith(content.rstrip()):
        return len(prompt) - len(content.rstrip())
    raise InputError("the chat template does not end the prompt with the trajectory message")


def prepare(host: Host, hr: HiddenRequest) -> Prepared:
    """``hr`` tokenized: its candidates in context, their shared path, the tokens it hides."""
    request = Request(hr.messages, candidates=hr.candidates, generate=False)
    prompt = host.prompt_text(request)
    offset = _slot_offset(prompt, hr.messages[-1].text)
    seqs = candidate_sequences(host, prompt, hr.candidates)
    prep = Prepared(request, seqs, shared_path(seqs))
    ranges = [(s + offset, min(e + offset, len(prompt))) for s, e in hr.hide if e > s]
    if ranges and hr.share > 0:
        tok_ranges = host.hidden_token_ranges(request, ranges)
        idx = hidden_subset([i for s, e in tok_ranges for i in range(s, e)], hr.share, hr.seed)
        prep.hidden = runs(idx)
        prep.n_hidden = len(idx)
    return prep


def runs(idx: Sequence[int]) -> list[tuple[int, int]]:
    """Sorted token indices as half-open runs of consecutive indices."""
    out: list[tuple[int, int]] = []
    for i in idx:
        if out and out[-1][1] == i:
            out[-1] = (out[-1][0], i + 1)
        else:
            out.append((i, i + 1))
    return out


def score_hidden(host: Host, requests: Sequence[HiddenRequest], batch_size: int) -> list[Scored]:
    """The scores of each request, ``batch_size`` rows to a forward call; a request that
    cannot be scored fails alone (:class:`RequestFailedError` with the reason)."""
    prepared: list[Prepared | RequestFailedError] = []
    for hr in requests:
        try:
            prepared.append(prepare(host, hr))
        except InputError as exc:
            prepared.append(RequestFailedError(str(exc), 1))
    out: list[Scored] = [
        p if isinstance(p, RequestFailedError) else RequestFailedError("not run", 1)
        for p in prepared
    ]
    todo = [i for i, p in enumerate(prepared) if isinstance(p, Prepared)]
    scored = 0
    for chunk, share in chunks(prepared, todo, batch_size):
        preps = [p for i in chunk if isinstance(p := prepared[i], Prepared)]
        results = run_shared(host, preps) if share else None
        for i, result in zip(chunk, results or run_chunk(host, preps), strict=True):
            out[i] = result
        scored += len(chunk)
        progress.report(scored, len(todo))
    return out


def chunks(
    prepared: Sequence[Prepared | RequestFailedError], todo: Sequence[int], size: int
) -> list[tuple[list[int], bool]]:
    """Rows in chunks of at most ``size``, with whether the chunk shares one conversation prefix
    (the messages before the last). Rows of a prefix shared by at least
    :data:`MIN_SHARED_ROWS` rows go together and compute the prefix once (two calls per chunk);
    the others fill plain batches (one call per chunk)."""
    groups: dict[tuple[Any, ...], list[int]] = {}
    for i in todo:
        p = prepared[i]
        assert isinstance(p, Prepared)
        groups.setdefault(p.request.messages[:-1], []).append(i)
    out: list[tuple[list[int], bool]] = []
    plain: list[int] = []
    for g in groups.values():
        if len(g) < MIN_SHARED_ROWS:
            plain += g
            continue
        # a chunk of fewer rows (batch_size 1, the remainder) is cheaper as one plain call
        out += [
            (c, len(c) >= MIN_SHARED_ROWS)
            for c in (g[s : s + size] for s in range(0, len(g), size))
        ]
    out += [(plain[s : s + size], False) for s in range(0, len(plain), size)]
    return out


def _shared_length(rows: Sequence[Sequence[int]], preps: Sequence[Prepared]) -> int:
    """How many leading tokens every row shares, short of each row's last token and of the
    first hidden token of any row."""
    shared = min(len(r) for r in rows) - 1
    for r in rows[1:]:
        shared = min(
            shared,
            next((j for j, (a, b) in enumerate(zip(rows[0], r, strict=False)) if a != b), shared),
        )
    for p in preps:
        if p.hidden:
            shared = min(shared, p.hidden[0][0])
    return shared


def run_shared(host: Host, preps: Sequence[Prepared]) -> list[Scored] | None:
    """Two forward calls for rows that share a token prefix: the prefix once, then every row's
    remaining tokens and candidate path, left-padded, under the hiding mask (module
    docstring). None (use :func:`run_chunk`) for image inputs, rows whose paths differ in
    length, or a shared prefix too short to be worth a call."""
    import torch

    from clearsight.models.hf_mask import hiding_mask

    if host.inputs.images or len({len(p.path) for p in preps}) > 1:
        return None
    rows = [host.encode([p.request]).input_ids[0].tolist() for p in preps]
    shared = _shared_length(rows, preps)
    if shared < 8:
        return None
    tails = [r[shared:] + list(p.path) for r, p in zip(rows, preps, strict=True)]
    width = max(len(t) for t in tails)
    pad_id = int(host.tokenizer.pad_token_id)
    ids = torch.tensor([[pad_id] * (width - len(t)) + t for t in tails])
    real = torch.tensor([[0] * (width - len(t)) + [1] * len(t) for t in tails])
    pos = (real.cumsum(-1) - 1).clamp(min=0) + shared
    hidden = [
        [(s - shared + width - len(t), e - shared + width - len(t)) for s, e in p.hidden]
        for t, p in zip(tails, preps, strict=True)
    ]
    seen = torch.ones((len(preps), 1, width, shared), dtype=torch.bool)
    mask = torch.cat([seen, hiding_mask(real, hidden)], dim=3)
    logits = host.forward_with_prefix(rows[0][:shared], ids, mask, pos, len(preps[0].path) + 1)
    logp = torch.log_softmax(logits, dim=-1).cpu().numpy().astype(np.float64)
    return [row_scores(host, p, logp[b], len(rows[b])) for b, p in enumerate(preps)]


def _with_paths(
    host: Host, preps: Sequence[Prepared], batch: Batch, prompt_mask: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The batch's ids, 4-D mask and positions with each row's candidate path appended (right
    padded); the appended tokens see what the slot sees, and each other causally."""
    import torch

    from clearsight.models.hf_inputs import continued_positions
    from clearsight.models.hf_mask import continuation_mask

    ids, pos = batch.input_ids, batch.position_ids
    q, width = max(len(p.path) for p in preps), ids.shape[1]
    pad_id = int(host.tokenizer.pad_token_id)
    feed = torch.tensor(
        [list(p.path) + [pad_id] * (q - len(p.path)) for p in preps], device=ids.device
    )
    real = torch.tensor(
        [[1] * len(p.path) + [0] * (q - len(p.path)) for p in preps], device=ids.device
    )
    visible = prompt_mask[:, 0, -1, :].clone()  # what the slot sees, also seen after it
    cont = continuation_mask(visible, real)
    top = torch.cat(
        [prompt_mask, torch.zeros((len(preps), 1, width, q), dtype=torch.bool, device=ids.device)],
        dim=3,
    )
    extra = continued_positions(batch.next_position, q, host.inputs.mrope)
    return (
        torch.cat([ids, feed], dim=1),
        torch.cat([top, cont], dim=2),
        torch.cat([pos, extra.to(pos.device)], dim=-1),
    )


def run_chunk(host: Host, preps: Sequence[Prepared]) -> list[Scored]:
    """One forward call for ``preps``: prompts left-padded, each row's candidate path
    appended."""
    import torch

    from clearsight.models.hf_mask import hiding_mask

    batch = host.encode([p.request for p in preps])
    width = batch.input_ids.shape[1]
    lengths = batch.lengths
    hidden = [
        [(s + width - n, e + width - n) for s, e in p.hidden]
        for p, n in zip(preps, lengths, strict=True)
    ]
    mask = hiding_mask(batch.attention_mask, hidden)
    ids, pos, q = batch.input_ids, batch.position_ids, max(len(p.path) for p in preps)
    if q:
        ids, mask, pos = _with_paths(host, preps, batch, mask)
    logits = host.forward_with_mask(ids, mask, pos, logits_to_keep=q + 1, **batch.model_inputs)
    logp = torch.log_softmax(logits, dim=-1).cpu().numpy().astype(np.float64)
    return [row_scores(host, p, logp[b], lengths[b]) for b, p in enumerate(preps)]


def row_scores(
    host: Host, p: Prepared, logp: np.ndarray[Any, Any], prompt_tokens: int
) -> HiddenScores | RequestFailedError:
    """The scores of one row from its log-probs at the slot (row 0) and after each token of its
    appended path (row j after j tokens); a failure with the reason where the log-probabilities
    hold NaN or values above 0 (broken logits)."""
    if np.isnan(logp).any() or (logp > 0).any():
        reason = "its log-probabilities hold NaN or values above 0"
        return RequestFailedError(f"unreadable output of the model: {reason}", 1)
    seq_p: dict[str, float] = {}
    end_p: dict[str, float] = {}
    cands = p.request.candidates
    for k, s in zip(cands, p.seqs, strict=True):
        lp = sum(float(logp[j, t]) for j, t in enumerate(s))
        seq_p[k] = float(np.exp(lp))
        nexts = sorted({o[len(s)] for o in p.seqs if len(o) > len(s) and o[: len(s)] == s})
        if nexts:
            end_p[k] = max(0.0, 1.0 - float(np.exp(logp[len(s), nexts]).sum()))
        elif any(o != k and o.startswith(k) for o in cands):
            end_p[k] = 1.0  # "10" is its own token here: "1" followed by it is not "10"
    top = np.argsort(-logp[0])[:5]
    tops = tuple((str(host.tokenizer.decode([int(t)])), float(np.exp(logp[0, t]))) for t in top)
    return HiddenScores(seq_p, end_p, p.seqs, p.n_hidden, prompt_tokens, tops)
