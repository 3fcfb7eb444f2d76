"""The paper's belief probe (App. I): the conversation's own reasoner replays it with its next
reasoning step in context and states b_t; b_0 uniform; unparsed steps recorded; Fig. 4's
numbers on a hand trace."""

from __future__ import annotations

import json
from collections.abc import Sequence
from io import BytesIO
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from clearsight.models.base import Capabilities, Request, Response
from clearsight.probe.instances import Instance
from clearsight.probe.numbers.convergence import belief_table
from clearsight.probe.posthoc.belief import (
    BeliefTrace,
    belief_probe,
    belief_summary,
    next_reasoning_step,
)
from clearsight.probe.sensor import SensorReply
from clearsight.probe.transcript import Transcript, Turn
from clearsight.validate import InputError
from fixtures.probe_runs import analysis_judge, probe_config

INST = Instance("q", "x.png", "Which animal?", ("a cat", "a dog", "a cow"), "B", "seedbench", "s")


class Recorder:
    """A generating backend that answers every request with ``text`` and keeps the requests."""

    name = "recorder"
    capabilities = Capabilities(generate=True)

    def __init__(self, text: str) -> None:
        self.text = text
        self.requests: list[Request] = []

    def complete(self, requests: Sequence[Request]) -> list[Response]:
        self.requests += requests
        return [Response(texts=(self.text,)) for _ in requests]


def _conversation() -> Transcript:
    """Two replies: ask, ask again (its thought after reply 1), commit C (its thought after
    reply 2)."""
    reply = SensorReply("What?", ("a dog", "a dog"), 0, "a dog", 2, 2)
    t = Transcript.start(INST, reasoner="model-a", strategy="bp", sensor="s", k=2)
    t = t.with_turn(Turn(1, 'My question is: "What?"', query="What?", reply=reply, shown_u=2))
    t = t.with_turn(
        Turn(
            2,
            'Belief: B=0.6\nMy question is: "Sure?"',
            query="Sure?",
            reply=reply,
            shown_u=2,
            thought="Belief: B=0.6",
        )
    )
    return t.with_turn(Turn(3, "It barks, so C.\nThe answer is: (C)", commit="C", thought="C!"))


def test_the_context_ends_with_the_reasoners_next_reasoning_step() -> None:
    t = _conversation()
    assert next_reasoning_step(t, 0) == "Belief: B=0.6"
    assert next_reasoning_step(t, 1) == "C!"
    assert next_reasoning_step(t, 2) is None
    backend = Recorder("A=0.1, B=0.7, C=0.2")
    trace = belief_probe(t, backend)
    first, second = backend.requests
    # [p_assess, h1, h2 (reply 1), h3 (the next chain of thought)], then the request for b_1
    assert [m.role for m in first.messages][-4:] == ["assistant", "user", "assistant", "user"]
    assert first.messages[-2].text == "Belief: B=0.6"
    assert "Visual assistant: a dog" in first.messages[-3].text
    assert "probability for each option" in first.messages[-1].text
    assert first.messages[0].text.startswith("You are reviewing")  # the assessment prompt
    assert second.messages[-2].text == "C!"
    assert trace.beliefs[0] == pytest.approx({"A": 1 / 3, "B": 1 / 3, "C": 1 / 3})
    assert trace.beliefs[1] == pytest.approx({"A": 0.1, "B": 0.7, "C": 0.2})
    assert trace.methods == ("uniform", "parsed", "parsed")
    assert trace.turns == (0, 1, 2)
    # the letter read-out ends the context at the reply, as before
    letters = Recorder("A=0.5, B=0.5")
    belief_probe(t, letters, readout="letters")
    assert letters.requests[0].messages[-1].role == "user"
    assert "Belief: B=0.6" not in "".join(m.text for m in letters.requests[0].messages[:3])
    with pytest.raises(InputError, match="read-out"):
        belief_probe(t, letters, readout="vibes")  # type: ignore[arg-type]


def test_unparsed_steps_are_recorded_not_guessed() -> None:
    trace = belief_probe(_conversation(), Recorder("I would rather not say"))
    assert trace.beliefs[1:] == (None, None)
    assert trace.methods == ("uniform", "unparsed", "unparsed")
    assert trace.texts[1] == "I would rather not say"
    summary = belief_summary(_conversation(), trace)
    assert summary["p_correct"] == [pytest.approx(1 / 3), None, None]
    assert summary["p_chosen"] is None
    assert summary["steps_to_threshold"] is None
    assert summary["unparsed"] == 2
    assert json.loads(json.dumps(trace.to_json()))["beliefs"][1] is None


