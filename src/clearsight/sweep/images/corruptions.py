"""Every ImageNet-C corruption of a run on the metre axis: each severity's V_eq over the scenes,
and whether the corruption acts like lost contrast at all (issue 45 item 2; docs/methods.md §2).

A severity is *placed* on the fog axis where the median over scenes of the detail it added,
``a = ||D' - g D||^2 / ||D||^2`` (:attr:`clearsight.physics.Equivalence.added`), is at most
:data:`~clearsight.physics.ATTENUATION_MAX_ADDED` (1/4): an attenuation of detail — fog's
transmission, a blur — cannot add more, so a larger residual says the corruption added detail
of its own (noise, displaced or blocked edges) and its gain-matched V_eq is not a visibility.
A corruption's severities form a *metre grid* — the levels its W is computed on
(:mod:`clearsight.sweep.numbers.corruptions`) — where every severity is placed and their median
V_eq are finite and fall strictly from severity to severity. :func:`summarise` writes the
table as the text ``clearsight equivalence`` prints.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from clearsight.physics import ATTENUATION_MAX_ADDED, CORRUPTIONS
from clearsight.sweep.images.equivalence import monotone_veq_share, veq_summary

__all__ = [
    "MetreGrid",
    "corruption_order",
    "corruption_veq_table",
    "metre_grid",
    "summarise",
]


def corruption_order(names: set[str]) -> list[str]:
    """``names`` in display order: fog first, then ImageNet-C's own order, unknown names last."""
    known = ["fog", *(c for c in CORRUPTIONS if c != "fog")]
    return [c for c in known if c in names] + sorted(names - set(known))


def _added_columns(group: pd.DataFrame) -> dict[str, float]:
    """Median and quartiles of the added detail ``a`` of one severity's scenes (NaN: none)."""
    column = group["added"] if "added" in group else pd.Series(dtype=np.float64)
    added = column.dropna().to_numpy(dtype=np.float64)
    if added.size == 0:
        return {"added_median": math.nan, "added_q25": math.nan, "added_q75": math.nan}
    q25, med, q75 = (float(x) for x in np.percentile(added, [25, 50, 75]))
    return {"added_median": med, "added_q25": q25, "added_q75": q75}


def corruption_veq_table(veq: pd.DataFrame) -> pd.DataFrame:
    """Per corruption (:func:`corruption_order`) and severity, over the scenes: the columns of
    :func:`~clearsight.sweep.images.equivalence.veq_summary` (``veq_*``, ``gain_*``,
    ``n_scenes``), the added detail's ``added_median``, ``added_q25``, ``added_q75``,
    ``placed`` (``added_median`` <= :data:`~clearsight.physics.ATTENUATION_MAX_ADDED`; False
    where no added detail was stored) and the corruption's monotone shares
    (:func:`~clearsight.sweep.images.equivalence.monotone_veq_share`: ``strict``,
    ``non_strict``, ``n_monotone``). ``veq``: V_eq rows with a ``corruption`` column."""
    frames = []
    for name in corruption_order(set(veq["corruption"])) if not veq.empty else []:
        mine = veq[veq["corruption"] == name]
        summary = veq_summary(mine)
        added = pd.DataFrame(
            [_added_columns(g) | {"severity": s} for s, g in mine.groupby("severity")]
        )
        share = monotone_veq_share(mine)
        summary = summary.merge(added, on="severity", how="left").assign(
            corruption=name,
            placed=lambda t: t["added_median"] <= ATTENUATION_MAX_ADDED,
            strict=share.strict,
            non_strict=share.non_strict,
            n_monotone=share.n,
        )
        frames.append(summary)
    if not frames:
        return pd.DataFrame()
    table = pd.concat(frames, ignore_index=True)
    return table[["corruption", *(c for c in table.columns if c != "corruption")]]


@dataclass(frozen=True)
class MetreGrid:
    """A corruption's severities as visibility levels: ``levels`` (metres, one per severity in
    ``severities``' order, falling) or empty with ``reason``, in words, why there is none."""

    severities: tuple[int, ...]
    levels: tuple[float, ...]
    reason: str = ""


def metre_grid(rows: pd.DataFrame) -> MetreGrid:
    """The metre grid of one corruption's rows of :func:`corruption_veq_table` (module
    docstring): every severity placed, median V_eq finite and strictly falling."""
    rows = rows.sort_values("severity")
    severities = tuple(int(s) for s in rows["severity"])
    flagged = rows[~rows["placed"].astype(bool)]
    if len(flagged):
        worst = flagged.iloc[0]
        if math.isnan(worst.added_median):
            why = "no added-detail record (a run made before it was stored)"
        else:
            why = (
                f"adds detail at severity {int(worst.severity)} (median added detail "
                f"{worst.added_median:.2f} > {ATTENUATION_MAX_ADDED:g}): not lost contrast"
            )
        return MetreGrid(severities, (), why)
    medians = rows["veq_median"].to_numpy(dtype=np.float64)
    if not np.isfinite(medians).all() or (medians <= 0).any():
        return MetreGrid(severities, (), "a severity's median V_eq is 0 or beyond the search")
    if len(medians) < 2 or not (np.diff(medians) < 0).all():
        return MetreGrid(severities, (), "median V_eq does not fall strictly over the severities")
    return MetreGrid(severities, tuple(float(v) for v in medians))


def summarise(table: pd.DataFrame) -> str:
    """Per corruption (fog where the table names none) and severity: median and IQR of V_eq,
    of the retained gain and the median added detail where the table has them, whether the
    severity is placed on the fog axis (the report's rule:
    :func:`corruption_veq_table`; 'no: adds detail'), and
    each corruption's monotone shares, as a small text table."""
    named = table if "corruption" in table else table.assign(corruption="fog")
    rows = corruption_veq_table(named)
    gains, added = "gain" in table, "added" in table
    head = f"{'corruption':<18}{'severity':>8}  V_eq median   IQR (m)"
    head = f"{head:<58}" + ("gain median   IQR" if gains else "")
    head = f"{head:<88}" + ("added  placed" if added else "")
    lines = [head.rstrip()]
    for r in rows.itertuples():
        line = f"{r.corruption:<18}{r.severity:>8}  {r.veq_median:9.1f} m   "
        line = f"{line}{r.veq_q25:.1f}-{r.veq_q75:.1f}"
        if gains:
            line = f"{line:<58}{r.gain_median:11.3f}   {r.gain_q25:.3f}-{r.gain_q75:.3f}"
        if added:
            placed = "yes" if r.placed else "no: adds detail"
            line = f"{line:<88}{r.added_median:5.3f}  {placed}"
        lines.append(line)
    for name, group in rows.groupby("corruption", sort=False):
        share = group.iloc[0]
        lines.append(
            f"{name}: V_eq decreases strictly over severities 1-5 in {share.strict:.0%} of "
            f"{int(share.n_monotone)} scenes (non-increasing: {share.non_strict:.0%})"
        )
    return "\n".join(lines)
