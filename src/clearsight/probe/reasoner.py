"""The blind reasoner's loop: strategies as prompt data, robust parsing, budget and context.

docs/methods.md §6. The reasoner (any text backend, e.g. the embedded ``hf:smollm2-135m``)
sees the question, the options and the history of (query, reply, u); each turn it either asks
a self-contained query, ``My question is: "..."``, or commits, ``The answer is: (X)``. The
strategies (ReAct, Uncertainty of Thoughts, belief-state prompting) differ only in their system
prompt, kept with the shared turn texts in ``prompts/strategies.yaml``; Direct has no reasoner
(the sensor answers the multiple-choice question itself, :func:`run_direct`).

**Parsing** (:func:`parse_action`) is meant to survive small models: a commit is ``answer``
followed by a letter in parentheses or a bare capital letter ending the phrase (``Answer: B``,
``**The answer is (b)**``, ``Answer[C]``), ``(B) is correct`` / ``option B is the answer``, an
output that opens with ``(B)`` (unless it echoes the option list) or is just ``B``, or
``The answer is`` followed by the exact text of an option; a query is the
text after ``question is``, ``Query:`` or ``Ask[...]`` (quoted or to the end of the line), or
failing those the last sentence ending in a question mark. The earliest action in the text
wins, and anything after a hallucinated ``Visual assistant:`` line is dropped first. A turn with
neither is recorded (``note``), answered with a nudge, and counts against the budget.

**Outcomes:** ``committed``; ``budget`` after T turns without a commit (the last turn carries
an explicit "answer now"); ``context`` when the history no longer fits ``context_chars`` even
after old turns are compacted to their queries, or the backend rejects the prompt as too long;
``error`` when the reasoner itself fails. A sensor failure is part of the history, not an end.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from importlib import resources
from typing import TYPE_CHECKING, Any, Final, Literal, get_args

import numpy as np
import yaml

from clearsight.probe.instances import Instance
from clearsight.probe.judges import normalise
from clearsight.probe.sensor import Sensor, SensorReply
from clearsight.probe.specs import Signal
from clearsight.probe.transcript import Transcript, Turn
from clearsight.seeding import content_hash
from clearsight.validate import InputError

if TYPE_CHECKING:
    from clearsight.models.base import Backend, Message, Request, Response
    from clearsight.probe.uot import SearchSettings

STRATEGIES: Final[tuple[str, ...]] = ("direct", "react", "uot", "uot_prompt", "bp")
#: The entry of ``prompts/strategies.yaml`` a strategy reads where it is not its own name:
#: ``uot_prompt``, the paper's prompt-only UoT, is the entry ``uot`` that strategy ``uot`` read
#: before it became a search (:mod:`clearsight.probe.uot`), so its prompt hash is unchanged.
_PROMPT_ENTRY: Final[Mapping[str, str]] = {"uot_prompt": "uot"}
SIGNALS: Final[tuple[str, ...]] = get_args(Signal)


@functools.cache
def prompts() -> dict[str, Any]:
    """The parsed ``prompts/strategies.yaml``."""
    text = resources.files("clearsight.probe").joinpath("prompts/strategies.yaml").read_text()
    doc: dict[str, Any] = yaml.safe_load(text)
    return doc


def prompt_hash(strategy: str) -> str:
    """Content hash of everything a strategy's reasoner reads (its texts and the shared ones;
    for the UoT search, ``prompts/uot.yaml``), recorded in each item so an edited prompt makes
    new items."""
    from clearsight.probe.uot import UOT, uot_prompts

    doc = prompts()
    if strategy == "direct":
        return content_hash(doc["common"]["direct"])
    if strategy == UOT:
        return content_hash([doc["common"], uot_prompts()])
    entry = _PROMPT_ENTRY.get(strategy, strategy)
    if strategy not in STRATEGIES or entry not in doc["strategies"]:
        raise InputError(f"unknown strategy {strategy!r}; one of {', '.join(STRATEGIES)}")
    return content_hash([doc["common"], doc["strategies"][entry]])


# --------------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------------

_END = r"(?=\s*(?:$|[.,;:!)\]*\n]))"
_COMMIT_PAREN = re.compile(
    r"(?i:answer)(?:\s+(?i:is))?\s*[:=\-]?\s*(?i:option\s+)?[*\[]*\s*\(\s*([A-Ja-j])\s*\)"
)
_COMMIT_BARE = re.compile(
    r"(?i:answer)(?:\s+(?i:is))?\s*[:=\-]?\s*(?i:option\s+)?[*\[]*\s*([A-J])" + _END
)
_COMMIT_LEAD = re.compile(r"^\s*[*\[]*\s*\(([A-J])\)|^\s*([A-J])\s*(?:\)|$)")
_COMMIT_IS = re.compile(
    r"(?:\(([A-J])\)|(?i:option)\s+\(?([A-J])\)?)\s+(?i:is)\s+(?i:the\s+)?"
    r"(?i:correct|right|answer|best)"
)
_OPTION_MARK = re.compile(r"\([A-J]\)")
_COMMIT_TEXT = re.compile(r"(?i:the\s+answer\s+is|answer\s*:)\s*(.+?)\s*(?:$|\n)")
_QUERY_QUOTED = re.compile(
    r"(?i:question\s+is|query|ask|action\s*:\s*ask)\s*[:\[]?\s*[\"“”']\s*(.+?)\s*[\"“”']", re.S
)
_QUERY_LINE = re.compile(r"(?i:question\s+is|query|ask)\s*[:\[]\s*(.+?)\s*\]?\s*(?:$|\n)")
_QUESTION_SENTENCE = re.compile(r"([A-Z][^.!?\n]*\?)")
_HALLUCINATED = re.compile(r"\n\s*(?:visual assistant|assistant reply|consistency)\b", re.I)


@dataclass(frozen=True)
class Action:
    """What one reasoner output asks for: ``kind`` is query, commit or none."""

    kind: Literal["query", "commit", "none"]
    query: str | None = None
    letter: str | None = None
    thought: str = ""
    note: str = ""


def _commit(text: str, letters: Sequence[str], options: Sequence[str]) -> tuple[int, str] | None:
    """``(position, letter)`` of the first commit in ``text``."""
    found: list[tuple[int, str]] = []
    for pattern in (_COMMIT_PAREN, _COMMIT_BARE):
        for m in pattern.finditer(text):
            letter = m.group(1).upper()
            if letter in letters:
                found.append((m.start(), letter))
                break
    for m in _COMMIT_IS.finditer(text):
        letter = m.group(1) or m.group(2)
        if letter in letters:
            found.append((m.start(), letter))
            break
    lead = _COMMIT_LEAD.match(text)
    if lead and len(_OPTION_MARK.findall(text)) <= 1:  # not an echo of the option list
        letter = lead.group(1) or lead.group(2)
        if letter in letters:
            found.append((lead.start(), letter))
    if not found and options:
        norm = [normalise(o) for o in options]
        for m in _COMMIT_TEXT.finditer(text):
            said = normalise(m.group(1))
            if said in norm:
                found.append((m.start(), letters[norm.index(said)]))
                break
    return min(found) if found else None


def _query(text: str) -> tuple[int, str] | None:
    """``(position, query)`` of the first query in ``text``."""
    found = []
    for pattern in (_QUERY_QUOTED, _QUERY_LINE):
        m = pattern.search(text)
        if m and m.group(1).strip(" \"'“”"):
            found.append((m.start(), m.group(1).strip(" \"'“”")))
    if found:
        return min(found)
    sentences = list(_QUESTION_SENTENCE.finditer(text))
    if sentences:
        last = sentences[-1]
        return last.start(), last.group(1).strip()
    return None


def parse_action(text: str, letters: Sequence[str], options: Sequence[str] = ()) -> Action:
    """The action in a reasoner's output (see the module docstring for the rules)."""
    cut = _HALLUCINATED.search(text)
    body = text[: cut.start()] if cut else text
    commit = _commit(body, letters, options)
    query = _query(body)
    note = "dropped a hallucinated assistant reply" if cut else ""
    if commit is not None and (query is None or commit[0] <= query[0]):
        return Action("commit", letter=commit[1], thought=body[: commit[0]].strip(), note=note)
    if query is not None:
        return Action("query", query=query[1], thought=body[: query[0]].strip(), note=note)
    return Action("none", thought=body.strip(), note=(note + "; " if note else "") + "unparsed")


