r"""Uncertainty of Thoughts (Hu et al., 2024) as a search, adapted to VQA as the paper does.

The paper (§4.1) runs UoT with the prompt describing the VQA
setup instead of medical diagnosis. The possibility set :math:`\Omega` is the set of answer
options still possible (all of them at the start). Each turn that asks, the reasoner (every
call below goes to the conversation's own reasoner backend, with the prompts of
``prompts/uot.yaml``):

1. **proposes candidate questions**: ``candidates`` samples of one question each, given the
   options still possible and the exchanges so far;
2. **simulates replies**: for each candidate, ``replies`` samples of a reply the visual assistant
   might give;
3. **partitions the options**: for each simulated reply, which options of :math:`\Omega` it
   leaves possible, :math:`S_j \subseteq \Omega` (an unparsed answer leaves all of
   :math:`\Omega`: it adds no information to the score; recorded as unparsed); the options no
   simulated reply leaves possible form one more outcome, the reply nobody simulated, so every
   option stays reachable;
4. **scores each candidate** by UoT's uncertainty-based reward on the expected information gain
   and propagates rewards through a look-ahead of ``depth`` question levels (each simulated
   outcome with two or more options is expanded as in steps 1-3, its simulated exchange added
   to the history);
5. **asks the best candidate** and **updates** :math:`\Omega` to the options the *real* reply
   (shown with its consistency u/K) leaves possible, by the same partition prompt (unparsed, or
   leaving none: :math:`\Omega` is kept, and the turn says so).

**The stop rule** (:meth:`SearchSettings.stop`), checked before each search: with UoT's belief
uniform over :math:`\Omega`, the top option's posterior is :math:`1 / |\Omega|`; when it reaches
``commit_posterior`` the search stops — one option left is committed (the default 1.0 stops only
there, as clearsight's search always did), more are left to the reasoner, who answers from the
conversation (``answer`` prompt). It answers so too once ``max_queries`` questions have been
asked (the query budget), and on the last turn of the conversation's budget T. The default
budget of 10 queries is clearsight's reading, not a number the paper gives (its loop ends on a
commit, at its query budget T = 100 or at the context window, App. C): the paper reports
UoT's mean queries per conversation "reaching up to 9.8 queries for GPT-5-mini on SeedBench"
(its App. C), which a budget of 10 makes plausible and a commit only at one option left under
T = 100 does not.

The turn itself — proposing, simulating, partitioning through
the reasoner, asking, updating — is the strategy's
(:mod:`clearsight.probe.strategies.uot`); this module holds the settings, the scores, the tree
and the reading of a partition answer. The whole tree — candidates, simulated replies, their
partitions, probabilities, gains and rewards — is stored with the turn
(:attr:`~clearsight.probe.transcript.Turn.search`, in the shape of
:mod:`~clearsight.probe.reasoner.search_record`), so a reader sees why a question was asked.

**Scores** (UoT §2, "uncertainty-based reward" and "reward propagation"; reference code
``src/uot/uot.py``). With a uniform belief over :math:`\Omega`, outcome :math:`j` of a question
node :math:`v` has probability :math:`p_j = |S_j| / \sum_k |S_k|` (UoT's
:math:`p^A_v = |\Omega^A_v| / |\Omega_v|` when the outcomes split :math:`\Omega`), and the
expected information gain in bits is

.. math::

    IG(v) = \log_2 |\Omega| - \sum_j p_j \log_2 |S_j|,

which is :math:`-\sum_j p_j \log_2 p_j` for a partition (UoT's
:math:`-p^A_v \log_2 p^A_v - p^N_v \log_2 p^N_v` for yes/no). UoT's reward sharpens it towards
even splits with :math:`\lambda > 0` (``sharpness``, 0.4 in UoT's code):

.. math::

    R_u(v) = \frac{IG(v)}{1 + \lambda^{-1} (\max_j p_j - \min_j p_j)}

(the spread over outcomes of positive probability; :math:`|p^A_v - p^N_v|` for yes/no, so this
is UoT's :math:`R_u` exactly there). Rewards accumulate along a path,
:math:`R_a(v) = R_u(v) + R_a(\mathrm{parent}(v))`, and the expected reward of a question node
averages its answer nodes by :math:`p_j` and each answer node's candidate questions evenly
(UoT's ``avg``); a leaf's expected reward is its accumulated one. Both together are

.. math::

    R_e(v) = R_u(v) + \sum_j p_j \cdot \frac{1}{|C_j|} \sum_{w \in C_j} R_e(w),

:math:`C_j` the questions expanded under outcome :math:`j` (the sum term 0 where there are
none: at the depth limit, for one option left, for the unsimulated outcome). The candidate of
largest :math:`R_e` is asked (ties: the first proposed).

**Cost** (:meth:`SearchSettings.max_calls_per_query`): one expansion makes ``candidates`` +
2 x ``candidates`` x ``replies`` LLM requests (proposals, simulated replies, partitions); depth d
expands up to :math:`\sum_{l<d} (\mathrm{candidates} \cdot \mathrm{replies})^l` nodes; the
update after the real reply is one more request.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from clearsight.probe.reasoner.search_record import CandidateJson, OutcomeJson, SettingsJson


class SearchSettings(BaseModel):
    """The UoT search's shape: look-ahead ``depth`` (question levels), ``candidates`` proposed
    per expanded node, ``replies`` simulated per candidate, UoT's ``sharpness`` lambda and the
    most tokens of one proposal or simulated reply."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    depth: int = Field(1, ge=1, le=3, description="Look-ahead depth in question levels.")
    candidates: int = Field(3, ge=1, le=8, description="Candidate questions per node.")
    replies: int = Field(2, ge=1, le=6, description="Simulated replies per candidate.")
    sharpness: float = Field(0.4, gt=0, description="UoT's lambda (even-split preference).")
    max_new_tokens: int = Field(48, ge=8, description="Most tokens of a proposal or reply.")
    max_queries: int | None = Field(
        10,
        ge=1,
        description="The stop rule's query budget: after this many questions the reasoner "
        "answers from the conversation (None: only T ends it). 10 is clearsight's reading of "
        "the paper's largest UoT mean, 9.8 queries a conversation; the paper names no budget.",
    )
    commit_posterior: float = Field(
        1.0,
        gt=0.0,
        le=1.0,
        description="The stop rule's threshold: stop searching when the top option's posterior "
        "(1/|options still possible|, UoT's uniform belief) reaches it; 1.0 stops only when "
        "one option is left (committed), 0.5 lets the reasoner choose from two.",
    )

    def to_json(self) -> SettingsJson:
        """The settings as stored with a searched turn (the fields of :meth:`model_dump`)."""
        return {
            "depth": self.depth,
            "candidates": self.candidates,
            "replies": self.replies,
            "sharpness": self.sharpness,
            "max_new_tokens": self.max_new_tokens,
            "max_queries": self.max_queries,
            "commit_posterior": self.commit_posterior,
        }

    def statement(self) -> str:
        """The search's shape and stop rule as the manifest and the report name them (all
        clearsight's reading: the paper names neither)."""
        budget = "T" if self.max_queries is None else f"{self.max_queries} queries"
        return (
            "UoT search (clearsight's reading; the paper names no UoT search shape or stop rule): "
            f"depth {self.depth}, {self.candidates} candidate questions, {self.replies} "
            f"simulated replies each; stops when the top option's posterior reaches "
            f"{self.commit_posterior:g} or after {budget}"
        )

    def stop(self, possible: int, asked: int) -> str | None:
        """Why the search stops before a turn with ``possible`` options still possible and
        ``asked`` questions asked (None: it searches on): the top option's posterior
        ``1 / possible`` at or above ``commit_posterior``, or the query budget spent."""
        if 1.0 / possible >= self.commit_posterior:
            return f"top posterior 1/{possible} reached {self.commit_posterior:g}"
        if self.max_queries is not None and asked >= self.max_queries:
            return f"query budget of {self.max_queries} spent"
        return None

    @property
    def calls_per_expansion(self) -> int:
        """LLM requests of one expanded node: proposals, simulated replies, partitions."""
        return self.candidates + 2 * self.candidates * self.replies

    def max_calls_per_query(self) -> int:
        """The most LLM requests behind one question asked: every node of the look-ahead
        expanded, plus the update from the real reply (fewer when outcomes are left with one
        option, proposals repeat or fail to parse)."""
        nodes = sum((self.candidates * self.replies) ** level for level in range(self.depth))
        return nodes * self.calls_per_expansion + 1


