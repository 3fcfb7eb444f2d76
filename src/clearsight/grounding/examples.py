"""Example trajectories with their hesitation events marked (the paper's Figs. 1 and 4).

The paper shows single trajectories whose model hedges ("Wait, I should recheck") and still
states high confidence (Fig. 1; Fig. 4: six successive markers, a wrong answer, written
confidence 9/10). :func:`example_trajectories` picks a few of a run's own trajectories by a
stated, seeded rule — :data:`N_EXAMPLES` drawn without replacement (``numpy``'s
``default_rng(seed)``) from the trajectories with at least one scored hesitation event, in
problem order — and lays each out as its rationale's sentences
(:func:`~clearsight.grounding.hesitation.marked_sentences`), every event sentence carrying
its marker and the confidences elicited just before and just after it
(:func:`~clearsight.grounding.hesitation.event_pairs`), with the answer, whether it is right
and the confidence with the whole trajectory visible. The report renders them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from clearsight.grounding.hesitation import event_pairs, marked_sentences
from clearsight.grounding.tgs import item_differences
from clearsight.grounding.trajectories.written import trajectory_from_json

__all__ = ["EXAMPLE_RULE", "N_EXAMPLES", "Example", "MarkedSentence", "example_trajectories"]

#: How many example trajectories a report shows.
N_EXAMPLES = 3

#: The rule, as the report states it (``{n}`` and ``{seed}`` filled in).
EXAMPLE_RULE = (
    "{n} own trajectories drawn at random (seed {seed}) from those with at least one scored "
    "hesitation event, in problem order"
)


@dataclass(frozen=True)
class MarkedSentence:
    """One rationale sentence; for a hesitation event its marker, its 0-based index in the
    trajectory and the confidences elicited before and after it (None: not an event, or the
    event's pair was not elicited)."""

    text: str
    marker: str | None = None
    event: int | None = None
    pre: float | None = None
    post: float | None = None


@dataclass(frozen=True)
class Example:
    """One example trajectory: its problem and benchmark, answer and correctness, the expected
    confidence with the whole trajectory visible (None: not elicited) and its sentences."""

    problem: str
    benchmark: str
    answer: str
    correct: bool
    confidence: float | None
    sentences: tuple[MarkedSentence, ...]


def _sentences(trajectory: dict[str, object], events: pd.DataFrame) -> tuple[MarkedSentence, ...]:
    """The marked sentences of one trajectory, each event with its confidences (``events``:
    its rows of :func:`event_pairs`)."""
    pairs = {int(e): (float(a), float(b)) for e, a, b in events[["event", "pre", "post"]].values}
    out, k = [], 0
    for text, marker in marked_sentences(trajectory_from_json(dict(trajectory))):
        if marker is None:
            out.append(MarkedSentence(text))
            continue
        pre, post = pairs.get(k, (None, None))
        out.append(MarkedSentence(text, marker, k, pre, post))
        k += 1
    return tuple(out)


def example_trajectories(
    elicitations: pd.DataFrame, trajectories: pd.DataFrame, seed: int = 0, n: int = N_EXAMPLES
) -> tuple[Example, ...]:
    """Up to ``n`` example trajectories by the rule of :data:`EXAMPLE_RULE` (module
    docstring), from one read-out's ``elicitations`` and the run's own ``trajectories``."""
    if trajectories.empty or elicitations.empty:
        return ()
    events = event_pairs(elicitations)
    scored = sorted(set(events["problem"].astype(str)) & set(trajectories["problem"].astype(str)))
    if not scored:
        return ()
    rng = np.random.default_rng(seed)
    chosen = sorted(rng.choice(len(scored), size=min(n, len(scored)), replace=False).tolist())
    visible = item_differences(elicitations).set_index("problem")["E_r0.00"]
    rows = trajectories.set_index(trajectories["problem"].astype(str))
    out = []
    for i in chosen:
        problem = scored[i]
        row = rows.loc[problem]
        confidence = float(visible.get(problem, np.nan))
        out.append(
            Example(
                problem,
                str(row["benchmark"]),
                str(row["answer"]),
                bool(row["correct"]),
                confidence if np.isfinite(confidence) else None,
                _sentences(row["trajectory"], events[events["problem"].astype(str) == problem]),
            )
        )
    return tuple(out)