def parse_letter(text: str, letters: Sequence[str], options: Sequence[str] = ()) -> str | None:
    """The option a direct (VLM) answer names: a commit phrase, a leading letter (``B``,
    ``(B)``, ``B.``), or an option's exact text."""
    commit = _commit(text, letters, options)
    if commit is not None:
        return commit[1]
    m = re.match(r"\s*[*(\[]*\s*([A-J])\s*(?:$|[.):\]])", text)
    if m and m.group(1) in letters:
        return m.group(1)
    said = normalise(text)
    for letter, option in zip(letters, options, strict=False):
        if said == normalise(option):
            return letter
    return None


# --------------------------------------------------------------------------------------------
# The loop
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LoopSettings:
    """How one conversation runs: strategy, budget T, consistency signal shown, decoding of
    the reasoner, the context limit (characters of the whole prompt) and, for the UoT search,
    its settings (None: the defaults)."""

    strategy: str = "bp"
    budget: int = 100
    signal: Signal = "true"
    temperature: float = 1.0
    max_new_tokens: int = 128
    context_chars: int = 24_000
    search: SearchSettings | None = None

    def __post_init__(self) -> None:
        """Reject settings the loop cannot run."""
        if self.strategy not in STRATEGIES or self.strategy == "direct":
            talk = ", ".join(s for s in STRATEGIES if s != "direct")
            raise InputError(f"reasoner strategy must be one of {talk}, got {self.strategy!r}")
        if self.budget < 1:
            raise InputError(f"the budget T must be >= 1, got {self.budget}")
        if self.signal not in SIGNALS:
            raise InputError(f"signal must be one of {SIGNALS}, got {self.signal!r}")
        if self.context_chars < 200:
            raise InputError(f"context_chars must be >= 200, got {self.context_chars}")


