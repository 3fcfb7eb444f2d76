"""The compiled loop behind :func:`clearsight.sweep.numbers.weather_draw.cell_scores`: ECE's
bins, Brier and AURC of every cell in one pass over the items sorted by cell and decreasing
confidence. A draw of calibration under weather scores four maps of some 36,000 items; written
as whole-array operations the pass took a dozen temporary arrays per map.

Imported on first use (numba takes a while to import); at module level so that numba's on-disk
cache finds it again in a new process (see :mod:`clearsight.physics.loops`).
"""

from __future__ import annotations

import numba
import numpy as np
import numpy.typing as npt


@numba.njit(cache=True, nogil=True)
def score_sorted(  # pragma: no cover - compiled; checked against the metrics cell by cell
    order: npt.NDArray[np.intp],
    cell: npt.NDArray[np.intp],
    conf: npt.NDArray[np.float64],
    correct: npt.NDArray[np.float64],
    weights: npt.NDArray[np.float64],
    edges: npt.NDArray[np.float64],
    gaps: npt.NDArray[np.float64],
    sums: npt.NDArray[np.float64],
) -> None:
    r"""Accumulate into ``gaps`` ``(cells, bins)`` each ECE bin's weighted
    :math:`\sum w (y - c)` (bin: the first edge at or above :math:`c`, less one, clipped, as
    ``np.searchsorted(edges, c, 'left') - 1``) and into ``sums`` ``(3, cells)`` each cell's
    weight, weighted :math:`\sum w (c - y)^2` and :math:`n \cdot \mathrm{AURC} =
    \sum_k (N_k - N_{k-1}) E_k / N_k` over its distinct confidences in decreasing order
    (:math:`N_k`, :math:`E_k`: the weight of the items and of the wrong ones at or above the
    k-th; a confidence whose items weigh 0 adds nothing). ``order`` lists the items by cell,
    then by decreasing confidence; every cell is one of ``gaps``' rows (not checked here)."""
    n_bins = edges.size - 1
    m = order.size
    i = 0
    accepted = 0.0
    errors = 0.0
    previous_cell = -1
    while i < m:
        c = cell[order[i]]
        s = conf[order[i]]
        if c != previous_cell:
            accepted = 0.0
            errors = 0.0
            previous_cell = c
        gained = 0.0
        while i < m and cell[order[i]] == c and conf[order[i]] == s:
            k = order[i]
            w = weights[k]
            b = 0
            while b < n_bins - 1 and edges[b + 1] < s:
                b += 1
            gaps[c, b] += w * (correct[k] - s)
            sums[1, c] += w * (s - correct[k]) ** 2
            gained += w
            errors += w * (1.0 - correct[k])
            i += 1
        accepted += gained
        sums[0, c] += gained
        if gained > 0:
            sums[2, c] += gained * errors / accepted