def test_p_correct_p_chosen_and_steps_to_threshold_on_a_hand_trace() -> None:
    t = _conversation()  # gold B, committed C
    uniform = {"A": 1 / 3, "B": 1 / 3, "C": 1 / 3}
    trace = BeliefTrace(
        (
            uniform,
            {"A": 0.2, "B": 0.5, "C": 0.3},
            None,
            {"A": 0.05, "B": 0.2, "C": 0.75},
        ),
        ("uniform", "parsed", "unparsed", "parsed"),
    )
    summary = belief_summary(t, trace)
    assert summary["p_correct"] == pytest.approx([1 / 3, 0.5, None, 0.2])
    assert summary["p_chosen"] == pytest.approx(0.75)
    assert summary["steps_to_threshold"] == 3  # the first t >= 1 with max b_t >= 0.7
    assert summary["reached"]
    assert not summary["correct"]
    assert summary["unparsed"] == 1
    never = BeliefTrace((uniform, {"A": 0.6, "B": 0.3, "C": 0.1}), ("uniform", "parsed"))
    assert belief_summary(t, never)["steps_to_threshold"] is None
    rows = pd.DataFrame(
        [
            {**summary, "reasoner": "r", "dataset": "d"},
            {**belief_summary(t, never), "reasoner": "r", "dataset": "d"},
        ]
    )
    (row,) = belief_table(rows).to_dict("records")
    assert row["conversations"] == 2
    assert row["steps"] == pytest.approx(3.0)  # over the conversations that reach it
    assert row["reach"] == pytest.approx(50.0)
    assert row["p_chosen"] == pytest.approx((0.75 + 0.1) / 2)
    assert row["final_p_correct"] == pytest.approx((0.2 + 0.3) / 2)


def test_fig_4_draws_mean_traces_with_unparsed_gaps() -> None:
    from clearsight.probe.numbers.convergence import belief_curves
    from clearsight.probe.page.figures import belief_figure

    beliefs = pd.DataFrame(
        {
            "p_correct": [[1 / 3, None, 0.8], [1 / 3, 0.2], [1 / 3, 0.4, 0.6, 0.9]],
            "p_chosen": [0.8, None, 0.95],
            "correct": [True, False, True],
            "reasoner": ["a", "a", "b"],
        }
    )
    curves = belief_curves(beliefs)
    assert [c.setting for c in curves.curves] == ["a", "a", "b"]
    assert np.isnan(curves.curves[0].p_correct[1])  # an unparsed step is a gap
    assert curves.curves[1].p_chosen is None
    # a's mean: 1/3, then 0.2 (the only parsed b_1), then 0.8; b's is its own curve
    assert curves.means["a"] == pytest.approx((1 / 3, 0.2, 0.8))
    assert curves.means["b"] == pytest.approx((1 / 3, 0.4, 0.6, 0.9))
    png = belief_figure(curves)
    assert png is not None
    assert Image.open(BytesIO(png)).size[0] > 300


def test_each_conversation_is_replayed_by_its_own_reasoner(tmp_path: Path) -> None:
    """A run with reasoner A (scripted) analysed with judge B: the belief items name A and
    hold A's stated distribution (B would have said A=0.2, B=0.8); query types stay B's."""
    from clearsight.driver import Execution
    from clearsight.probe.posthoc.protocol import AnalysisConfig, run_probe_analysis
    from clearsight.probe.protocol import run_probe
    from clearsight.store import RunStore

    run = tmp_path / "run"
    config = probe_config(tmp_path)
    run_probe(config, run, progress=False)
    analyses = AnalysisConfig(judge_model=analysis_judge(tmp_path))
    summary = run_probe_analysis(run, analyses, Execution(progress=False))
    assert summary.exit_code == 0
    (reasoner,) = config.reasoners
    with RunStore.open(run, read_only=True) as store:
        beliefs = list(store.iter_records("ok", kind="probe.belief"))
        qtypes = list(store.iter_records("ok", kind="probe.qtype", raw=False))
    assert len(beliefs) == 4
    assert {r.spec["judge"] for r in beliefs} == {reasoner}
    assert {r.spec["readout"] for r in beliefs} == {"stated"}
    assert {r.spec["judge"] for r in qtypes} == {analyses.judge_model}
    for r in beliefs:
        # reasoner A, replaying, writes its next turn's text: "Belief: B=0.9 ..."
        belief = r.raw["beliefs"][1]
        assert belief["B"] == pytest.approx(1.0)
        assert sum(belief.values()) == pytest.approx(1.0)
        assert r.raw["methods"] == ["uniform", "parsed"]
        assert r.readouts["p_chosen"] == pytest.approx(1.0)
    # the report draws Fig. 4 above Table 7's numbers
    from clearsight.probe.analysis import analyse_probe
    from clearsight.probe.page.report import FIG4, probe_figures, probe_tables

    analysis = analyse_probe(run)
    assert FIG4 in probe_figures(analysis, probe_tables(analysis))
    # the letter read-out: judge B for every conversation, new items beside the stated ones
    letters = AnalysisConfig(judge_model=analyses.judge_model, belief_readout="letters")
    again = run_probe_analysis(run, letters, Execution(progress=False))
    assert again.stages["probe.belief"].ok == 4
    with pytest.raises(InputError, match="belief read-out"):
        AnalysisConfig(belief_readout="vibes")  # type: ignore[arg-type]