# --------------------------------------------------------------------------------------------
# Scores
# --------------------------------------------------------------------------------------------


def outcome_probabilities(sets: Sequence[Sequence[str]]) -> list[float]:
    """:math:`p_j = |S_j| / \\sum_k |S_k|` under a uniform belief (all 0 when every set is
    empty)."""
    total = sum(len(s) for s in sets)
    return [len(s) / total if total else 0.0 for s in sets]


def information_gain(possible: Sequence[str], sets: Sequence[Sequence[str]]) -> float:
    """Expected information gain in bits, :math:`\\log_2|\\Omega| - \\sum_j p_j \\log_2 |S_j|`
    (module docstring): 1 bit for four options split two and two."""
    if not possible:
        return 0.0
    probs = outcome_probabilities(sets)
    rest = sum(p * math.log2(len(s)) for p, s in zip(probs, sets, strict=True) if p > 0)
    return math.log2(len(possible)) - rest


def uot_reward(probabilities: Sequence[float], gain: float, sharpness: float) -> float:
    """UoT's uncertainty-based reward :math:`IG / (1 + \\lambda^{-1}(\\max_j p_j - \\min_j
    p_j))` over the outcomes of positive probability (module docstring)."""
    positive = [p for p in probabilities if p > 0]
    if not positive:
        return 0.0
    return gain / (1.0 + (max(positive) - min(positive)) / sharpness)


