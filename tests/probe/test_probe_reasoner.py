"""The reasoner loop: parsing, budget, sensor errors, context overflow, direct answers."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from clearsight.models.base import Capabilities, Request, Response
from clearsight.models.scripted import ScriptedBackend
from clearsight.probe.instances import Instance
from clearsight.probe.judges import ExactJudge
from clearsight.probe.reasoner.loop import LoopSettings, conversation_messages, run_conversation
from clearsight.probe.reasoner.parsing import parse_action, parse_letter
from clearsight.probe.sensor import Sensor
from clearsight.probe.strategies import prompt_hash
from clearsight.probe.strategies.direct import run_direct
from clearsight.probe.transcript import Transcript
from clearsight.validate import InputError

INST = Instance(
    "t/dog",
    "bundled:skimage-coffee",
    "What animal is it?",
    ("a cat", "a dog", "a cow"),
    "B",
    "bundled",
    "identity",
)
LETTERS = INST.letters


@pytest.mark.parametrize(
    ("text", "letter"),
    [
        ("The answer is: (B)", "B"),
        ("Thought: sure.\n**The answer is (b)**", "B"),
        ("Answer: C.", "C"),
        ("Action: Answer[A]", "A"),
        ("the answer is a dog", "B"),
        ("The answer is: (Z)", None),
        ("Answer: A dog sits there", None),
        ("(A) Red is the answer I chose", "A"),
        ("C", "C"),
        ("I think (C) is correct.", "C"),
        ("Option B is the best answer", "B"),
        ("(A) a cat (B) a dog (C) a cow", None),
        ("A dog, I think", None),
    ],
)
def test_commit_parsing(text: str, letter: str | None) -> None:
    action = parse_action(text, LETTERS, INST.options)
    assert action.letter == letter


@pytest.mark.parametrize(
    ("text", "query"),
    [
        (
            'Belief: A=0.3\nMy question is: "What colour is the animal?"',
            "What colour is the animal?",
        ),
        ("Query: how many legs does it have", "how many legs does it have"),
        ("Action: Ask[Is it furry?]", "Is it furry?"),
        ("I need more. Is there a tail? Let me see", "Is there a tail?"),
        ("my question is “Does it bark?”", "Does it bark?"),
    ],
)
def test_query_parsing(text: str, query: str) -> None:
    action = parse_action(text, LETTERS, INST.options)
    assert action.kind == "query"
    assert action.query == query


def test_earliest_action_wins_and_hallucinated_replies_are_dropped() -> None:
    text = 'My question is: "Is it a dog?"\nVisual assistant: yes (5/5)\nThe answer is: (B)'
    action = parse_action(text, LETTERS)
    assert action.kind == "query"
    assert "hallucinated" in action.note
    assert parse_action("blah blah", LETTERS).kind == "none"


def test_direct_letter_parsing() -> None:
    assert parse_letter("B", LETTERS, INST.options) == "B"
    assert parse_letter("(C) a cow", LETTERS, INST.options) == "C"
    assert parse_letter("a dog", LETTERS, INST.options) == "B"
    assert parse_letter("I think so", LETTERS, INST.options) is None
    assert parse_letter("A correct option is not given", LETTERS, INST.options) is None


def _reasoner(*texts: str) -> ScriptedBackend:
    return ScriptedBackend([Response(texts=(t,)) for t in texts], name="scripted-reasoner")


def _sensor(*samples: Sequence[str], k: int = 3) -> Sensor:
    backend = ScriptedBackend([Response(texts=tuple(s)) for s in samples], name="scripted-vlm")
    return Sensor(backend, k=k, judge=ExactJudge())


def test_a_conversation_that_commits() -> None:
    reasoner = _reasoner('My question is: "What animal?"', "The answer is: (B)")
    sensor = _sensor(["a dog", "a dog", "a cat"])
    seen: list[Transcript] = []
    t = run_conversation(
        INST,
        reasoner,
        sensor,
        LoopSettings("bp", budget=5),
        rng=np.random.default_rng(0),
        on_turn=seen.append,
    )
    assert t.stop == "committed"
    assert t.committed == "B"
    assert t.correct
    assert t.rounds == 2
    assert t.vlm_calls == 3
    assert [len(s.turns) for s in seen] == [1, 2]
    reply = t.turns[0].reply
    assert reply is not None
    assert t.turns[0].shown_u == reply.u == sum(s == reply.reply for s in reply.samples)


def test_a_reasoner_that_never_commits_reaches_the_budget() -> None:
    reasoner = _reasoner(*['My question is: "What is it?"'] * 4)
    sensor = _sensor(*[["x", "y", "x"]] * 4)
    t = run_conversation(
        INST, reasoner, sensor, LoopSettings("react", budget=4), rng=np.random.default_rng(1)
    )
    assert t.stop == "budget"
    assert t.committed is None
    assert not t.correct
    assert t.rounds == 4
    assert t.queries == 4
    assert t.vlm_calls == 12


def test_last_turn_asks_for_an_answer() -> None:
    settings = LoopSettings("bp", budget=2)
    from clearsight.probe.transcript import Turn

    msgs = conversation_messages(INST, [Turn(1, "???", note="unparsed")], settings, 5)
    assert "last turn" in msgs[-1].text
    assert msgs[0].role == "system"
    assert "(A) a cat" in msgs[1].text


def test_a_sensor_error_mid_conversation_is_recorded_and_the_run_goes_on() -> None:
    class FailsSecond:
        name = "flaky"
        capabilities = Capabilities(images=True, generate=True, n_per_call=True)
        calls = 0

        def complete(self, requests: Sequence[Request]) -> list[Response]:
            self.calls += 1
            if self.calls == 2:
                raise RuntimeError("GPU fell over")
            return [Response(texts=("a dog",) * r.n) for r in requests]

    reasoner = _reasoner(
        'My question is: "What animal?"',
        'My question is: "Does it bark?"',
        'My question is: "Is it a dog?"',
        "The answer is: (B)",
    )
    sensor = Sensor(FailsSecond(), k=3, judge=ExactJudge())
    t = run_conversation(
        INST, reasoner, sensor, LoopSettings("react", budget=10), rng=np.random.default_rng(2)
    )
    assert t.stop == "committed"
    assert t.committed == "B"
    assert t.sensor_errors == 1
    # three queries of K = 3: the failed one is not a VLM call the reasoner received
    assert (t.vlm_calls, t.failed_calls) == (6, 3)
    assert t.readouts()["failed_calls"] == 3
    failed = t.turns[1].reply
    assert failed is not None
    assert failed.error is not None
    assert "GPU fell over" in failed.error
    assert t.turns[1].shown_u is None
    assert t.turns[2].reply is not None
    assert t.turns[2].reply.u == 3


def test_signal_ablation_shows_no_or_random_u() -> None:
    def run(signal: str) -> list[int | None]:
        reasoner = _reasoner(*['Query: "What?"'] * 3)
        sensor = _sensor(*[["a", "b", "c"]] * 3)
        settings = LoopSettings("bp", budget=3, signal=signal)  # type: ignore[arg-type]
        t = run_conversation(INST, reasoner, sensor, settings, rng=np.random.default_rng(5))
        return [turn.shown_u for turn in t.turns]

    assert run("true") == [1, 1, 1]
    assert run("none") == [None, None, None]
    random_u = run("random")
    assert all(u is not None and 1 <= u <= 3 for u in random_u)


def test_context_overflow_ends_the_conversation() -> None:
    reasoner = _reasoner(*[("thinking " * 60) + 'My question is: "What?"'] * 10)
    sensor = _sensor(*[["word " * 40] * 3] * 10)
    settings = LoopSettings("react", budget=10, context_chars=1800)
    t = run_conversation(INST, reasoner, sensor, settings, rng=np.random.default_rng(0))
    assert t.stop == "context"
    assert 1 <= t.rounds < 10


def test_reasoner_failure_is_an_error_outcome() -> None:
    t = run_conversation(
        INST, _reasoner(), _sensor(), LoopSettings("bp", budget=3), rng=np.random.default_rng(0)
    )
    assert t.stop == "error"
    assert "reasoner_error" in t.meta


def test_direct_answers_with_one_call() -> None:
    sensor = _sensor(["(B) a dog"], k=5)
    t = run_direct(INST, sensor, rng=np.random.default_rng(0))
    assert t.committed == "B"
    assert t.correct
    assert t.vlm_calls == 1
    assert t.strategy == "direct"
    bad = run_direct(INST, _sensor(["no idea"]), rng=np.random.default_rng(0))
    assert bad.stop == "unparsed"
    assert bad.committed is None


def test_settings_and_prompts_are_checked() -> None:
    with pytest.raises(InputError):
        LoopSettings("direct")
    with pytest.raises(InputError):
        LoopSettings("bp", budget=0)
    with pytest.raises(InputError):
        prompt_hash("nope")
    assert len({prompt_hash(s) for s in ("direct", "react", "uot", "bp")}) == 4


def test_the_strategy_table_names_what_a_config_accepts() -> None:
    """Every name a ProbeConfig accepts is a strategy value, and what the planner and the loop
    ask of it (a reasoner, a search, a prompt hash) is the strategy's own."""
    from typing import get_args

    from clearsight.probe.config import StrategyName
    from clearsight.probe.strategies import STRATEGIES, conversing, strategy_named
    from clearsight.probe.strategies.base import Conversing

    assert tuple(STRATEGIES) == get_args(StrategyName)
    assert {n for n, s in STRATEGIES.items() if not s.reasoned} == {"direct"}
    assert {n for n, s in STRATEGIES.items() if s.searches} == {"uot"}
    assert {n for n, s in STRATEGIES.items() if isinstance(s, Conversing)} == set(STRATEGIES) - {
        "direct"
    }
    assert all(strategy_named(n).prompt_hash() == prompt_hash(n) for n in STRATEGIES)
    with pytest.raises(InputError, match="reasoner strategy must be one of react"):
        conversing("direct")
    with pytest.raises(InputError, match="unknown strategy 'nope'; one of direct"):
        strategy_named("nope")


