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

A single option left is committed; on the last turn of the budget the reasoner answers from the
conversation (``answer`` prompt). The whole tree — candidates, simulated replies, their
partitions, probabilities, gains and rewards — is stored with the turn
(:attr:`~clearsight.probe.transcript.Turn.search`), so a reader sees why a question was asked.

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

import functools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Any, Final

import numpy as np
import yaml
from pydantic import BaseModel, ConfigDict, Field

from clearsight.probe.instances import Instance
from clearsight.probe.judges import normalise
from clearsight.probe.transcript import Transcript, Turn

if TYPE_CHECKING:
    from clearsight.models.base import Backend, Message, Request
    from clearsight.probe.reasoner import LoopSettings, Streams
    from clearsight.probe.sensor import Sensor

#: The strategy name of the search (``uot_prompt`` is the paper's prompt-only variant).
UOT: Final = "uot"


@functools.cache
def uot_prompts() -> dict[str, Any]:
    """The parsed ``prompts/uot.yaml``."""
    text = resources.files("clearsight.probe").joinpath("prompts/uot.yaml").read_text()
    doc: dict[str, Any] = yaml.safe_load(text)
    return doc


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

    def to_json(self) -> dict[str, Any]:
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

    def to_json(self) -> dict[str, Any]:
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


def possible_options(transcript: Transcript, letters: Sequence[str]) -> tuple[str, ...]:
    """The options still possible after the transcript's turns: the last search turn's update
    (all ``letters`` before any)."""
    for turn in reversed(transcript.turns):
        if turn.search is not None and "possible_after" in turn.search:
            return tuple(turn.search["possible_after"])
    return tuple(letters)


# --------------------------------------------------------------------------------------------
# The search
# --------------------------------------------------------------------------------------------


def _options_lines(instance: Instance, letters: Sequence[str]) -> str:
    """``(A) text`` lines of the options ``letters``."""
    return "\n".join(f"({x}) {instance.options[instance.letters.index(x)]}" for x in letters)


@dataclass
class _Search:
    """One turn's search: the reasoner, the settings, the seeds' source and the calls made."""

    instance: Instance
    backend: Backend
    settings: SearchSettings
    temperature: float
    rng: np.random.Generator
    calls: int = 0

    def _complete(self, texts: Sequence[tuple[str, str]], sampled: bool) -> list[str]:
        """One batch of (system, user) prompts: sampled at the loop's temperature (proposals,
        simulated replies) or greedy (partitions)."""
        from clearsight.models.base import Decoding, Message, Request, TextPart

        requests: list[Request] = []
        for system, user in texts:
            seed = int(self.rng.integers(0, 2**31 - 1))
            decoding = Decoding(
                max_new_tokens=self.settings.max_new_tokens,
                temperature=self.temperature if sampled else 0.0,
                seed=seed,
            )
            messages: tuple[Message, ...] = (
                Message("system", (TextPart(system),)),
                Message.user(user),
            )
            requests.append(Request(messages, decoding))
        self.calls += len(requests)
        responses = self.backend.complete(requests) if requests else []
        return [r.texts[0] if r.texts else "" for r in responses]

    def _fill(self, name: str, possible: Sequence[str], **more: Any) -> tuple[str, str]:
        doc = uot_prompts()[name]
        values = {
            "question": self.instance.question,
            "options": self.instance.options_text(),
            "possible": _options_lines(self.instance, possible),
            "possible_letters": ", ".join(possible),
            **more,
        }
        return str(doc["system"]), str(doc["ask"]).format(**values)

    def partition(
        self, possible: Sequence[str], pairs: Sequence[tuple[str, str]]
    ) -> list[tuple[str, tuple[str, ...] | None]]:
        """For each (query, rendered reply): the partition answer and the options it leaves
        possible (None: unparsed)."""
        prompts = [self._fill("partition", possible, query=q, reply=r) for q, r in pairs]
        return [(raw, parse_possible(raw, possible)) for raw in self._complete(prompts, False)]

    def propose(self, possible: Sequence[str], history: Sequence[str]) -> list[tuple[str, str]]:
        """Distinct parsed (question, raw) proposals; the unparsed are dropped."""
        from clearsight.probe.reasoner import parse_action

        prompt = self._fill("candidates", possible, history="\n".join(history) or "(none)")
        out: dict[str, tuple[str, str]] = {}
        for raw in self._complete([prompt] * self.settings.candidates, True):
            action = parse_action(raw, ())
            if action.kind == "query" and action.query:
                out.setdefault(normalise(action.query), (action.query, raw))
        return list(out.values())

    def expand(
        self, possible: Sequence[str], history: Sequence[str], level: int = 1
    ) -> list[Candidate]:
        """The scored candidate questions of a node (module docstring, steps 1-4)."""
        from clearsight.probe.reasoner import prompts

        proposals = self.propose(possible, history)
        r = self.settings.replies
        asks = [self._fill("simulate", possible, query=q) for q, _ in proposals for _ in range(r)]
        replies = self._complete(asks, True)
        shown = str(prompts()["common"]["reply_no_signal"])
        pairs = [
            (q, shown.format(reply=replies[i * r + j]))
            for i, (q, _) in enumerate(proposals)
            for j in range(r)
        ]
        parts = self.partition(possible, pairs)
        scored = []
        for i, (question, raw) in enumerate(proposals):
            outcomes = []
            for j in range(r):
                said, left = parts[i * r + j]
                reply = replies[i * r + j]
                kept = tuple(possible) if left is None else left
                children: list[Candidate] = []
                if level < self.settings.depth and len(kept) > 1:
                    children = self.expand(kept, [*history, f"{question} -> {reply}"], level + 1)
                outcomes.append(Outcome(reply, kept, 0.0, said, left is not None, tuple(children)))
            scored.append(
                score_candidate(question, raw, possible, outcomes, self.settings.sharpness)
            )
        return scored