def fill_prompt(text: str, instance: Instance, k: int, budget: int, **more: Any) -> str:
    values = {
        "question": instance.question,
        "options": instance.options_text(),
        "letters": ", ".join(instance.letters),
        "k": k,
        "budget": budget,
        **more,
    }
    return text.format(**values)


def render_reply(reply: SensorReply, signal: str, shown_u: int | None) -> str:
    """The sensor reply as the reasoner reads it (with the shown u unless the signal is off)."""
    common = prompts()["common"]
    if reply.error is not None:
        return str(common["reply_error"])
    if signal == "none" or shown_u is None:
        return str(common["reply_no_signal"]).format(reply=reply.reply)
    return str(common["reply"]).format(reply=reply.reply, u=shown_u, k=reply.k)


def shown_consistency(reply: SensorReply, signal: str, rng: np.random.Generator) -> int | None:
    """The u a reasoner is shown: the true u, none, or uniform on 1..K (the ablation)."""
    if reply.error is not None or signal == "none":
        return None
    if signal == "random":
        return int(rng.integers(1, reply.k + 1))
    return reply.u


def conversation_messages(
    instance: Instance,
    turns: Sequence[Turn],
    settings: LoopSettings,
    k: int,
    *,
    compact: bool = False,
    system: str | None = None,
) -> list[Message]:
    """The chat the reasoner sees before its next turn. ``compact`` replaces old turns' text by
    their bare actions (the first step of context-overflow handling)."""
    from clearsight.models.base import Message, TextPart

    doc = prompts()
    common = doc["common"]
    entry = _PROMPT_ENTRY.get(settings.strategy, settings.strategy)
    sys_text = system if system is not None else doc["strategies"][entry]["system"]
    messages = [
        Message("system", (TextPart(fill_prompt(sys_text, instance, k, settings.budget)),)),
        Message.user(fill_prompt(common["first"], instance, k, settings.budget)),
    ]
    for turn in turns:
        said = turn.raw
        if compact:
            if turn.query is not None:
                said = f'My question is: "{turn.query}"'
            elif turn.commit is not None:
                said = f"The answer is: ({turn.commit})"
            else:
                said = turn.raw[:80]
        messages.append(Message("assistant", (TextPart(said),)))
        if turn.reply is not None:
            messages.append(Message.user(render_reply(turn.reply, settings.signal, turn.shown_u)))
        elif turn.commit is None:
            messages.append(Message.user(str(common["unparsed"])))
    if len(turns) == settings.budget - 1:
        last = fill_prompt(common["last_turn"], instance, k, settings.budget)
        if messages[-1].role == "user":
            messages[-1] = Message.user(messages[-1].text + "\n" + last)
        else:
            messages.append(Message.user(last))
    return messages