# --------------------------------------------------------------------------------------------
# The tree
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """An answer node: a simulated ``reply`` (None: the reply nobody simulated), the options it
    leaves ``possible``, its probability, the partition call's ``raw`` text and whether it
    ``parsed``, and the questions expanded under it (``children``)."""

    reply: str | None
    possible: tuple[str, ...]
    probability: float
    raw: str = ""
    parsed: bool = True
    children: tuple[Candidate, ...] = ()

    def to_json(self) -> OutcomeJson:
        """JSON-able dict."""
        return {
            "reply": self.reply,
            "possible": list(self.possible),
            "probability": self.probability,
            "raw": self.raw,
            "parsed": self.parsed,
            "children": [c.to_json() for c in self.children],
        }

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Outcome:
        """The outcome :meth:`to_json` wrote."""
        return Outcome(
            reply=data.get("reply"),
            possible=tuple(data.get("possible", ())),
            probability=float(data["probability"]),
            raw=str(data.get("raw", "")),
            parsed=bool(data.get("parsed", True)),
            children=tuple(Candidate.from_json(c) for c in data.get("children", ())),
        )


@dataclass(frozen=True)
class Candidate:
    """A question node: the proposed ``question`` (its proposal's ``raw`` text), its outcomes,
    information ``gain`` (bits), UoT ``reward`` :math:`R_u` and ``expected`` reward
    :math:`R_e`."""

    question: str
    raw: str
    outcomes: tuple[Outcome, ...]
    gain: float
    reward: float
    expected: float

    def to_json(self) -> CandidateJson:
        """JSON-able dict."""
        return {
            "question": self.question,
            "raw": self.raw,
            "outcomes": [o.to_json() for o in self.outcomes],
            "gain": self.gain,
            "reward": self.reward,
            "expected": self.expected,
        }

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Candidate:
        """The candidate :meth:`to_json` wrote."""
        return Candidate(
            question=str(data["question"]),
            raw=str(data.get("raw", "")),
            outcomes=tuple(Outcome.from_json(o) for o in data.get("outcomes", ())),
            gain=float(data["gain"]),
            reward=float(data["reward"]),
            expected=float(data["expected"]),
        )


def score_candidate(
    question: str,
    raw: str,
    possible: Sequence[str],
    simulated: Sequence[Outcome],
    sharpness: float,
) -> Candidate:
    """The question node of ``simulated`` outcomes (their probabilities filled in, the
    unsimulated outcome added where some option is left out) with its IG, :math:`R_u` and
    :math:`R_e` (children already scored)."""
    covered = {letter for o in simulated for letter in o.possible}
    rest = tuple(x for x in possible if x not in covered)
    outcomes = [*simulated, Outcome(None, rest, 0.0)] if rest else list(simulated)
    probs = outcome_probabilities([o.possible for o in outcomes])
    outcomes = [
        Outcome(o.reply, o.possible, p, o.raw, o.parsed, o.children)
        for o, p in zip(outcomes, probs, strict=True)
    ]
    gain = information_gain(possible, [o.possible for o in outcomes])
    reward = uot_reward(probs, gain, sharpness)
    ahead = sum(
        o.probability * float(np.mean([c.expected for c in o.children]))
        for o in outcomes
        if o.children
    )
    return Candidate(question, raw, tuple(outcomes), gain, reward, reward + ahead)


# --------------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------------

_LETTER = re.compile(
    r"\(([A-J])\)|\b([A-J])\b(?=\s*(?:$|[,.;:)\]\n]|and\b|or\b|is\b|are\b|&|/|[A-J]\b))",
    re.MULTILINE,
)
_MARKER = re.compile(r"possible\s*(?:options?)?\s*(?:are|is)?\s*[:=\-]", re.I)
_NONE = re.compile(r"^\s*(?:none|no options?|nothing)\b", re.I)


def parse_possible(text: str, possible: Sequence[str]) -> tuple[str, ...] | None:
    """The options of ``possible`` that a partition answer names, read forgivingly: after a
    ``Possible:`` marker when there is one, letters in parentheses or standing alone as a list
    (``A, C``, ``(B) and (D)``, ``A is still possible``; a capital ``A`` starting a sentence,
    as in "A dog", is not a letter); ``none`` there is the empty set. None when nothing usable
    is found."""
    marker = _MARKER.search(text)
    body = text[marker.end() :] if marker else text
    if _NONE.match(body):
        return ()
    named = {m.group(1) or m.group(2) for m in _LETTER.finditer(body)}
    found = tuple(x for x in possible if x in named)
    return found if found else None
