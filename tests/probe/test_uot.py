"""Uncertainty of Thoughts as a search: its scores on hand-made partitions, the question it
picks, the look-ahead, the stored tree, and the option set updated from the real reply."""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pytest

from clearsight.models.base import Capabilities, Request, Response
from clearsight.models.scripted import ScriptedBackend
from clearsight.probe.instances import Instance
from clearsight.probe.judges import ExactJudge
from clearsight.probe.reasoner.loop import LoopSettings, run_conversation
from clearsight.probe.reasoner.uot_search import (
    Candidate,
    SearchSettings,
    information_gain,
    outcome_probabilities,
    parse_possible,
    uot_reward,
)
from clearsight.probe.sensor import Sensor
from clearsight.probe.strategies import prompt_hash
from clearsight.probe.transcript import Transcript

INST3 = Instance(
    "t/3",
    "bundled:skimage-coffee",
    "What is it?",
    ("a cat", "a dog", "a cow"),
    "B",
    "bundled",
    "id",
)
INST4 = Instance(
    "t/4",
    "bundled:skimage-coffee",
    "Which?",
    ("red", "green", "blue", "grey"),
    "C",
    "bundled",
    "colour",
)


class Planner:
    """A scripted reasoner for the search, answering by prompt: proposals by the options shown
    as possible (cycled), simulated replies by the question (cycled), partitions by the reply
    (the first key the prompt contains); it counts its requests."""

    name = "planner"
    capabilities = Capabilities()

    def __init__(
        self,
        proposals: Mapping[str, Sequence[str]],
        replies: Mapping[str, Sequence[str]],
        partitions: Mapping[str, str],
        answer: str = "The answer is: (A)",
    ) -> None:
        self.proposals, self.replies, self.partitions = proposals, replies, partitions
        self.answer = answer
        self.seen: dict[str, int] = defaultdict(int)
        self.calls = 0

    def _cycle(self, key: str, texts: Sequence[str]) -> str:
        self.seen[key] += 1
        return texts[(self.seen[key] - 1) % len(texts)]

    def _one(self, request: Request) -> str:
        system, user = request.messages[0].text, request.messages[-1].text
        if system.startswith("You are solving"):
            shown = "".join(re.findall(r"^\(([A-J])\)", user, re.M))
            return self._cycle("p" + shown, self.proposals[shown])
        if system.startswith("You imagine"):
            query = re.search(r'asks the assistant: "(.+)"', user)
            assert query is not None
            return self._cycle("r" + query.group(1), self.replies[query.group(1)])
        if system.startswith("You decide"):
            return next(v for k, v in self.partitions.items() if k in user)
        return self.answer

    def complete(self, requests: Sequence[Request]) -> list[Response]:
        self.calls += len(requests)
        return [Response(texts=(self._one(r),)) for r in requests]


def _q(text: str) -> str:
    return f'My question is: "{text}"'


def _sensor(*samples: Sequence[str]) -> Sensor:
    backend = ScriptedBackend([Response(texts=tuple(s)) for s in samples], name="vlm")
    return Sensor(backend, k=3, judge=ExactJudge())


def _run(
    inst: Instance, planner: Planner, sensor: Sensor, search: SearchSettings, budget: int = 4
) -> Transcript:
    settings = LoopSettings("uot", budget=budget, search=search)
    return run_conversation(inst, planner, sensor, settings, rng=np.random.default_rng(0))


# ------------------------------------------------------------------------------ scores


def test_information_gain_of_hand_made_partitions() -> None:
    abcd = ("A", "B", "C", "D")
    assert information_gain(abcd, [("A", "B"), ("C", "D")]) == pytest.approx(1.0)
    assert information_gain(abcd, [abcd]) == pytest.approx(0.0)
    assert information_gain(abcd, [("A",), ("B",), ("C",), ("D",)]) == pytest.approx(2.0)
    # 1 of 3 against 2 of 3: the binary entropy H(1/3)
    h = -(1 / 3) * math.log2(1 / 3) - (2 / 3) * math.log2(2 / 3)
    assert information_gain(("A", "B", "C"), [("A",), ("B", "C")]) == pytest.approx(h)
    # overlapping outcomes: p = 2/5, 3/5; log2 3 - (2/5 log2 2 + 3/5 log2 3)
    gain = information_gain(("A", "B", "C"), [("A", "B"), ("A", "B", "C")])
    assert gain == pytest.approx(math.log2(3) - 0.4 - 0.6 * math.log2(3))
    assert outcome_probabilities([(), ()]) == [0.0, 0.0]