def _chars(messages: Sequence[Message]) -> int:
    return sum(len(m.text) for m in messages)


_CONTEXT_ERROR = re.compile(r"context|too long|maximum.*length|max_position|sequence length", re.I)


class _ReasonerFailedError(Exception):
    """The reasoner's own call failed: the conversation ends (``error``, or ``context`` when
    the backend rejected the prompt as too long)."""


class _Guarded:
    """The reasoner backend, its failures — and replies that cannot be read
    (:func:`~clearsight.models.replies.complete_checked`) — raised as
    :class:`_ReasonerFailedError` (a sensor failure, by contrast, is part of the history)."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.name = backend.name
        self.capabilities = backend.capabilities
        self.repaired = 0  # replies whose lone surrogates were replaced

    def complete(self, requests: Sequence[Request]) -> list[Response]:
        from clearsight.models.replies import REPLACED_SURROGATES, complete_checked

        try:
            replies = complete_checked(self.backend, requests)
        except Exception as exc:
            raise _ReasonerFailedError(f"{type(exc).__name__}: {exc}") from exc
        self.repaired += sum(REPLACED_SURROGATES in r.extra for r in replies)
        return replies


def _say_repaired(transcript: Transcript, reasoner: int, sensor: int) -> Transcript:
    """The transcript with the number of replies whose lone surrogates were replaced with
    U+FFFD in its ``meta`` (``replaced_surrogates``), where there were any."""
    if not reasoner and not sensor:
        return transcript
    said = {"reasoner": reasoner, "sensor": sensor}
    return replace(transcript, meta={**transcript.meta, "replaced_surrogates": said})


Streams = tuple[np.random.Generator, np.random.Generator, np.random.Generator]


def _prompted_turn(
    instance: Instance,
    transcript: Transcript,
    reasoner: Backend,
    sensor: Sensor,
    settings: LoopSettings,
    rngs: Streams,
) -> Turn | None:
    """The next turn of a prompted strategy: one reasoner call, its action parsed, a query
    sent to the sensor; None when the history no longer fits ``context_chars``."""
    from clearsight.models.base import Decoding, Request

    r_rng, s_rng, u_rng = rngs
    turns, index = transcript.turns, len(transcript.turns) + 1
    messages = conversation_messages(instance, turns, settings, sensor.k)
    if _chars(messages) > settings.context_chars:
        messages = conversation_messages(instance, turns, settings, sensor.k, compact=True)
        if _chars(messages) > settings.context_chars:
            return None
    request = Request(
        tuple(messages),
        Decoding(
            max_new_tokens=settings.max_new_tokens,
            temperature=settings.temperature,
            seed=int(r_rng.integers(0, 2**31 - 1)),
        ),
    )
    response = reasoner.complete([request])[0]
    raw = response.texts[0] if response.texts else ""
    action = parse_action(raw, instance.letters, instance.options)
    if action.kind == "commit":
        return Turn(index, raw, commit=action.letter, thought=action.thought, note=action.note)
    if action.kind == "query":
        assert action.query is not None
        reply = sensor.ask(instance, action.query, s_rng)
        return Turn(
            index,
            raw,
            query=action.query,
            reply=reply,
            shown_u=shown_consistency(reply, settings.signal, u_rng),
            thought=action.thought,
            note=action.note,
        )
    return Turn(index, raw, thought=action.thought, note=action.note)


def run_conversation(
    instance: Instance,
    reasoner: Backend,
    sensor: Sensor,
    settings: LoopSettings,
    *,
    rng: np.random.Generator,
    reasoner_name: str | None = None,
    run: int = 0,
    meta: Mapping[str, Any] | None = None,
    on_turn: Callable[[Transcript], None] | None = None,
) -> Transcript:
    """One whole conversation; ``on_turn`` sees the transcript after every turn (to store it
    turn by turn). Each turn is a prompted strategy's one reasoner call, or for ``uot`` the
    search of :func:`clearsight.probe.uot.search_turn`. Randomness: three generators spawned
    from ``rng`` (reasoner decoding, sensor, random signal), so the sensor's draws do not
    depend on the reasoner's."""
    from clearsight.probe.uot import UOT, search_turn

    rngs: Streams = tuple(rng.spawn(3))  # type: ignore[assignment]
    transcript = Transcript.start(
        instance,
        reasoner=reasoner_name or reasoner.name,
        strategy=settings.strategy,
        sensor=sensor.name,
        run=run,
        k=sensor.k,
        budget=settings.budget,
        signal=settings.signal,
        meta=meta,
    )
    guarded = _Guarded(reasoner)
    sensed = sensor.repaired
    next_turn: Callable[..., Turn | None] = (
        search_turn if settings.strategy == UOT else _prompted_turn
    )

    def ended(done: Transcript) -> Transcript:
        return _say_repaired(done, guarded.repaired, sensor.repaired - sensed)

    for _ in range(settings.budget):
        try:
            turn = next_turn(instance, transcript, guarded, sensor, settings, rngs)
        except _ReasonerFailedError as exc:  # recorded, the item still ends
            stop = "context" if _CONTEXT_ERROR.search(str(exc)) else "error"
            meta_err = {**transcript.meta, "reasoner_error": str(exc)}
            return ended(replace(transcript, meta=meta_err).finish(None, stop))
        if turn is None:
            return ended(transcript.finish(None, "context"))
        transcript = transcript.with_turn(turn)
        if on_turn is not None:
            on_turn(transcript)
        if transcript.committed is not None:
            return ended(transcript)
    return ended(transcript.finish(None, "budget"))


