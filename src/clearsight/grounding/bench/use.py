"""A built TGS-Bench put to use: its problems and bad sides in a grounding run that scores it
(``GroundingConfig.bench``), and the retention of its build in the run's report
(:mod:`clearsight.grounding.bench.file` reads and writes the bench itself)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import pandas as pd

from clearsight.grounding.bench.file import TgsBench
from clearsight.grounding.bench.pairs import AXES
from clearsight.grounding.problems.problem import Problem

__all__ = ["bench_edits", "bench_problems", "retention_table"]


def bench_problems(bench: TgsBench) -> list[Problem]:
    """The bench's problems, each with its good trajectory as the canonical ``solution`` (the
    good side every pair of the grounding run is scored against)."""
    out = []
    for item in bench.items:
        g = item.good
        solution = {"observation": g.vision, "reasoning": g.reasoning, "answer": g.answer}
        out.append(dataclasses.replace(item.problem, solution=solution))
    return out


def bench_edits(bench: TgsBench) -> dict[tuple[str, str], str]:
    """``(problem id, axis)`` -> the bad side's text on that axis, for every pair."""
    return {
        (item.problem.id, axis): pair.bad.to_json()[axis]
        for item in bench.items
        for axis, pair in item.pairs.items()
    }


def retention_table(manifest: Mapping[str, Any]) -> pd.DataFrame:
    """Retention of a build per benchmark (and ``all``, last): one row each with the problems
    attempted, the good trajectories kept and the pairs kept per axis, and the retention
    rates ``good = kept good / attempted`` and ``<axis> = pairs kept on axis / attempted``
    (the paper's 97.6 % / 93.4 % are another ratio: the share of its 5.8K-item pool kept when
    regenerated with a 32B / 7B generator)."""
    counts: Mapping[str, Mapping[str, int]] = manifest.get("counts") or {}
    rows = []
    for bench in sorted(counts, key=lambda b: (b == "all", b)):  # "all" last
        c = counts[bench]
        attempted = int(c.get("attempted", 0))
        row: dict[str, str | int] = {"benchmark": bench, "attempted": attempted}
        for k in ("good", *AXES):
            kept = int(c.get(k, 0))
            rate = f"{kept / attempted:.3f}" if attempted else "n/a"
            row[k] = f"{kept} ({rate})"
        rows.append(row)
    return pd.DataFrame(rows, columns=["benchmark", "attempted", "good", *AXES])