def test_uot_reward_on_hand_cases() -> None:
    # an even split keeps its gain; 1/3 against 2/3 is H(1/3) / (1 + (1/3) / 0.4)
    assert uot_reward([0.5, 0.5], 1.0, 0.4) == pytest.approx(1.0)
    h = -(1 / 3) * math.log2(1 / 3) - (2 / 3) * math.log2(2 / 3)
    assert uot_reward([1 / 3, 2 / 3], h, 0.4) == pytest.approx(h / (1 + (1 / 3) / 0.4))
    assert uot_reward([1 / 3, 2 / 3], h, 0.4) == pytest.approx(0.50089, abs=1e-5)
    # a larger lambda penalises the uneven split less
    assert uot_reward([0.25, 0.75], 0.8, 4.0) > uot_reward([0.25, 0.75], 0.8, 0.4)
    assert uot_reward([0.0, 0.0], 0.0, 0.4) == 0.0


def test_parse_possible_is_forgiving_and_says_when_it_found_nothing() -> None:
    abc = ("A", "B", "C")
    assert parse_possible("Possible: A, C", abc) == ("A", "C")
    assert parse_possible("possible options are (B) and (C).", abc) == ("B", "C")
    assert parse_possible("B", abc) == ("B",)
    assert parse_possible("A is still possible.", abc) == ("A",)  # SmolLM2-135M's phrasing
    assert parse_possible("A and C are possible", abc) == ("A", "C")
    assert parse_possible("Possible: none", abc) == ()
    assert parse_possible("A dog is what it shows", abc) is None
    assert parse_possible("Possible: D", abc) is None  # not among the possible options
    assert parse_possible("I am not sure", abc) is None


def test_search_settings_count_their_calls() -> None:
    assert SearchSettings(candidates=3, replies=2).max_calls_per_query() == 3 + 12 + 1
    # depth 2: the root and up to 3 x 2 outcome nodes expanded
    assert SearchSettings(depth=2, candidates=3, replies=2).max_calls_per_query() == 7 * 15 + 1
    with pytest.raises(ValueError, match="depth"):
        SearchSettings(depth=0)


# ------------------------------------------------------------------------------ the search


def _three_way() -> Planner:
    """Q1's simulated replies split A | B | (C unsimulated); Q2's A | B, C."""
    return Planner(
        proposals={"ABC": [_q("Does it bark?"), _q("Does it moo?")]},
        replies={"Does it bark?": ["it meows", "it barks"], "Does it moo?": ["it purrs", "no"]},
        partitions={
            "it meows": "Possible: A",
            "it barks": "Possible: B",
            "it purrs": "Possible: A",
            "Visual assistant: no": "Possible: B, C",
            "Visual assistant: a dog": "Possible: B",
        },
    )