def run_direct(
    instance: Instance,
    sensor: Sensor,
    *,
    rng: np.random.Generator,
    run: int = 0,
    meta: Mapping[str, Any] | None = None,
) -> Transcript:
    """VLM Direct: the sensor answers the multiple-choice question itself, one sample (one VLM
    call) per run; the letter is parsed from its text."""
    prompt = fill_prompt(prompts()["common"]["direct"], instance, 1, 1)
    transcript = Transcript.start(
        instance,
        reasoner="vlm",
        strategy="direct",
        sensor=sensor.name,
        run=run,
        k=1,
        budget=1,
        signal="none",
        meta=meta,
    )
    seed = int(rng.integers(0, 2**31 - 1))
    sensor.image(instance)  # a missing image is an InputError, not a reply
    sensed = sensor.repaired
    try:
        (text,), calls = sensor.sample(instance, prompt, 1, seed, max_new_tokens=8)
    except Exception as exc:
        reply = SensorReply(prompt, (), -1, "", 0, 1, error=f"{type(exc).__name__}: {exc}")
        turn = Turn(1, "", query=prompt, reply=reply, note="sensor failed")
        return transcript.with_turn(turn).finish(None, "error")
    reply = SensorReply(prompt, (text,), 0, text, 1, 1, judge="none", same=(True,), calls=calls)
    letter = parse_letter(text, instance.letters, instance.options)
    turn = Turn(
        1, text, query=prompt, reply=reply, commit=letter, note="" if letter else "unparsed"
    )
    out = _say_repaired(transcript.with_turn(turn), 0, sensor.repaired - sensed)
    return out if letter is not None else out.finish(None, "unparsed")