def test_the_loop_runs_any_strategy_value_it_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    """The loop knows no strategy by name: a new value in the table converses as the built-in
    ones do (its turns recorded, its commit ending the conversation, its name stored)."""
    from dataclasses import dataclass

    from clearsight.probe import strategies
    from clearsight.probe.strategies.base import Talk
    from clearsight.probe.transcript import Turn

    @dataclass(frozen=True)
    class AskThenGuess:
        name: str = "ask-then-guess"
        reasoned: bool = True
        searches: bool = False

        def prompt_hash(self) -> str:
            return "fixed"

        def system(self) -> str:
            return "You ask once, then guess."

        def turn(self, talk: Talk) -> Turn | None:
            if talk.index == 1:
                reply = talk.sensor.ask(talk.instance, "What is it?", talk.rngs[1])
                return Turn(1, "asked", query="What is it?", reply=reply, shown_u=reply.u)
            return Turn(talk.index, "guessed", commit=talk.instance.letters[-1])

    monkeypatch.setitem(strategies.STRATEGIES, "ask-then-guess", AskThenGuess())  # type: ignore[index]
    settings = LoopSettings("ask-then-guess", budget=5)
    t = run_conversation(
        INST, _reasoner(), _sensor(["a cow"] * 3), settings, rng=np.random.default_rng(0)
    )
    assert (t.strategy, t.rounds, t.committed, t.stop) == ("ask-then-guess", 2, "C", "committed")
    reply = t.turns[0].reply
    assert reply is not None
    assert reply.u == 3
    msgs = conversation_messages(INST, t.turns[:1], settings, 3)
    assert msgs[0].text.startswith("You ask once, then guess.")