def test_the_question_of_larger_expected_gain_is_asked_and_the_tree_holds_the_numbers() -> None:
    planner = _three_way()
    t = _run(INST3, planner, _sensor(["a dog"] * 3), SearchSettings(candidates=2))
    first = t.turns[0]
    assert first.query == "Does it bark?"
    assert first.search is not None
    tree = [Candidate.from_json(c) for c in first.search["candidates"]]
    bark, moo = tree
    assert bark.gain == pytest.approx(math.log2(3))  # A | B | C, 1/3 each
    assert bark.reward == pytest.approx(math.log2(3))
    assert [o.possible for o in bark.outcomes] == [("A",), ("B",), ("C",)]
    assert bark.outcomes[2].reply is None  # the reply nobody simulated
    h = -(1 / 3) * math.log2(1 / 3) - (2 / 3) * math.log2(2 / 3)
    assert moo.gain == pytest.approx(h)
    assert moo.reward == pytest.approx(h / (1 + (1 / 3) / 0.4))
    assert first.search["chosen"] == 0
    # the real reply "a dog" leaves B: the next turn commits it without asking
    assert first.search["possible_after"] == ["B"]
    assert t.turns[1].commit == "B"
    assert t.turns[1].search is None
    assert t.stop == "committed"
    assert t.correct
    # 2 proposals + 4 simulated replies + 4 partitions + 1 update, as the settings say
    assert first.search["calls"] == planner.calls == 11
    assert planner.calls == SearchSettings(candidates=2).max_calls_per_query()


def _look_ahead() -> Planner:
    """Depth 1 prefers Q1 (an even split into A, B | C, D, 1 bit) to Q2 (A | B, C, D); but
    nothing helps after Q1, while after Q2 a question splits B | C | D."""
    return Planner(
        proposals={
            "ABCD": [_q("Is it warm?"), _q("Is it red?")],
            "AB": [_q("Is it bright?")],
            "CD": [_q("Is it bright?")],
            "BCD": [_q("Is it like grass?")],
        },
        replies={
            "Is it warm?": ["warm", "cold"],
            "Is it red?": ["red it is", "not red"],
            "Is it bright?": ["maybe", "perhaps"],
            "Is it like grass?": ["grass-like", "sky-like"],
        },
        partitions={
            "Visual assistant: warm": "Possible: A, B",
            "Visual assistant: cold": "Possible: C, D",
            "red it is": "Possible: A",
            "not red": "Possible: B, C, D",
            "maybe": "Possible: " + "everything",
            "perhaps": "unsure",
            "grass-like": "Possible: B",
            "sky-like": "Possible: C",
            "Visual assistant: blue": "Possible: C",
        },
    )


def test_depth_two_look_ahead_changes_the_choice_where_it_should() -> None:
    one = _run(INST4, _look_ahead(), _sensor(["blue"] * 3), SearchSettings(candidates=2))
    assert one.turns[0].query == "Is it warm?"
    two = _run(INST4, _look_ahead(), _sensor(["blue"] * 3), SearchSettings(depth=2, candidates=2))
    assert two.turns[0].query == "Is it red?"
    assert two.turns[0].search is not None
    warm, red = (Candidate.from_json(c) for c in two.turns[0].search["candidates"])
    # after warm: "Is it bright?" rules nothing out (its partitions unparsed: all kept), R_e = 1
    assert warm.expected == pytest.approx(1.0)
    assert all(not o.parsed for o in warm.outcomes[0].children[0].outcomes)
    # after "not red" (p 3/4): B | C | D, log2 3; the one-option outcome A is not expanded
    r_u = (-(0.25 * math.log2(0.25)) - 0.75 * math.log2(0.75)) / (1 + 0.5 / 0.4)
    assert red.reward == pytest.approx(r_u)
    assert red.outcomes[0].children == ()
    assert red.expected == pytest.approx(r_u + 0.75 * math.log2(3))
    assert two.turns[0].search["possible_after"] == ["C"]
    assert two.committed == "C"


def test_the_stored_tree_round_trips(tmp_path: Path) -> None:
    from clearsight.store import RunStore

    t = _run(INST4, _look_ahead(), _sensor(["blue"] * 3), SearchSettings(depth=2, candidates=2))
    back = Transcript.from_json(t.to_json())
    assert back == t
    search = back.turns[0].search
    assert search is not None
    for raw in search["candidates"]:
        assert Candidate.from_json(raw).to_json() == raw
    from clearsight.probe.records import load_transcripts, store_transcript

    with RunStore.open(tmp_path / "run") as store:
        store_transcript(store, t)
    (loaded,) = load_transcripts(tmp_path / "run")
    assert loaded.turns[0].search == search


