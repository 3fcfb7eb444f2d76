"""Example trajectories with hesitation markers (issue 46 item 12; the paper's Figs. 1 and 4):
the report shows a few own trajectories chosen by a stated, seeded rule, every hesitation
event marked on the sentence :func:`find_hesitations` scores, with its confidences."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from clearsight.grounding.analysis import analyse_runs
from clearsight.grounding.examples import example_trajectories
from clearsight.grounding.hesitation import find_hesitations, hesitation_variant
from clearsight.grounding.page.examples import event_label, examples_html, examples_markdown
from clearsight.grounding.results import GroundingResults
from clearsight.grounding.tgs import self_variant
from clearsight.grounding.trajectories.trajectory import Trajectory
from clearsight.grounding.trajectories.written import WrittenTrajectory

TOL = 1e-12
HEDGING = Trajectory(
    "Hmm, the bars look equal. The left bar is 3.",
    "First 3 + 4 = 7. Wait, that is the wrong bar. Actually it is 3 + 5 = 8. So 8.",
    "8",
)
PLAIN = Trajectory("The bar is 2.", "2 + 2 = 4.", "4")
TEXT = "Hmm, I see two cats. Let me recheck: there are three.\n3 + 1 = 4. Hold on, it is 4.\n4"


def _written() -> WrittenTrajectory:
    """A trajectory kept as written: vision, reasoning and answer lines of :data:`TEXT`."""
    a = TEXT.index("\n")
    b = TEXT.index("\n", a + 1)
    return WrittenTrajectory.of(TEXT, ((0, a), (a + 1, b), (b + 1, len(TEXT))))


def _results(trajs: dict[str, Trajectory], unscored: tuple[str, ...] = ()) -> GroundingResults:
    """Own trajectories, each event's pre/post elicited (pre 0.9 - 0.1 k, post 0.8 - 0.1 k
    for event k) except for the problems in ``unscored``, and E(visible) 0.95."""
    rows = []
    for problem, t in trajs.items():
        rows.append((problem, self_variant(0.0), 0.95))
        if problem in unscored:
            continue
        for k, _ in enumerate(find_hesitations(t)):
            rows.append((problem, hesitation_variant(k, "pre"), 0.9 - 0.1 * k))
            rows.append((problem, hesitation_variant(k, "post"), 0.8 - 0.1 * k))
    elic = pd.DataFrame(rows, columns=["problem", "variant", "expected"]).assign(
        benchmark="b", readout="verbalize", probs=[[1.0] + [0.0] * 10] * len(rows)
    )
    trajectories = pd.DataFrame(
        {
            "problem": list(trajs),
            "benchmark": "b",
            "correct": [False] * len(trajs),
            "answer": [t.answer for t in trajs.values()],
            "answer_forced": False,
            "trajectory": [t.to_json() for t in trajs.values()],
        }
    )
    return GroundingResults("run", elic, trajectories, {}, {})


@pytest.mark.parametrize("traj", [HEDGING, _written()], ids=["segmented", "written"])
def test_the_markers_sit_on_the_events_hesitation_finds(traj: Trajectory) -> None:
    r = _results({"p": traj})
    (example,) = example_trajectories(r.elicitations, r.trajectories)
    marked = [s for s in example.sentences if s.marker is not None]
    found = find_hesitations(traj)
    assert len(found) >= 2
    assert [s.marker for s in marked] == [h.marker for h in found]
    assert [s.event for s in marked] == list(range(len(found)))
    # each marked sentence is the one the event's post side adds to its pre side
    for s, h in zip(marked, found, strict=True):
        pre, post = h.pre.render()[0], h.post.render()[0]
        assert s.text.strip() in post
        assert s.text.strip() not in pre
    for s in marked:
        k = s.event or 0
        assert s.pre == pytest.approx(0.9 - 0.1 * k, abs=TOL)
        assert s.post == pytest.approx(0.8 - 0.1 * k, abs=TOL)
    assert example.confidence == pytest.approx(0.95, abs=TOL)
    # every sentence of the rationale is shown once, in order

    def squeezed(text: str) -> str:
        return "".join(text.split())

    shown = squeezed("".join(s.text for s in example.sentences))
    assert shown == squeezed(traj.vision + traj.reasoning)


def test_the_examples_follow_the_stated_seeded_rule() -> None:
    trajs = {f"p{i}": HEDGING for i in range(6)} | {"q": PLAIN}
    r = _results(trajs, unscored=("p5",))
    for seed in (0, 1, 7):
        got = [e.problem for e in example_trajectories(r.elicitations, r.trajectories, seed)]
        scored = [f"p{i}" for i in range(5)]  # q has no event, p5's events were not elicited
        picks = np.random.default_rng(seed).choice(5, size=3, replace=False)
        assert got == [scored[i] for i in sorted(picks.tolist())]
    a = analyse_runs([r], ["run"], n_boot=20, seed=7)
    assert [e.problem for e in a.examples] == got
    assert "3 own trajectories drawn at random (seed 7)" in examples_markdown(a)[0]


def test_the_report_renders_each_event_with_its_confidences() -> None:
    a = analyse_runs([_results({"p": HEDGING})], ["run"], n_boot=20)
    html, md = examples_html(a), "\n".join(examples_markdown(a))
    marked = [s for s in a.examples[0].sentences if s.marker is not None]
    assert event_label(marked[0]) == 'event 1 "hmm": c_pre 0.900 → c_post 0.800'
    for s in marked:
        assert f"[{event_label(s)}]" in md
        assert html.count("<mark") == len(marked)
    assert "answer '8' (wrong)" in md
