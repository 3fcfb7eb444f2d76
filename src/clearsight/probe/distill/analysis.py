"""Self-distillation's numbers (the paper's Table 2): BP accuracy of each distilled reasoner beside
its base, on the conversations of one probe run (the frame of
:func:`~clearsight.probe.results.transcripts_frame`). A reasoner is a distilled adapter where its
``hf:`` directory holds :data:`~clearsight.models.hf.ADAPTER_MANIFEST` naming its base.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd
from pydantic import JsonValue

from clearsight.models.hf import adapter_manifest


def _adapters(reasoners: Sequence[str]) -> dict[str, dict[str, JsonValue]]:
    """``{adapter reasoner: its manifest}`` for the reasoners that are distilled adapters
    (``hf:<directory>`` holding :data:`~clearsight.models.hf.ADAPTER_MANIFEST`)."""
    out = {}
    for name in reasoners:
        if name.startswith("hf:"):
            manifest = adapter_manifest(name.removeprefix("hf:"))
            if manifest is not None:
                out[name] = manifest
    return out


def adapter_bases(reasoners: Sequence[str]) -> dict[str, str]:
    """``{adapter reasoner: its base}`` for the reasoners that are distilled adapters."""
    return {name: str(m["base"]) for name, m in _adapters(reasoners).items()}


def trained_instances(reasoners: Sequence[str]) -> frozenset[str]:
    """The instances any of the adapters among ``reasoners`` trained or chose its epoch on
    (their manifests' ``train`` and ``validation`` trajectories)."""
    ids: set[str] = set()
    for manifest in _adapters(reasoners).values():
        for part in ("train", "validation"):
            rows = manifest.get(part)
            if isinstance(rows, list):
                ids.update(str(t["instance_id"]) for t in rows if isinstance(t, dict))
    return frozenset(ids)


def distill_table(
    frame: pd.DataFrame, bases: Mapping[str, str], trained: frozenset[str] = frozenset()
) -> pd.DataFrame:
    """Table 2: BP accuracy (%, over conversations) by dataset for each distilled reasoner
    (``bases``: adapter reasoner -> its base) and its base, run in the same probe run; one row
    per reasoner with the number of conversations. Only the true u's conversations (the
    ablation's are another population) on instances no adapter trained on (``trained``), so
    base and adapter are compared on the same held-out instances. Empty unless some adapter ran
    BP."""
    if frame.empty or not bases:
        return pd.DataFrame()
    bp = frame[frame["strategy"] == "bp"]
    if "signal" in bp:
        bp = bp[bp["signal"] == "true"]
    if trained and "instance_id" in bp:
        bp = bp[~bp["instance_id"].isin(trained)]
    keep = set(bases) | set(bases.values())
    bp = bp[bp["reasoner"].isin(keep)]
    if not set(bp["reasoner"]) & set(bases):
        return pd.DataFrame()
    table = bp.pivot_table(index="reasoner", columns="dataset", values="correct", aggfunc="mean")
    table = table * 100
    table.insert(0, "conversations", bp.groupby("reasoner").size())
    table.insert(0, "distilled from", [bases.get(r, "") for r in table.index])
    return table.reset_index()