def test_unparsed_updates_and_proposals_are_recorded_not_guessed() -> None:
    planner = _three_way()
    planner.partitions = {**planner.partitions, "Visual assistant: a dog": "hmm, hard to say"}
    t = _run(INST3, planner, _sensor(*[["a dog"] * 3] * 3), SearchSettings(candidates=2), 3)
    first = t.turns[0]
    assert first.search is not None
    assert first.note == "update unparsed: options kept"
    assert first.search["update"] == {"raw": "hmm, hard to say", "parsed": False}
    assert first.search["possible_after"] == ["A", "B", "C"]
    # the last turn of the budget: the reasoner answers from the conversation
    assert t.turns[-1].commit == "A"
    assert t.rounds == 3
    silent = Planner({"ABC": ["I do not know"]}, {}, {})
    u = _run(INST3, silent, _sensor(), SearchSettings(candidates=2), budget=2)
    assert u.turns[0].note == "no candidate question parsed"
    assert u.turns[0].query is None
    assert u.queries == 0


def test_a_failing_reasoner_ends_the_conversation_with_its_reason() -> None:
    class Broken(Planner):
        def complete(self, requests: Sequence[Request]) -> list[Response]:
            raise RuntimeError("out of memory")

    t = _run(INST3, Broken({}, {}, {}), _sensor(), SearchSettings())
    assert t.stop == "error"
    assert t.meta["reasoner_error"] == "RuntimeError: out of memory"


def test_the_prompt_only_variant_keeps_its_hash_and_the_search_has_its_own() -> None:
    # the hash strategy "uot" had as a system prompt, before the search existed
    old = "2dd91998808a409aa51b1be0e19f786fc6cb69b0f6d42420439bb11eeede7b2c"
    assert prompt_hash("uot_prompt") == old
    assert prompt_hash("uot") != old


def test_uot_runs_as_a_probe_strategy_with_its_settings_in_the_key(tmp_path: Path) -> None:
    from clearsight.probe.config import ProbeConfig
    from clearsight.probe.plan import plan_probe

    config = ProbeConfig(
        strategies=("uot", "react", "uot_prompt"),
        limit=1,
        runs=1,
        uot=SearchSettings(depth=2),
    )
    specs = plan_probe(config)
    by = {s.strategy: s for s in specs}
    assert by["uot"].to_json()["search"]["depth"] == 2
    assert "search" not in by["react"].to_json()
    assert "search" not in by["uot_prompt"].to_json()
    default = plan_probe(ProbeConfig(strategies=("uot",), limit=1, runs=1))
    assert default[0].key != by["uot"].key


def test_cli_runs_the_search_with_its_flags(tmp_path: Path) -> None:
    import json

    from typer.testing import CliRunner

    from clearsight.cli import app
    from clearsight.store import RunStore
    from fixtures.probe_runs import IDS, scripts

    sensor, _ = scripts(tmp_path)
    reasoner = tmp_path / "uot.jsonl"
    lines = [
        {"match": "You are solving", "texts": ['My question is: "What is in the cup?"']},
        {"match": "You imagine", "texts": ["coffee"]},
        {"match": "You decide", "texts": ["Possible: B"]},
    ]
    reasoner.write_text("".join(json.dumps(x) + "\n" for x in lines))
    out = tmp_path / "run"
    args = [
        "probe",
        "run",
        "--out",
        str(out),
        "--ids",
        IDS[0],
        "--reasoner",
        f"scripted:{reasoner}",
    ]
    args += ["--sensor", sensor, "--strategies", "uot", "--judge", "exact", "--runs", "1"]
    args += ["--uot-candidates", "1", "--uot-replies", "1", "--uot-max-queries", "2"]
    result = CliRunner().invoke(app, [*args, "--uot-commit-posterior", "0.5"])
    assert result.exit_code == 0, result.output
    with RunStore.open(out, read_only=True) as store:
        (record,) = store.iter_records("ok", kind="probe")
    assert record.spec["search"]["candidates"] == 1
    assert record.spec["search"]["replies"] == 1
    assert record.spec["search"]["max_queries"] == 2
    assert record.spec["search"]["commit_posterior"] == 0.5
    first = record.raw["turns"][0]
    assert first["query"] == "What is in the cup?"
    assert first["search"]["calls"] == 1 + 2 * 1 * 1 + 1
    assert record.raw["committed"] == "B"
    report = (out / "report.html").read_text()
    assert "search: options" in report  # the example conversations show the tree in brief
    assert "R_e" in report
    bad = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "bad"), "--uot-depth", "9"])
    assert bad.exit_code == 2
    assert "uot.depth" in bad.output
    assert not (tmp_path / "bad").exists()


