"""The reliability diagrams of a sweep run in ``clearsight view``, bin by bin: each bin a
:class:`~clearsight.faces.viewing.Point` whose value is its items' accuracy, ``n`` their number
and filters list exactly those items, read from the side index's tally
(:mod:`~clearsight.sweep.view.index`: each row's reliability ``bin`` is one of its groups).

The panels are cut as the report cuts them (:func:`~clearsight.sweep.numbers.panels.
reliability_panels`): per model, task and wording (the confidence it reads:
:func:`~clearsight.sweep.results.confidence_signal`) and each arm the model was shown, the
pooled cut (the clean images and every level of the arm), then the run's two murkiest levels
of the arm; the items are the answered ones (an answer, not abstained) with a confidence, in
the analysis's right-closed bins. Empty bins are left out.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pandas as pd

from clearsight.faces.viewing import Point
from clearsight.sweep.results import ARMS, confidence_signal, level_label
from clearsight.sweep.view.index import BINS, SWEEP_INDEX

__all__ = ["bin_points"]

_PANEL = ["model", "task", "wording"]


def bin_points(tally: Sequence[Sequence[Any]]) -> Iterator[Point]:
    """The reliability diagrams' bins of the index's records (module docstring), from the rows
    of its tally (:data:`~clearsight.sweep.view.index.CELLS`): every cut's bins summed in one
    grouping, panels in the run's order, then arms, cuts and bins in theirs."""
    frame = pd.DataFrame(list(tally), columns=list(SWEEP_INDEX.names("tally")))
    murkiest = {
        arm: sorted(set(frame.loc[frame["condition"] == arm, "x"]), reverse=True)[-2:]
        for arm in ARMS
    }
    frame = frame[frame["bin"] > 0]
    frame = frame.assign(start=frame.groupby(_PANEL)["first"].transform("min"))
    cuts = pd.concat([cut for arm in ARMS for cut in _cuts(frame, arm, murkiest[arm])])
    shown = set(frame[[*_PANEL, "condition"]].itertuples(index=False, name=None))
    cuts = cuts[[key in shown for key in cuts[[*_PANEL, "arm"]].itertuples(index=False, name=None)]]
    groups = ["start", *_PANEL, "rank", "cut", "bin"]
    sums = cuts.groupby(groups)[["n_correct", "s_correct"]].sum()
    rows: Iterator[tuple[Any, ...]] = sums.reset_index().itertuples(index=False, name=None)
    for _, model, task, wording, rank, cut, b, n, right in rows:
        arm = ARMS[int(rank)]
        name, filters = _cut_of(arm, murkiest[arm], int(cut))
        curve = " · ".join((model, task, wording, confidence_signal(model, wording), name))
        label = BINS[int(b) - 1]
        where = {"model": model, "task": task, "wording": wording, **filters, "bin": label}
        yield Point(curve, _x_label(label), float(right) / n, int(n), where)


def _cuts(frame: pd.DataFrame, arm: str, murkiest: Sequence[float]) -> Iterator[pd.DataFrame]:
    """The tally's rows of each cut of ``arm``'s panels, marked with the arm's ``rank`` and the
    ``cut`` (0: the clean images with every level of the arm; k: its k-th of ``murkiest``)."""
    rank = ARMS.index(arm)
    yield frame[frame["condition"].isin(["clean", arm])].assign(arm=arm, rank=rank, cut=0)
    for k, level in enumerate(murkiest, start=1):
        at = frame[(frame["condition"] == arm) & (frame["x"] == level)]
        yield at.assign(arm=arm, rank=rank, cut=k)


def _cut_of(arm: str, murkiest: Sequence[float], cut: int) -> tuple[str, dict[str, str]]:
    """A cut's name on its curve and the listing filters that select its items."""
    if cut == 0:
        return f"reliability · {arm} pooled with clean", {"pooled": arm}
    label = level_label(murkiest[cut - 1])
    return f"reliability · {arm} at {label} m", {"condition": arm, "level": label}


def _x_label(label: str) -> str:
    """A bin's place on the diagram's axis: ``[0.0, 0.1]`` for the first, ``(lo, hi]`` else."""
    lo, hi = label.split("-")
    return f"{'[' if label == BINS[0] else '('}{lo}, {hi}]"
