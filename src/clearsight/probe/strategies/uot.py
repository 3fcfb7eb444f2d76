"""Uncertainty of Thoughts (Hu et al., 2024) as a probe strategy: a search each turn, and a
prompt-only variant.

:data:`UOT` searches (:mod:`clearsight.probe.reasoner.uot_search` holds the settings, the scores
and the tree): each turn that asks, the conversation's own reasoner proposes candidate questions,
simulates replies and partitions the options still possible by each (:class:`_Search`), the
candidate of largest expected reward is asked, and the options are updated from the real reply; one
option left is committed, and where the stop rule stops the search (the query budget, the top
posterior's threshold: :meth:`~clearsight.probe.reasoner.uot_search.SearchSettings.stop`) or on the
last turn of the budget the reasoner answers from the conversation. The tree is stored with the
turn (:class:`~clearsight.probe.reasoner.search_record.SearchRecord`). :data:`UOT_PROMPT` is UoT as
a system prompt only (entry ``uot`` of ``prompts/strategies.yaml``, which strategy ``uot`` read
before it became a search, so its prompt hash is unchanged): a lighter variant of this toolkit's,
not the paper's, which adapts UoT's prompts to VQA and keeps its search (:data:`UOT`, a default
strategy).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from clearsight.probe.instances import Instance
from clearsight.probe.judges import normalise
from clearsight.probe.reasoner.parsing import parse_action
from clearsight.probe.reasoner.prompts import prompts, render_reply, shown_consistency, uot_prompts
from clearsight.probe.reasoner.search_record import SearchRecord
from clearsight.probe.reasoner.uot_search import (
    Candidate,
    Outcome,
    SearchSettings,
    parse_possible,
    score_candidate,
)
from clearsight.probe.strategies.base import Talk
from clearsight.probe.strategies.prompted import Prompted
from clearsight.probe.transcript import Transcript, Turn
from clearsight.seeding import content_hash

if TYPE_CHECKING:
    from clearsight.models.base import Backend


def _options_lines(instance: Instance, letters: Sequence[str]) -> str:
    """``(A) text`` lines of the options ``letters``."""
    return "\n".join(f"({x}) {instance.option(x)}" for x in letters)


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
        asks = [self._fill("partition", possible, query=q, reply=r) for q, r in pairs]
        return [(raw, parse_possible(raw, possible)) for raw in self._complete(asks, False)]

    def propose(self, possible: Sequence[str], history: Sequence[str]) -> list[tuple[str, str]]:
        """Distinct parsed (question, raw) proposals; the unparsed are dropped."""
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
        """The scored candidate questions of a node
        (:mod:`clearsight.probe.reasoner.uot_search`, steps 1-4)."""
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


def possible_options(transcript: Transcript, letters: Sequence[str]) -> tuple[str, ...]:
    """The options still possible after the transcript's turns: the last search turn's update
    (all ``letters`` before any)."""
    for turn in reversed(transcript.turns):
        if turn.search is not None and "possible_after" in turn.search:
            return tuple(turn.search["possible_after"])
    return tuple(letters)


def _history(transcript: Transcript) -> list[str]:
    """The real exchanges so far, one a line (``query -> reply (u/K)``)."""
    return [
        f"{t.query} -> {render_reply(t.reply, transcript.signal, t.shown_u)}"
        for t in transcript.turns
        if t.query is not None and t.reply is not None
    ]


def _update(
    search: _Search, possible: tuple[str, ...], question: str, shown: str | None
) -> tuple[str, tuple[str, ...], str, tuple[str, ...] | None]:
    """The update from the real reply (``shown`` as the reasoner reads it; None: the sensor
    failed): the turn's note, the options possible after, the partition's raw text and the
    options it named (None: unparsed, or no partition)."""
    if shown is None:
        return "sensor failed: options kept", possible, "", None
    ((raw, left),) = search.partition(possible, [(question, shown)])
    if left is None:
        return "update unparsed: options kept", possible, raw, None
    if left == ():
        return "the reply left no option possible: options kept", possible, raw, left
    return "", left, raw, left


def _final_answer(talk: Talk, why: str = "last turn") -> Turn:
    """The reasoner answers from the conversation so far (the last turn of the budget, or the
    stop rule's ``why``)."""
    from clearsight.models.base import Request

    messages = talk.chat(str(uot_prompts()["answer"]["system"]))
    (response,) = talk.reasoner.complete([Request(tuple(messages), talk.decoding())])
    raw = response.texts[0] if response.texts else ""
    instance = talk.instance
    action = parse_action(raw, instance.letters, instance.options)
    if action.kind == "commit":
        note = action.note if why == "last turn" else f"{why}: answered from the conversation"
        return Turn(talk.index, raw, commit=action.letter, thought=action.thought, note=note)
    return Turn(talk.index, raw, thought=action.thought, note=f"{why}: no answer parsed")


@dataclass(frozen=True)
class UoT:
    """The Uncertainty-of-Thoughts search (see the module docstring)."""

    name: str = "uot"
    reasoned: bool = True
    searches: bool = True

    def prompt_hash(self) -> str:
        """Content hash of the shared turn texts and every prompt of ``prompts/uot.yaml``."""
        return content_hash([prompts()["common"], uot_prompts()])

    def system(self) -> str:
        """The prompt-only UoT's system prompt: the chat a search conversation is read as
        (self-distillation)."""
        return UOT_PROMPT.system()

    def turn(self, talk: Talk) -> Turn:
        """Commit the one option left, answer where the stop rule stops the search
        (:meth:`SearchSettings.stop`) or on the last turn of the budget, else search, ask the
        best candidate and update the options still possible."""
        instance, index = talk.instance, talk.index
        possible = possible_options(talk.transcript, instance.letters)
        settings = talk.search or SearchSettings()
        if len(possible) == 1:
            note = "one option left possible: committed by the search"
            return Turn(index, f"The answer is: ({possible[0]})", commit=possible[0], note=note)
        why = settings.stop(len(possible), talk.transcript.queries)
        if why is not None:
            return _final_answer(talk, why)
        if index == talk.transcript.budget:
            return _final_answer(talk)
        search = _Search(instance, talk.reasoner, settings, talk.temperature, talk.rngs[0])
        tree = search.expand(possible, _history(talk.transcript))
        record: SearchRecord = {
            "settings": settings.to_json(),
            "possible_before": list(possible),
            "candidates": [c.to_json() for c in tree],
        }
        if not tree:
            record |= {"calls": search.calls, "possible_after": list(possible)}
            return Turn(index, "", note="no candidate question parsed", search=record)
        return self._ask(talk, search, tree, record)

    @staticmethod
    def _ask(talk: Talk, search: _Search, tree: list[Candidate], record: SearchRecord) -> Turn:
        """Ask the candidate of largest expected reward (ties: the first proposed) and update
        the options possible from the real reply."""
        _, s_rng, u_rng = talk.rngs
        possible = tuple(record["possible_before"])
        best = max(range(len(tree)), key=lambda i: (tree[i].expected, -i))
        chosen = tree[best]
        reply = talk.sensor.ask(talk.instance, chosen.question, s_rng)
        signal = talk.transcript.signal
        shown_u = shown_consistency(reply, signal, u_rng)
        shown = None if reply.error is not None else render_reply(reply, signal, shown_u)
        note, after, raw, left = _update(search, possible, chosen.question, shown)
        record |= {
            "chosen": best,
            "update": {"raw": raw, "parsed": left is not None},
            "possible_after": list(after),
            "calls": search.calls,
        }
        return Turn(
            talk.index,
            chosen.raw,
            query=chosen.question,
            reply=reply,
            shown_u=shown_u,
            note=note,
            search=record,
        )


#: The Uncertainty-of-Thoughts search (the paper's UoT: its prompts adapted, its search kept).
UOT: Final = UoT()
#: UoT as a system prompt only, without the search (a lighter variant, not the paper's).
UOT_PROMPT: Final = Prompted("uot_prompt", entry="uot")