# ------------------------------------------------------------------------------ the stop rule


def _never_narrowing() -> Planner:
    """Every real reply is unparsed by the update, so the options never narrow: only the stop
    rule (or T) ends the conversation."""
    planner = _three_way()
    planner.partitions = {**planner.partitions, "Visual assistant: a dog": "hmm, hard to say"}
    return planner


def test_the_query_budget_stops_the_search_at_the_expected_turn() -> None:
    # issue 46 item 5: 3 queries asked, the 4th turn answers from the conversation (T = 20)
    settings = SearchSettings(candidates=2, max_queries=3)
    t = _run(INST3, _never_narrowing(), _sensor(*[["a dog"] * 3] * 3), settings, budget=20)
    assert [turn.query is not None for turn in t.turns] == [True, True, True, False]
    assert t.queries == 3
    assert t.turns[3].commit == "A"
    assert t.turns[3].note == "query budget of 3 spent: answered from the conversation"
    assert t.stop == "committed"
    # without a query budget, T alone ends it: every turn but the last asks
    unbounded = SearchSettings(candidates=2, max_queries=None)
    u = _run(INST3, _never_narrowing(), _sensor(*[["a dog"] * 3] * 5), unbounded, budget=6)
    assert u.queries == 5
    assert u.rounds == 6


def test_the_posterior_threshold_stops_when_two_options_are_left() -> None:
    # the real reply leaves B, C: posterior 1/2 reaches 0.5 and the reasoner answers then
    planner = _three_way()
    planner.partitions = {**planner.partitions, "Visual assistant: a dog": "Possible: B, C"}
    settings = SearchSettings(candidates=2, commit_posterior=0.5)
    t = _run(INST3, planner, _sensor(["a dog"] * 3), settings, budget=20)
    assert t.queries == 1
    assert t.rounds == 2
    assert t.turns[1].note == "top posterior 1/2 reached 0.5: answered from the conversation"
    # at the default 1.0 the search goes on with B, C possible
    go_on = _run(INST3, _three_way(), _sensor(["a dog"] * 3), SearchSettings(candidates=2))
    assert go_on.turns[0].search is not None
    assert go_on.turns[0].search["settings"]["commit_posterior"] == 1.0


def test_the_stop_rule_is_recorded_in_the_manifest_and_named_as_clearsights() -> None:
    from clearsight.probe.config import ProbeConfig
    from clearsight.probe.plan import plan_probe
    from clearsight.probe.protocol import PROBE

    config = ProbeConfig(strategies=("uot",), limit=1, runs=1)
    manifest = PROBE.manifest(config, list(plan_probe(config)))
    assert manifest["uot"]["settings"]["max_queries"] == 10
    assert manifest["uot"]["settings"]["commit_posterior"] == 1.0
    assert manifest["uot"]["statement"].startswith(
        "UoT search (clearsight's reading; the paper names no UoT search shape or stop rule): "
        "depth 1, 3 candidate questions, 2 simulated replies each; stops when the top "
        "option's posterior reaches 1 or after 10 queries"
    )
    bp = ProbeConfig(strategies=("bp",), limit=1, runs=1)
    assert "uot" not in PROBE.manifest(bp, list(plan_probe(bp)))
    with pytest.raises(ValueError, match="commit_posterior"):
        SearchSettings(commit_posterior=0.0)
