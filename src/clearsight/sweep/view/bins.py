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
    of its tally (:data:`~clearsight.sweep.view.index.CELLS`), panels in the run's order."""
    frame = pd.DataFrame(list(tally), columns=list(SWEEP_INDEX.names("tally")))
    murkiest = {
        arm: sorted(set(frame.loc[frame["condition"] == arm, "x"]), reverse=True)[-2:]
        for arm in ARMS
    }
    frame = frame[frame["bin"] > 0]
    groups = frame.groupby(_PANEL, sort=False)
    order = groups["first"].min().sort_values()
    for model, task, wording in order.index:
        mine = groups.get_group((model, task, wording))
        panel = {"model": model, "task": task, "wording": wording}
        name = " · ".join((model, task, wording, confidence_signal(model, wording)))
        for arm in (a for a in ARMS if (mine["condition"] == a).any()):
            for cut, filters, rows in _cuts(mine, arm, murkiest[arm]):
                sums = rows.groupby("bin")[["n_correct", "s_correct"]].sum()
                curve = f"{name} · reliability · {cut}"
                for b, n, right in sums.itertuples(name=None):
                    label = BINS[int(b) - 1]
                    where = {**panel, **filters, "bin": label}
                    yield Point(curve, _x_label(label), right / n, int(n), where)


def _cuts(
    rows: pd.DataFrame, arm: str, murkiest: Sequence[float]
) -> Iterator[tuple[str, dict[str, str], pd.DataFrame]]:
    """A panel's cuts of ``rows``: the clean images with every level of ``arm``, then each of
    its ``murkiest`` levels; each with its name and the listing filters that select it."""
    yield f"{arm} pooled with clean", {"pooled": arm}, rows[rows["condition"].isin(["clean", arm])]
    for level in murkiest:
        label = level_label(level)
        at = rows[(rows["condition"] == arm) & (rows["x"] == level)]
        yield f"{arm} at {label} m", {"condition": arm, "level": label}, at


def _x_label(label: str) -> str:
    """A bin's place on the diagram's axis: ``[0.0, 0.1]`` for the first, ``(lo, hi]`` else."""
    lo, hi = label.split("-")
    return f"{'[' if label == BINS[0] else '('}{lo}, {hi}]"
