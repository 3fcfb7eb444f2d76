"""How the sweep's blind-spot width W pairs an awareness crossing with an accuracy crossing
(W = log10(V*_acc / V*_aware)): by default (``main``, clearsight's reading of the paper, which
does not say which accuracy crossing a second wording's W uses) every awareness signal of a
model, task and arm with *one* accuracy crossing, that of the main wording
(:func:`~clearsight.sweep.results.primary_wording` among the wordings the model was asked: the
reason-naming letter wording first); ``own`` pairs each awareness signal with the accuracy of
its own wording, so both crossings are measured on one set of replies. A run's manifest records
its pairing (:func:`w_pairing_of`); :func:`w_pairs` picks the pairs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from clearsight.sweep.results import RunData, primary_wording

__all__ = ["W_PAIRINGS", "WPairing", "w_pairing_of", "w_pairs"]

#: How W pairs an awareness crossing with an accuracy crossing: ``main`` (clearsight's reading
#: of the paper: one accuracy crossing per model, task and arm, the main wording's) or ``own``
#: (the awareness signal's own wording's accuracy).
WPairing = Literal["main", "own"]
W_PAIRINGS: tuple[WPairing, ...] = ("main", "own")


def w_pairing_of(data: RunData) -> WPairing:
    """The W pairing a run's manifest records (its ``w_accuracy`` entry, or its config's),
    ``main`` — the default — for a run whose manifest names none."""
    config = data.manifest.get("config", {})
    chosen = data.manifest.get("w_accuracy", config.get("w_accuracy", "main"))
    return "own" if chosen == "own" else "main"


def w_pairs(
    keys: Sequence[tuple[str, str, str, str]],
    acc_x: Mapping[tuple[str, str, str, str], int],
    aware: Sequence[int],
    pairing: WPairing,
) -> list[tuple[int, int]]:
    """(accuracy crossing, awareness crossing) of every ``aware`` crossing (``keys[x]``: the
    arm, model, task and wording of crossing x; ``acc_x``: the accuracy crossing of each such
    key): the accuracy of the main wording among those with an accuracy crossing of the same
    model, task and arm (``main``), or of its own wording (``own``)."""
    asked: dict[tuple[str, str, str], list[str]] = {}
    for arm, model, task, wording in acc_x:
        asked.setdefault((arm, model, task), []).append(wording)
    pairs = []
    for x in aware:
        arm, model, task, wording = keys[x]
        where = (arm, model, task)
        if pairing == "main":
            present = asked[where]
            main = primary_wording(present, verbal=False) or primary_wording(present, verbal=True)
            wording = main or wording
        pairs.append((acc_x[(*where, wording)], x))
    return pairs
