"""What ``clearsight compare`` finds for two runs of one design, and the check that they are.

Two sweep runs: :mod:`clearsight.sweep.comparison.matching`; two trajectory-grounding runs:
:mod:`clearsight.grounding.compare`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from clearsight.validate import InputError

__all__ = ["Comparison", "one_design"]


@dataclass(frozen=True)
class Comparison:
    """``pairs``: the common items, one row each (labels and paired read-outs; ``_a`` run A);
    ``table``: their agreement table; ``differ``: the items that moved beyond the tolerance;
    ``figures``: :func:`~clearsight.sweep.comparison.paired.paired_figures` (a grounding run's:
    :func:`~clearsight.grounding.compare.grounding_figures`); ``n_a``/``n_b``: each
    run's finished items."""

    run_a: Path
    run_b: Path
    pairs: pd.DataFrame
    table: pd.DataFrame
    differ: pd.DataFrame
    figures: pd.DataFrame
    n_a: int
    n_b: int
    protocol: str = "sweep"
    """The runs' protocol: ``sweep`` or ``grounding``."""
    note: str = ""
    """How the items were matched and the figures bootstrapped, as ``compare.html`` says it
    (each protocol's comparison gives its own)."""


def one_design(
    run_a: Path, run_b: Path, design_a: Mapping[str, object], design_b: Mapping[str, object]
) -> None:
    """InputError naming the fields where two runs' designs (configurations without their
    free fields) differ."""
    if design_a != design_b:
        fields = sorted(
            k for k in set(design_a) | set(design_b) if design_a.get(k) != design_b.get(k)
        )
        raise InputError(
            f"{run_a} and {run_b} are runs of different designs (their configurations differ "
            f"in {', '.join(fields)}, which must match): compare matches the items of one "
            "design; run one of them again with the other's values of those fields (to ask a "
            "model fewer wordings or conditions, narrow model_wordings or model_conditions, "
            "which may differ)"
        )
