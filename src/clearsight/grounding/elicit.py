"""Confidence elicitation: the 11-way numeral distribution at the confidence slot, one pass.

A request is a conversation whose last (assistant) turn is a trajectory that ends exactly at the
confidence slot ("... Confidence (0-10): "). The read-out (docs/methods.md §5) is the distribution
over the numerals 0..10 as whole sequences at that slot,

    p("k") = p(t1) p(t2 | t1) ... p(tm | t1..tm-1)   [ x p(end | "k") where "k" prefixes another ]

renormalised over the 11 (:func:`clearsight.grounding.numerals.numeral_distribution`), and the
expected confidence ``E = sum_k p_k k/10``.

**One forward pass per request.** Numerals are tokenized *in context* (the tokens that
``prompt + "k"`` adds to ``prompt``), so whatever the tokenizer does with the space before a
numeral is respected. The conditional distributions that multi-token numerals need (after "1"
for "10" with digit-splitting tokenizers such as SmolLM2's) are read from the same pass by
appending the numerals' shared token path after the slot: the logits at the slot give p(t1), the
logits at the appended tokens give p(t2 | t1) and the end probabilities. That needs the
multi-token numerals to lie on one path (true of every tokenizer that splits digits); otherwise,
or when the slot and a numeral merge into one token, or two numerals tokenize alike, the request
fails with the reason (:class:`ElicitFailure`).

**Hiding** (TGS-self, masking curve): character ranges of the trajectory are mapped to the
tokens that overlap them (:meth:`HfBackend.hidden_token_ranges`); a share ``r`` of those tokens,
drawn from a generator seeded by the request's seed, is removed from the attention of every later
position — the appended path included — with positions kept, through the backend's 4-D mask
(:func:`clearsight.models.hf_mask.hiding_mask`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from clearsight.grounding.numerals import NUMERALS, numeral_distribution
from clearsight.models.base import Message, Request
from clearsight.seeding import rng_for
from clearsight.validate import InputError

if TYPE_CHECKING:
    from clearsight.models.hf_backend import HfBackend

Seq = tuple[int, ...]

#: Rows that must share a conversation prefix before it is computed once for them (below it,
#: one plain batched call is cheaper than a prefix call plus a rows call).
MIN_SHARED_ROWS = 3


@dataclass(frozen=True)
class ElicitRequest:
    """One elicitation.

    ``messages``: the conversation; its last message is the assistant's trajectory ending at the
    confidence slot. ``hide``: character ranges ``[start, end)`` *of that last message's text*
    whose tokens are hidden from every later position. ``share``: the share of those tokens
    hidden (1 = all; the masking curve's r), drawn with a generator seeded from ``seed``.
    """

    messages: tuple[Message, ...]
    hide: tuple[tuple[int, int], ...] = ()
    share: float = 1.0
    seed: int = 0
    candidates: tuple[str, ...] = NUMERALS
    """The strings scored at the slot (a calibration read-out's own: 0-9, True/False, ...)."""
    values: tuple[float, ...] | None = None
    """The confidence each candidate stands for (default k/10 for the numerals 0..10)."""

    def __post_init__(self) -> None:
        if not self.messages or self.messages[-1].role != "assistant":
            raise InputError("an elicitation ends with the assistant's trajectory message")
        if not 0.0 <= self.share <= 1.0:
            raise InputError(f"share of hidden tokens must be in [0, 1], got {self.share}")


@dataclass(frozen=True)
class Elicited:
    """The read-out of one request: ``raw``/``mass``/``probs``/``expected`` as in
    :class:`clearsight.sweep.readouts.NumeralReadout`, the numerals' in-context token sequences, how
    many tokens were hidden, the prompt length, and the most likely tokens at the slot. ``raw``
    and ``probs`` are over the request's candidates, in its order."""

    raw: tuple[float, ...]
    mass: float
    probs: tuple[float, ...] | None
    expected: float | None
    numeral_tokens: tuple[Seq, ...]
    hidden_tokens: int
    prompt_tokens: int
    top_tokens: tuple[tuple[str, float], ...] = ()

    def to_json(self) -> dict[str, Any]:
        """JSON-able raw output for the store."""
        return {
            "raw": list(self.raw),
            "mass": self.mass,
            "probs": None if self.probs is None else list(self.probs),
            "expected": self.expected,
            "numeral_tokens": [list(s) for s in self.numeral_tokens],
            "hidden_tokens": self.hidden_tokens,
            "prompt_tokens": self.prompt_tokens,
            "top_tokens": [list(t) for t in self.top_tokens],
        }


@dataclass(frozen=True)
class ElicitFailure:
    """A request that cannot be elicited, with the reason (stored as a failed record)."""

    reason: str


@dataclass
class _Prepared:
    request: Request
    values: tuple[float, ...] | None
    seqs: tuple[Seq, ...]
    path: Seq
    hidden: list[tuple[int, int]] = field(default_factory=list)
    n_hidden: int = 0


def numeral_sequences(
    backend: HfBackend, prompt: str, candidates: Sequence[str] = NUMERALS
) -> tuple[Seq, ...]:
    """The token sequence each numeral 0..10 (or each of ``candidates``) adds to ``prompt``
    (in context).

    Raises InputError when a numeral merges with the end of the prompt, adds no token, or two
    numerals tokenize alike (a tokenizer that cannot spell the numerals apart).
    """
    base, _ = backend.inputs.plain_tokens(prompt)
    seqs: list[Seq] = []
    for k in candidates:
        ids, _ = backend.inputs.plain_tokens(prompt + k)
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
    unk = getattr(backend.tokenizer, "unk_token_id", None)
    if unk is not None and any(unk in s for s in seqs):
        raise InputError("the tokenizer has no token for some numerals (unknown token)")
    return tuple(seqs)


def shared_path(seqs: Sequence[Seq]) -> Seq:
    """The one token path whose prefixes give every conditional distribution ``seqs`` need.

    A numeral of m tokens needs the distributions after its first 1..m-1 tokens, and one that is
    a token prefix of another needs the distribution after itself (its end probability). All
    of those prefixes must lie on one path; InputError otherwise.
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


def _prepare(backend: HfBackend, er: ElicitRequest) -> _Prepared:
    request = Request(er.messages, candidates=er.candidates, generate=False)
    prompt = backend.prompt_text(request)
    content = er.messages[-1].text
    if prompt.endswith(content):
        offset = len(prompt) - len(content)
    elif content.rstrip() and prompt.endswith(content.rstrip()):
        offset = len(prompt) - len(content.rstrip())
    else:
        raise InputError("the chat template does not end the prompt with the trajectory message")
    seqs = numeral_sequences(backend, prompt, er.candidates)
    path = shared_path(seqs)
    prep = _Prepared(request, er.values, seqs, path)
    ranges = [(s + offset, min(e + offset, len(prompt))) for s, e in er.hide if e > s]
    if ranges and er.share > 0:
        tok_ranges = backend.hidden_token_ranges(request, ranges)
        idx = sorted({i for s, e in tok_ranges for i in range(s, e)})
        k = round(er.share * len(idx))
        if k < len(idx):
            rng = rng_for("grounding.elicit.mask", er.seed, er.share)
            idx = sorted(int(i) for i in rng.choice(idx, size=k, replace=False))
        prep.hidden = _runs(idx)
        prep.n_hidden = len(idx)
    return prep


def _runs(idx: Sequence[int]) -> list[tuple[int, int]]:
    """Sorted token indices as half-open runs of consecutive indices."""
    out: list[tuple[int, int]] = []
    for i in idx:
        if out and out[-1][1] == i:
            out[-1] = (out[-1][0], i + 1)
        else:
            out.append((i, i + 1))
    return out


def elicit(
    backend: HfBackend, requests: Sequence[ElicitRequest], batch_size: int | None = None
) -> list[Elicited | ElicitFailure]:
    """The numeral read-out of each request; a request that cannot be read fails alone.

    Requests are run ``batch_size`` (default: the backend's) to a forward call, each as one row.
    """
    prepared: list[_Prepared | ElicitFailure] = []
    for er in requests:
        try:
            prepared.append(_prepare(backend, er))
        except InputError as exc:
            prepared.append(ElicitFailure(str(exc)))
    todo = [i for i, p in enumerate(prepared) if isinstance(p, _Prepared)]
    out: list[Elicited | ElicitFailure] = [
        p if isinstance(p, ElicitFailure) else ElicitFailure("not run") for p in prepared
    ]
    size = batch_size or backend.options.batch_size
    for chunk, share in _chunks(prepared, todo, size):
        preps = [p for i in chunk if isinstance(p := prepared[i], _Prepared)]
        results = _run_shared(backend, preps) if share else None
        for i, result in zip(chunk, results or _run_chunk(backend, preps), strict=True):
            out[i] = result
    return out


def _chunks(
    prepared: Sequence[_Prepared | ElicitFailure], todo: Sequence[int], size: int
) -> list[tuple[list[int], bool]]:
    """Rows in chunks of at most ``size``, with whether the chunk shares one conversation prefix
    (the messages before the trajectory). Rows of a prefix shared by at least
    :data:`MIN_SHARED_ROWS` rows go together and compute the prefix once (two calls per chunk);
    the others fill plain batches (one call per chunk)."""
    groups: dict[Any, list[int]] = {}
    for i in todo:
        p = prepared[i]
        assert isinstance(p, _Prepared)
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


def _run_shared(
    backend: HfBackend, preps: Sequence[_Prepared]
) -> list[Elicited | ElicitFailure] | None:
    """Two forward calls for rows that share a token prefix: the prefix once (its KV cache
    copied to every row), then every row's remaining tokens and numeral path, left-padded, under
    the hiding mask. The prefix ends before the first hidden token of any row, so no prefix
    position ever reads a hidden one: the result equals :func:`_run_chunk`'s. None (use
    :func:`_run_chunk`) for image inputs, rows whose numeral paths differ in length, or a
    shared prefix too short to be worth a call."""
    import torch

    from clearsight.models.hf_backend import _fork_cache
    from clearsight.models.hf_mask import additive, hiding_mask

    if backend.inputs.images or len({len(p.path) for p in preps}) > 1:
        return None
    rows = [backend.encode([p.request]).input_ids[0].tolist() for p in preps]
    shared = min(len(r) for r in rows) - 1
    for r in rows[1:]:
        shared = min(
            shared,
            next((j for j, (a, b) in enumerate(zip(rows[0], r, strict=False)) if a != b), shared),
        )
    for p in preps:
        if p.hidden:
            shared = min(shared, p.hidden[0][0])
    if shared < 8:
        return None
    device = backend.device
    prefix = torch.tensor([rows[0][:shared]], device=device)
    with torch.inference_mode():
        first = backend._forward(
            input_ids=prefix,
            attention_mask=torch.ones_like(prefix),
            position_ids=torch.arange(shared, device=device)[None],
            use_cache=True,
            logits_to_keep=1,
        )
        cache = getattr(first, "cache", None) or first.past_key_values
        q = len(preps[0].path)
        tails = [r[shared:] + list(p.path) for r, p in zip(rows, preps, strict=True)]
        width = max(len(t) for t in tails)
        pad_id = int(backend.tokenizer.pad_token_id)
        ids = torch.tensor([[pad_id] * (width - len(t)) + t for t in tails], device=device)
        real = torch.tensor([[0] * (width - len(t)) + [1] * len(t) for t in tails], device=device)
        pos = (real.cumsum(-1) - 1).clamp(min=0) + shared
        hidden = [
            [(s - shared + width - len(t), e - shared + width - len(t)) for s, e in p.hidden]
            for t, p in zip(tails, preps, strict=True)
        ]
        mask = hiding_mask(real, hidden)
        seen = torch.ones((len(preps), 1, width, shared), dtype=torch.bool, device=device)
        out = backend._forward(
            input_ids=ids,
            attention_mask=additive(torch.cat([seen, mask], dim=3), backend.dtype),
            position_ids=pos,
            cache=_fork_cache(cache, torch.zeros(len(preps), dtype=torch.long, device=device)),
            use_cache=True,
            logits_to_keep=q + 1,
        )
    logp = torch.log_softmax(out.logits.float(), dim=-1).cpu().numpy().astype(np.float64)
    return [_row(backend, p, logp[b], len(rows[b])) for b, p in enumerate(preps)]


def _run_chunk(backend: HfBackend, preps: Sequence[_Prepared]) -> list[Elicited | ElicitFailure]:
    """One forward call for ``preps``: prompts left-padded, each row's numeral path appended."""
    import torch

    from clearsight.models.hf_inputs import continued_positions
    from clearsight.models.hf_mask import continuation_mask, hiding_mask

    batch = backend.encode([p.request for p in preps])
    width = batch.input_ids.shape[1]
    lengths = batch.lengths
    hidden = [
        [(s + width - n, e + width - n) for s, e in p.hidden]
        for p, n in zip(preps, lengths, strict=True)
    ]
    prompt_mask = hiding_mask(batch.attention_mask, hidden)
    q = max(len(p.path) for p in preps)
    ids, mask, pos = batch.input_ids, prompt_mask, batch.position_ids
    if q:
        pad_id = int(backend.tokenizer.pad_token_id)
        feed = torch.tensor(
            [list(p.path) + [pad_id] * (q - len(p.path)) for p in preps], device=ids.device
        )
        real = torch.tensor(
            [[1] * len(p.path) + [0] * (q - len(p.path)) for p in preps], device=ids.device
        )
        visible = prompt_mask[:, 0, -1, :].clone()  # what the slot sees, also seen after it
        cont = continuation_mask(visible, real)
        top = torch.cat(
            [
                prompt_mask,
                torch.zeros((len(preps), 1, width, q), dtype=torch.bool, device=ids.device),
            ],
            dim=3,
        )
        ids = torch.cat([ids, feed], dim=1)
        mask = torch.cat([top, cont], dim=2)
        extra = continued_positions(batch.next_position, q, backend.inputs.mrope)
        pos = torch.cat([pos, extra.to(pos.device)], dim=-1)
    logits = backend.forward_with_mask(ids, mask, pos, logits_to_keep=q + 1, **batch.model_inputs)
    logp = torch.log_softmax(logits, dim=-1).cpu().numpy().astype(np.float64)
    return [_row(backend, p, logp[b], lengths[b]) for b, p in enumerate(preps)]


def _row(
    backend: HfBackend, p: _Prepared, logp: np.ndarray[Any, Any], prompt_tokens: int
) -> Elicited | ElicitFailure:
    """:func:`_readout` of one row, or why the model's numbers cannot be read there (that row's
    item fails alone, with the reason)."""
    try:
        return _readout(backend, p, logp, prompt_tokens)
    except InputError as exc:
        return ElicitFailure(f"unreadable output of the model: {exc}")


def _readout(
    backend: HfBackend, p: _Prepared, logp: np.ndarray[Any, Any], prompt_tokens: int
) -> Elicited:
    """Numeral probabilities of one row from its log-probs at the slot (row 0) and after each
    token of its appended path (row j after j tokens); InputError where the log-probabilities
    hold NaN or values above 0 (broken logits)."""
    if np.isnan(logp).any() or (logp > 0).any():
        raise InputError("its log-probabilities hold NaN or values above 0")
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
    r = numeral_distribution(seq_p, end_p, cands, p.values)
    top = np.argsort(-logp[0])[:5]
    tops = tuple((str(backend.tokenizer.decode([int(t)])), float(np.exp(logp[0, t]))) for t in top)
    return Elicited(
        raw=r.raw,
        mass=r.mass,
        probs=r.probs,
        expected=r.expected,
        numeral_tokens=p.seqs,
        hidden_tokens=p.n_hidden,
        prompt_tokens=prompt_tokens,
        top_tokens=tops,
    )
