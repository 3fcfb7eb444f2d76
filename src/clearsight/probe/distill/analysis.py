"""Self-distillation's numbers (the paper's Table 2): BP accuracy of each distilled reasoner beside
its base, on the conversations of one probe run (the frame of
:func:`~clearsight.probe.results.transcripts_frame`). A reasoner is a distilled adapter where its
``hf:`` directory holds :data:`~clearsight.models.hf.ADAPTER_MANIFEST` naming its base.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from clearsight.models.hf import adapter_manifest


def adapter_bases(reasoners: Sequence[str]) -> dict[str, str]:
    """``{adapter reasoner: its base}`` for the reasoners that are distilled adapters
    (``hf:<directory>`` holding :data:`~clearsight.models.hf.ADAPTER_MANIFEST`)."""
    out = {}
    for name in reasoners:
        if name.startswith("hf:"):
            manifest = adapter_manifest(name.removeprefix("hf:"))
            if manifest is not None:
                out[name] = str(manifest["base"])
    return out


def distill_table(frame: pd.DataFrame, bases: Mapping[str, str]) -> pd.DataFrame:
    """Table 2: BP accuracy (%, over conversations) by dataset for each distilled reasoner
    (``bases``: adapter reasoner -> its base) and its base, run in the same probe run; one row
    per reasoner with the number of conversations. Empty unless some adapter ran BP."""
    if frame.empty or not bases:
        return pd.DataFrame()
    bp = frame[frame["strategy"] == "bp"]
    keep = set(bases) | set(bases.values())
    bp = bp[bp["reasoner"].isin(keep)]
    if not set(bp["reasoner"]) & set(bases):
        return pd.DataFrame()
    table = bp.pivot_table(index="reasoner", columns="dataset", values="correct", aggfunc="mean")
    table = table * 100
    table.insert(0, "conversations", bp.groupby("reasoner").size())
    table.insert(0, "distilled from", [bases.get(r, "") for r in table.index])
    return table.reset_index()
