"""Candidate probabilities from top-k log-probabilities: what an API backend (OpenAI-compatible,
vLLM) can see of a next-token distribution.

Candidates are matched on the token text with whitespace stripped (``"A"`` and ``" A"`` both
count for ``A``); a candidate outside the top-k gets 0 and the mass the top-k does not cover is
*recorded* as ``uncovered_mass``, never spread over the candidates.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from clearsight.validate import InputError

#: How far above 0 a log-probability may be as float32 rounding of a log-softmax (what a server
#: computes); anything beyond is not a log-probability. Such a value counts as 0 (probability 1).
LOGPROB_SLACK = 1e-6
#: Word-boundary markers some tokenizers leave in token strings (SentencePiece ``▁``, byte-level
#: BPE ``Ġ``); servers normally decode them to a space, but a raw token list may still hold them.
_TOKEN_MARKERS = "\u2581\u0120"
#: How far above 1 a top-k list may sum before it is rejected as not one distribution's
#: log-probabilities (float32 log-softmax rounding stays far below this).
_MASS_SLACK = 1e-3


def token_text(token: str) -> str:
    """The text a token stands for when matched against a candidate: whitespace and
    word-boundary markers stripped, case kept (``"a"`` the article is not option ``A``)."""
    return token.strip().strip(_TOKEN_MARKERS).strip()


def candidate_probs_from_top_logprobs(
    top: Iterable[tuple[str, float]], candidates: Sequence[str]
) -> tuple[dict[str, float], float]:
    """``(candidate probabilities, uncovered mass)`` from one position's top-k log-probabilities.

    ``top`` holds ``(token text, log-probability)`` for distinct tokens (the top-k, possibly
    plus the sampled token). A candidate's probability is the sum of ``exp(logprob)`` over the
    tokens whose :func:`token_text` equals the candidate's (so ``"A"`` and ``" A"`` add up);
    a candidate among none of them gets 0. The uncovered mass ``1 - sum(exp(logprob))`` is the
    probability of every token the list does not show — some of it may belong to a candidate,
    so it is recorded for the analysis and never spread over the candidates. A candidate is
    matched as one token: a candidate that spans several tokens is not scored here. Float32
    rounding is tolerated, never passed on: a log-probability up to :data:`LOGPROB_SLACK` above 0
    counts as 0, a total up to 1e-3 above 1 is accepted and a candidate's probability is at
    most 1 (every probability returned is in [0, 1], as :mod:`clearsight.models.replies` checks).
    """
    wanted = {c: token_text(c) for c in candidates}
    probs = dict.fromkeys(candidates, 0.0)
    covered = 0.0
    for token, logprob in top:
        lp = float(logprob)
        if math.isnan(lp) or lp > LOGPROB_SLACK:
            raise InputError(f"log-probability of token {token!r} must be <= 0, got {logprob!r}")
        p = math.exp(min(lp, 0.0))
        covered += p
        text = token_text(token)
        for cand, cand_text in wanted.items():
            if text == cand_text:
                probs[cand] += p
    if covered > 1 + _MASS_SLACK:
        raise InputError(
            f"top-k probabilities sum to {covered:.6f} > 1: not the log-probabilities of one "
            "next-token distribution"
        )
    # within the slack, a candidate whose tokens add up past 1 is rounding: it holds all the mass
    return {c: min(p, 1.0) for c, p in probs.items()}, max(0.0, 1.0 - covered)
