"""Hesitation analysis (paper §3.4, App. A.3): does confidence drop after the model doubts?

Markers ("wait", "let me re-check", "actually", "hmm", "on second thought", ...) are a data file
(``data/hesitation_markers.txt``). A hesitation event is a sentence of a trajectory's rationale
that contains a marker, and every such sentence is one event (the paper scores every eligible
event, Figs. 13-14: one point each); confidence is elicited on the trajectory truncated just
before that sentence and just after it, the final answer held fixed, and the analysis reports
``P(|c_pre - c_post| <= 0.02)`` and the mean change ``c_post - c_pre`` over events, with the
event counts. A trajectory kept as the model wrote it (a native template's) is truncated in its
own text: the event sentence and what follows it in the rationale are cut out, the think
block's closing tag and the answer stay as written.

Variant names: the first event of a trajectory is ``hesitation/pre`` / ``hesitation/post`` (the
names of runs made when only it was scored, so they resume unchanged), event k >= 1
``hesitation/<k>/pre`` / ``hesitation/<k>/post`` (:func:`hesitation_variant`,
:func:`parse_hesitation_variant`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib.resources import files
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from clearsight.grounding.trajectories.parsing import sentence_spans, sentences
from clearsight.grounding.trajectories.trajectory import Trajectory
from clearsight.grounding.trajectories.written import WrittenTrajectory

if TYPE_CHECKING:
    import pandas as pd

STABLE = 0.02


@lru_cache(maxsize=1)
def markers() -> tuple[str, ...]:
    """The hesitation markers of the bundled data file (lower case)."""
    text = files("clearsight.grounding").joinpath("data/hesitation_markers.txt").read_text()
    return tuple(
        line.strip().lower()
        for line in text.splitlines()
        if line.strip() and not line.startswith("#")
    )


def _pattern() -> re.Pattern[str]:
    alts = sorted(markers(), key=len, reverse=True)
    return re.compile(r"\b(" + "|".join(re.escape(m) for m in alts) + r")\b", re.IGNORECASE)


@dataclass(frozen=True)
class Hesitation:
    """One hesitation event: the marker, and the trajectory truncated before / after it."""

    marker: str
    pre: Trajectory
    post: Trajectory


def find_hesitations(traj: Trajectory) -> list[Hesitation]:
    """Every hesitation event of the rationale (vision, then reasoning), in order: one per
    sentence that holds a marker (its first marker names it). A trajectory kept as written is
    truncated in its text (:func:`_written_hesitations`)."""
    if isinstance(traj, WrittenTrajectory):
        return _written_hesitations(traj)
    pat = _pattern()
    rationale = [("vision", s) for s in sentences(traj.vision)]
    rationale += [("reasoning", s) for s in sentences(traj.reasoning)]

    def upto(n: int) -> Trajectory:
        v = " ".join(s for part, s in rationale[:n] if part == "vision")
        r = " ".join(s for part, s in rationale[:n] if part == "reasoning")
        return Trajectory(v, r, traj.answer)

    events = []
    for i, (_, sent) in enumerate(rationale):
        m = pat.search(sent)
        if m is not None:
            events.append(Hesitation(m.group(1).lower(), upto(i), upto(i + 1)))
    return events


def _written_hesitations(traj: WrittenTrajectory) -> list[Hesitation]:
    """The events of a trajectory kept as written: its rationale sentences found in its text;
    the pre (post) side is the text with everything from the event sentence's start (end) to
    the rationale's end cut out, the rest — the block's closing tag, the answer — as
    written."""
    pat = _pattern()
    (vs, ve), (rs, re_), _ = traj.spans
    end = max(ve, re_)
    events = []
    for s, e in sentence_spans(traj.text, vs, ve) + sentence_spans(traj.text, rs, re_):
        m = pat.search(traj.text, s, e)
        if m is not None:
            before = len(traj.text[:s].rstrip())  # the white space before it goes too
            events.append(Hesitation(m.group(1).lower(), traj.cut(before, end), traj.cut(e, end)))
    return events


def marked_sentences(traj: Trajectory) -> list[tuple[str, str | None]]:
    """The rationale's sentences in order (vision, then reasoning; a trajectory kept as written
    in its own text), each with the marker that makes it a hesitation event (its first,
    lower case) or None: the marked ones are :func:`find_hesitations`' events, in order."""
    pat = _pattern()
    if isinstance(traj, WrittenTrajectory):
        (vs, ve), (rs, re_), _ = traj.spans
        spans = sentence_spans(traj.text, vs, ve) + sentence_spans(traj.text, rs, re_)
        found = [(traj.text[s:e], pat.search(traj.text, s, e)) for s, e in spans]
    else:
        found = [(t, pat.search(t)) for t in [*sentences(traj.vision), *sentences(traj.reasoning)]]
    return [(text, None if m is None else m.group(1).lower()) for text, m in found]


def hesitation_variant(event: int, side: str) -> str:
    """The variant name of event ``event`` (0-based) of a trajectory, ``side`` pre or post."""
    return f"hesitation/{side}" if event == 0 else f"hesitation/{event}/{side}"


_VARIANT = re.compile(r"^hesitation/(?:(\d+)/)?(pre|post)$")


def parse_hesitation_variant(variant: str) -> tuple[int, str] | None:
    """``(event, side)`` of a hesitation variant name, None for any other variant."""
    m = _VARIANT.match(variant)
    return None if m is None else (int(m.group(1) or 0), m.group(2))


def stable_share(pre: npt.ArrayLike, post: npt.ArrayLike, tol: float = STABLE) -> float:
    """P(|c_pre - c_post| <= tol) over events."""
    a, b = np.asarray(pre, dtype=np.float64), np.asarray(post, dtype=np.float64)
    return float(np.mean(np.abs(a - b) <= tol)) if a.size else float("nan")


def event_pairs(elicitations: pd.DataFrame) -> pd.DataFrame:
    """One row per hesitation event with both sides elicited: ``problem``, ``benchmark``,
    ``event`` (0-based within its trajectory), ``pre`` and ``post`` (expected confidences),
    from elicitation read-outs (columns ``problem``, ``benchmark``, ``variant``,
    ``expected``)."""
    import pandas as pd

    parsed = elicitations["variant"].map(parse_hesitation_variant)
    hes = elicitations[parsed.notna()].assign(
        event=[e for e, _ in parsed.dropna()], side=[s for _, s in parsed.dropna()]
    )
    if hes.empty:
        return pd.DataFrame(columns=["problem", "benchmark", "event", "pre", "post"])
    wide = hes.pivot_table(
        index=["problem", "benchmark", "event"], columns="side", values="expected", aggfunc="first"
    )
    wide = wide.reindex(columns=["pre", "post"]).dropna().reset_index()
    wide.columns.name = None
    return wide