def _history(transcript: Transcript) -> list[str]:
    """The real exchanges so far, one a line (``query -> reply (u/K)``)."""
    from clearsight.probe.reasoner import render_reply

    return [
        f"{t.query} -> {render_reply(t.reply, transcript.signal, t.shown_u)}"
        for t in transcript.turns
        if t.query is not None and t.reply is not None
    ]


def search_turn(
    instance: Instance,
    transcript: Transcript,
    reasoner: Backend,
    sensor: Sensor,
    settings: LoopSettings,
    rngs: Streams,
) -> Turn:
    """The next turn of a UoT conversation: commit the one option left, answer on the last turn
    of the budget, else search, ask the best candidate and update the options still possible
    (module docstring). ``rngs``: the reasoner's, the sensor's and the random signal's
    streams."""
    from clearsight.probe.reasoner import render_reply, shown_consistency

    r_rng, s_rng, u_rng = rngs
    index = len(transcript.turns) + 1
    possible = possible_options(transcript, instance.letters)
    config = settings.search or SearchSettings()
    if len(possible) == 1:
        only = possible[0]
        note = "one option left possible: committed by the search"
        return Turn(index, f"The answer is: ({only})", commit=only, note=note)
    if index == settings.budget:
        return _final_answer(instance, transcript, reasoner, settings, r_rng)
    search = _Search(instance, reasoner, config, settings.temperature, r_rng)
    tree = search.expand(possible, _history(transcript))
    record: dict[str, Any] = {
        "settings": config.model_dump(),
        "possible_before": list(possible),
        "candidates": [c.to_json() for c in tree],
    }
    if not tree:
        record |= {"calls": search.calls, "possible_after": list(possible)}
        return Turn(index, "", note="no candidate question parsed", search=record)
    best = max(range(len(tree)), key=lambda i: (tree[i].expected, -i))
    chosen = tree[best]
    reply = sensor.ask(instance, chosen.question, s_rng)
    shown_u = shown_consistency(reply, settings.signal, u_rng)
    note, after, raw_update, left = "sensor failed: options kept", possible, "", None
    if reply.error is None:
        rendered = render_reply(reply, settings.signal, shown_u)
        ((raw_update, left),) = search.partition(possible, [(chosen.question, rendered)])
        note = "update unparsed: options kept" if left is None else ""
        if left == ():
            note = "the reply left no option possible: options kept"
        elif left is not None:
            after = left
    record |= {
        "chosen": best,
        "update": {"raw": raw_update, "parsed": left is not None},
        "possible_after": list(after),
        "calls": search.calls,
    }
    return Turn(
        index,
        chosen.raw,
        query=chosen.question,
        reply=reply,
        shown_u=shown_u,
        note=note,
        search=record,
    )


def _final_answer(
    instance: Instance,
    transcript: Transcript,
    reasoner: Backend,
    settings: LoopSettings,
    rng: np.random.Generator,
) -> Turn:
    """The last turn of the budget: the reasoner answers from the conversation so far."""
    from clearsight.models.base import Decoding, Request
    from clearsight.probe.reasoner import conversation_messages, parse_action

    system = str(uot_prompts()["answer"]["system"])
    messages = conversation_messages(
        instance, transcript.turns, settings, transcript.k, system=system
    )
    decoding = Decoding(
        max_new_tokens=settings.max_new_tokens,
        temperature=settings.temperature,
        seed=int(rng.integers(0, 2**31 - 1)),
    )
    (response,) = reasoner.complete([Request(tuple(messages), decoding)])
    raw = response.texts[0] if response.texts else ""
    action = parse_action(raw, instance.letters, instance.options)
    index = len(transcript.turns) + 1
    if action.kind == "commit":
        return Turn(index, raw, commit=action.letter, thought=action.thought, note=action.note)
    return Turn(index, raw, thought=action.thought, note="last turn: no answer parsed")
