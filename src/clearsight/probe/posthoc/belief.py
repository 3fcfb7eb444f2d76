"""The belief probe: the reasoner's distribution over the options after each sensor reply.

The paper's Fig. 4 and Table 7 (docs/methods.md §6, App. I). :func:`belief_probe` replays a finished
conversation with the assessment prompt and elicits b_t after each reply (b_0 uniform): ``stated``,
the paper's, has the conversation's own reasoner write the distribution with its next reasoning step
in context (parsed forgivingly, :func:`parse_distribution`); ``letters``, the cheap read-out of
earlier runs, takes a judge's next-token probabilities of the option letters. :func:`belief_summary`
gives one conversation's numbers (p_correct(t), p_chosen, steps to max b >= 0.7); Table 7, the
early-anchoring share and Fig. 4's curves over many are :mod:`clearsight.probe.numbers.convergence`.
The runs themselves are post-hoc items (:mod:`clearsight.probe.posthoc.protocol`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal, TypedDict

from clearsight.probe.instances import Instance
from clearsight.probe.readouts import BeliefReadouts
from clearsight.probe.reasoner.prompts import chat, prompts
from clearsight.probe.transcript import Transcript
from clearsight.validate import InputError

if TYPE_CHECKING:
    from clearsight.models.base import Backend, Request

#: The belief a conversation must reach (max b_t) to count as converged (Table 7).
BELIEF_THRESHOLD: Final = 0.7


class TraceJson(TypedDict):
    """A :class:`BeliefTrace` as stored (the raw output of a belief-probe item)."""

    beliefs: list[dict[str, float] | None]
    methods: list[str]
    texts: list[str]
    turns: list[int]


_PROB = re.compile(r"\(?\b([A-J])\)?\s*[:=]\s*([01](?:\.\d+)?|\.\d+|\d{1,3}\s*%)")


def parse_distribution(text: str, letters: Sequence[str]) -> dict[str, float] | None:
    """``A=0.4, B: 30%, ...`` -> a distribution over ``letters`` (normalised; letters not
    mentioned get 0); None when nothing usable is found."""
    found: dict[str, float] = {}
    for letter, value in _PROB.findall(text):
        if letter in letters and letter not in found:
            v = float(value.rstrip("% ")) / (100 if "%" in value else 1)
            found[letter] = v
    total = sum(found.values())
    if not found or total <= 0:
        return None
    return {k: found.get(k, 0.0) / total for k in letters}


#: How the belief probe reads b_t: ``stated`` (the paper's App. I: the conversation's own
#: reasoner, its next reasoning step in context, writes the distribution, parsed forgivingly) or
#: ``letters`` (the cheap option of earlier runs: a judge's next-token probabilities of the
#: option letters where its backend scores candidates, the context ending at the reply).
BeliefReadout = Literal["stated", "letters"]
BELIEF_READOUTS: Final[tuple[str, ...]] = ("stated", "letters")


@dataclass(frozen=True)
class BeliefTrace:
    """The beliefs b_0..b_n of one conversation (b_0 uniform; b_t after the t-th sensor
    reply), how each was obtained (``uniform`` for b_0, ``parsed`` text, ``letter-probs``,
    ``uniform`` fallback of the letter read-out, or ``unparsed``: no distribution found, b_t
    None, recorded rather than guessed), the text each step generated and the index of the
    turn whose reply it follows (0 for b_0)."""

    beliefs: tuple[Mapping[str, float] | None, ...]
    methods: tuple[str, ...]
    texts: tuple[str, ...] = ()
    turns: tuple[int, ...] = ()

    def to_json(self) -> TraceJson:
        """JSON-able dict."""
        return {
            "beliefs": [None if b is None else dict(b) for b in self.beliefs],
            "methods": list(self.methods),
            "texts": list(self.texts),
            "turns": list(self.turns),
        }


def _replay_instance(transcript: Transcript) -> tuple[Instance, tuple[str, ...]]:
    """The instance a transcript was about (without its image) and its option letters."""
    letters = tuple("ABCDEFGHIJ"[: len(transcript.options)])
    if not letters:
        raise InputError(f"transcript of {transcript.instance_id} has no options")
    instance = Instance(
        transcript.instance_id,
        "",
        transcript.question or "?",
        transcript.options,
        transcript.gold or letters[0],
        transcript.dataset,
        transcript.category,
    )
    return instance, letters


def next_reasoning_step(transcript: Transcript, i: int) -> str | None:
    """The reasoner's chain of thought after the reply of turn ``i`` (0-based): the next
    turn's thought, the text before its action (its whole text when it wrote nothing before
    the action); None when no turn follows."""
    if i + 1 >= len(transcript.turns):
        return None
    after = transcript.turns[i + 1]
    return after.thought or after.raw


def _belief_request(
    transcript: Transcript,
    i: int,
    instance: Instance,
    readout: BeliefReadout,
    scored: bool,
    max_new_tokens: int,
) -> Request:
    """The request eliciting b_t after the reply of turn ``i`` (see :func:`belief_probe`)."""
    from clearsight.models.base import Decoding, Message, Request, TextPart

    assess = prompts()["strategies"]["assess"]
    letters = instance.letters
    budget = max(transcript.budget, len(transcript.turns) + 2)
    messages = chat(
        instance,
        transcript.turns[: i + 1],
        system=assess["system"],
        budget=budget,
        signal="true",
        k=transcript.k,
    )
    ask = Message.user(assess["ask"].format(letters=", ".join(letters)))
    thought = next_reasoning_step(transcript, i) if readout == "stated" else None
    if thought is not None:
        messages.append(Message("assistant", (TextPart(thought),)))
        messages.append(ask)
    else:
        messages[-1] = Message.user(messages[-1].text + "\n" + ask.text)
    return Request(
        tuple(messages),
        Decoding(max_new_tokens=max_new_tokens),
        candidates=letters if scored else (),
        generate=not scored,
    )


def belief_probe(
    transcript: Transcript,
    backend: Backend,
    *,
    readout: BeliefReadout = "stated",
    max_new_tokens: int = 60,
) -> BeliefTrace:
    r"""Replay ``transcript`` with the assessment prompt in place of the strategy's system
    prompt and elicit the belief b_t after each sensor reply; b_0 is uniform.

    ``stated`` (the paper's App. I, Eq. 4): ``backend`` is the conversation's own reasoner;
    the context of step t is :math:`[p_{assess}, h_1, h_2, h_3, \dots, h_{2t}, h_{2t+1}]`,
    the question, the exchanges up to the t-th reply and the reasoner's next chain of thought
    (:func:`next_reasoning_step`; none after the last reply when no turn follows), then the
    request for a distribution; the generated ``A=0.4, B: 30%, ...`` is parsed by
    :func:`parse_distribution`, and a step with none is ``unparsed`` (b_t None).
    ``letters``: the earlier cheap read-out — the context ends at the reply, and where the
    backend scores candidates b_t is the normalised next-token probability of each letter,
    else parsed from the text, else uniform."""
    from clearsight.models.replies import complete_checked

    if readout not in BELIEF_READOUTS:
        raise InputError(f"belief read-out {readout!r}: one of {', '.join(BELIEF_READOUTS)}")
    instance, letters = _replay_instance(transcript)
    steps = [i for i, t in enumerate(transcript.turns) if t.reply is not None]
    scored = readout == "letters" and backend.capabilities.candidate_probs
    requests = [
        _belief_request(transcript, i, instance, readout, scored, max_new_tokens) for i in steps
    ]
    responses = complete_checked(backend, requests) if requests else []
    uniform = {k: 1 / len(letters) for k in letters}
    beliefs: list[Mapping[str, float] | None] = [uniform]
    methods, texts = ["uniform"], [""]
    for response in responses:
        text = response.texts[0] if response.texts else ""
        texts.append(text)
        belief, method = _read_belief(text, response.candidate_probs, letters, readout)
        beliefs.append(belief)
        methods.append(method)
    turns = (0, *(transcript.turns[i].index for i in steps))
    return BeliefTrace(tuple(beliefs), tuple(methods), tuple(texts), turns)


def _read_belief(
    text: str,
    probs: Mapping[str, float] | None,
    letters: Sequence[str],
    readout: BeliefReadout,
) -> tuple[Mapping[str, float] | None, str]:
    """One step's belief and how it was read (see :func:`belief_probe`)."""
    parsed = parse_distribution(text, letters)
    if parsed is not None:
        return parsed, "parsed"
    if readout == "stated":
        return None, "unparsed"
    total = sum(float((probs or {}).get(k, 0.0)) for k in letters)
    if probs and total > 0:
        return {k: float(probs.get(k, 0.0)) / total for k in letters}, "letter-probs"
    return {k: 1 / len(letters) for k in letters}, "uniform"


def belief_summary(transcript: Transcript, trace: BeliefTrace) -> BeliefReadouts:
    """The paper's Fig. 4 numbers of one conversation: p_correct(t) = b_t[gold] for every t
    (None where b_t is unparsed), p_chosen = b_T[committed] at the last step (None without a
    commit or when that step is unparsed), the first step t >= 1 with max b_t >= 0.7 (None if
    never), whether it was reached, and how many steps were unparsed."""
    p_correct = [None if b is None else float(b.get(transcript.gold, 0.0)) for b in trace.beliefs]
    last = trace.beliefs[-1]
    chosen = transcript.committed
    p_chosen = None if chosen is None or last is None else float(last.get(chosen, 0.0))
    reach = next(
        (
            t
            for t, b in enumerate(trace.beliefs)
            if t >= 1 and b is not None and max(b.values()) >= BELIEF_THRESHOLD
        ),
        None,
    )
    return {
        "p_correct": p_correct,
        "p_chosen": p_chosen,
        "steps_to_threshold": reach,
        "reached": reach is not None,
        "correct": transcript.correct,
        "unparsed": sum(b is None for b in trace.beliefs),
    }
