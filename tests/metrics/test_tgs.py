"""The paper's TGS aggregation against hand-computed cases where other averaging differs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from clearsight.grounding.tgs import AXES, item_differences, masking_curve, pair_score, scores
from clearsight.metrics import benchmark_means, tgs_pair, tgs_self
from clearsight.validate import InputError


def test_tgs_self_weighs_benchmarks_equally() -> None:
    bench = ["a", "a", "a", "b"]
    vis = [0.9, 0.8, 0.7, 0.5]
    masked = [0.5, 0.5, 0.5, 0.5]
    # a: mean(0.4, 0.3, 0.2) = 0.3; b: 0.0; pooled over items would give 0.225
    assert tgs_self(bench, vis, masked) == pytest.approx(0.15)
    assert tgs_self(["a", "b"], [0.9, np.nan], [0.5, 0.5]) == pytest.approx(0.4)  # b has none
    assert np.isnan(tgs_self(["a"], [np.nan], [0.5]))
    with pytest.raises(InputError, match="labels"):
        tgs_self(["a"], [0.9, 0.8], [0.5, 0.5])


def test_tgs_pair_averages_per_axis_then_over_axes() -> None:
    # benchmark t (text answers) has no answer axis; v has two vision pairs, one of each other
    rows = [
        ("v", "vision", 0.8, 0.4),  # +0.4
        ("v", "vision", 0.8, 0.6),  # +0.2
        ("v", "reasoning", 0.7, 0.7),  # 0.0
        ("v", "answer", 0.9, 0.3),  # +0.6
        ("t", "vision", 0.6, 0.6),  # 0.0
        ("t", "reasoning", 0.8, 0.6),  # +0.2
    ]
    bench, axis, good, bad = (list(c) for c in zip(*rows, strict=True))
    got = tgs_pair(bench, axis, good, bad)
    # vision: mean(v: 0.3, t: 0.0) = 0.15; reasoning: mean(0.0, 0.2) = 0.1; answer: v only, 0.6
    assert dict(got.per_axis) == pytest.approx({"vision": 0.15, "reasoning": 0.1, "answer": 0.6})
    assert got.value == pytest.approx((0.15 + 0.1 + 0.6) / 3)
    # what averaging the axes inside each item first would give instead
    items_first = np.mean([np.mean([0.3, 0.0, 0.6]), np.mean([0.0, 0.2])])
    assert got.value != pytest.approx(items_first)
    assert benchmark_means(["x", "x", "y"], [1.0, np.nan, 2.0]) == {"x": 1.0, "y": 2.0}


def _elicitations() -> pd.DataFrame:
    """Two benchmarks; b2's problems have no answer pair; p3 lacks the r = 0.5 read-out."""
    rows = []
    for i, bench in enumerate(["b1", "b1", "b1", "b2", "b2"]):
        vals = {
            "bench/good": 0.8,
            "bench/vision/bad": 0.8 - 0.1 * (i + 1),
            "bench/reasoning/bad": 0.7,
            **({"bench/answer/bad": 0.2} if bench == "b1" else {}),
        }
        for r in (0.0, 0.25, 0.5, 0.75, 1.0):
            if not (i == 3 and r == 0.5):
                vals[f"self/r{r:.2f}"] = 0.9 - 0.1 * r - 0.01 * i
        rows += [
            {"problem": f"p{i}", "benchmark": bench, "variant": v, "expected": e}
            for v, e in vals.items()
        ]
    return pd.DataFrame(rows)


def test_the_scores_use_the_papers_aggregation_with_the_sd_across_benchmarks() -> None:
    frame = _elicitations()
    d = item_differences(frame)
    s = scores(frame, n_boot=300)
    long = d.melt(id_vars=["benchmark"], value_vars=[f"tgs_pair_{a}" for a in AXES])
    long = long.dropna()
    want = tgs_pair(long["benchmark"], long["variable"], long["value"], np.zeros(len(long)))
    assert s["tgs_pair"].interval.estimate == pytest.approx(want.value, rel=1e-12)
    # vision: b1 (0.1+0.2+0.3)/3 = 0.2, b2 (0.4+0.5)/2 = 0.45 -> 0.325; reasoning 0.1; answer 0.6
    assert want.value == pytest.approx((0.325 + 0.1 + 0.6) / 3)
    assert s["tgs_pair"].interval.low <= want.value <= s["tgs_pair"].interval.high
    assert (s["tgs_pair"].n_items, s["tgs_pair"].n_benchmarks) == (13, 2)
    # b1's own TGS-pair (0.2 + 0.1 + 0.6) / 3, b2's (0.45 + 0.1) / 2
    assert s["tgs_pair"].sd_benchmarks == pytest.approx(np.std([0.3, 0.275], ddof=1))
    assert s["tgs_self"].sd_benchmarks == pytest.approx(0.0, abs=1e-12)  # 0.1 in both
    assert pair_score(d.iloc[:0]).n_items == 0


def test_the_masking_curve_uses_one_common_valid_population() -> None:
    d = item_differences(_elicitations())
    curve = masking_curve(d, n_boot=200)
    # p3 lacks r = 0.5, so it leaves every share (4 items: b1 x3, b2 x1)
    assert {c.n_items for c in curve.values()} == {4}
    # E(r) = 0.9 - 0.1 r - 0.01 i: b1 mean over i = 0, 1, 2; b2 only i = 4
    e0 = np.mean([np.mean([0.9, 0.89, 0.88]), 0.86])
    assert curve["E_r0.00"].interval.estimate == pytest.approx(e0)
    assert curve["dE_r1.00"].interval.estimate == pytest.approx(-0.1)
    assert curve["dE_r0.00"].interval.estimate == pytest.approx(0.0, abs=1e-15)
