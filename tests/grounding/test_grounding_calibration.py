"""Grounding ECE and AUROC are averaged as every other grounding number: each benchmark's own,
then the mean over benchmarks, with the two-stage bootstrap; the pooled values stay beside
them, labelled (issue 36, item 9). The expectations are worked out by hand."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from clearsight.grounding.tgs import calibration_scores, two_stage_score
from fixtures.grounding_runs import CALIBRATION_ITEMS, calibration_run

# b1: four answers at 0.9, three right: one bin, |3 - 3.6| / 4 = 0.15; all tied: AUROC 0.5.
# b2: 0.25 wrong and 0.75 right, two bins: (0.25 + 0.25) / 2 = 0.25; AUROC 1.
ECE_B1, ECE_B2, AUROC_B1, AUROC_B2 = 0.15, 0.25, 0.5, 1.0
ECE_AVERAGED = (ECE_B1 + ECE_B2) / 2  # 0.20
AUROC_AVERAGED = (AUROC_B1 + AUROC_B2) / 2  # 0.75
# pooled, six answers: bins 0.25 (gap 0.25), 0.75 (gap 0.25), 0.9 (|3 - 3.6| = 0.6): 1.1 / 6;
# AUROC over the 4 x 2 (right, wrong) pairs: the three right 0.9s tie the wrong 0.9 (3 x 1/2)
# and beat the wrong 0.25 (3); the right 0.75 beats the 0.25 (1): 5.5 / 8
ECE_POOLED = 1.1 / 6
AUROC_POOLED = 5.5 / 8


def _inputs() -> tuple[list[float], list[float], list[str]]:
    bench, conf, correct = zip(*CALIBRATION_ITEMS, strict=True)
    return list(conf), [float(c) for c in correct], list(bench)


def test_ece_and_auroc_are_benchmark_means_with_the_pooled_values_beside_them() -> None:
    conf, correct, bench = _inputs()
    s = calibration_scores(conf, correct, bench, n_boot=400, seed=3)
    assert s["ECE"].interval.estimate == pytest.approx(ECE_AVERAGED)
    assert s["AUROC"].interval.estimate == pytest.approx(AUROC_AVERAGED)
    assert s["ECE_pooled"].interval.estimate == pytest.approx(ECE_POOLED)
    assert s["AUROC_pooled"].interval.estimate == pytest.approx(AUROC_POOLED)
    assert abs(ECE_AVERAGED - ECE_POOLED) > 0.01
    assert abs(AUROC_AVERAGED - AUROC_POOLED) > 0.05
    assert (s["ECE"].n_items, s["ECE"].n_benchmarks) == (6, 2)
    assert s["ECE"].sd_benchmarks == pytest.approx(np.std([ECE_B1, ECE_B2], ddof=1))
    assert s["AUROC"].sd_benchmarks == pytest.approx(np.std([AUROC_B1, AUROC_B2], ddof=1))
    for key in ("ECE", "AUROC", "ECE_pooled", "AUROC_pooled"):
        i = s[key].interval
        assert i.low <= i.estimate <= i.high
        assert i.high > i.low  # a bootstrap that resampled something


def test_a_benchmark_without_both_outcomes_has_no_auroc_but_its_ece_counts() -> None:
    conf, correct, bench = _inputs()
    s = calibration_scores([*conf, 0.5], [*correct, 1.0], [*bench, "b3"], n_boot=200)
    assert s["ECE"].interval.estimate == pytest.approx((ECE_B1 + ECE_B2 + 0.5) / 3)
    assert s["AUROC"].interval.estimate == pytest.approx(AUROC_AVERAGED)  # b3 left out
    assert (s["AUROC"].n_benchmarks, s["AUROC"].n_items) == (2, 6)
    assert s["ECE"].n_benchmarks == 3


def test_the_two_stage_statistic_draws_as_the_two_stage_mean() -> None:
    """The generalised bootstrap gives the two-stage mean's replicates for a mean, and averages
    a statistic over the copies where it is defined."""
    from clearsight.metrics.bootstrap import two_stage_replicates, two_stage_statistic

    values = np.array([1.0, 2.0, 4.0, 0.0, 3.0])
    bench = np.array(["a", "a", "a", "b", "b"])
    _, reps = two_stage_replicates(values, bench, n_boot=300, seed=5)
    groups = [values[:3], values[3:]]
    stats = [lambda w, g=g: (w @ g / g.size)[:, None] for g in groups]
    np.testing.assert_allclose(two_stage_statistic(stats, [3, 2], 300, 5)[:, 0], reps)
    # b's statistic undefined: each replicate is the mean over its copies of a alone
    undefined = [stats[0], lambda w: np.full((w.shape[0], 1), np.nan)]
    only_a = two_stage_statistic(undefined, [3, 2], 300, 5)[:, 0]
    finite = only_a[np.isfinite(only_a)]
    assert finite.size > 0
    assert np.all((finite >= 0.0) & (finite <= 4.0))
    assert np.isnan(only_a).sum() > 0  # draws that picked b twice have nothing to average


def test_the_run_reports_the_averaged_and_the_pooled_values(tmp_path: Path) -> None:
    from clearsight.grounding import analyse_grounding, build_grounding_report

    run = calibration_run(tmp_path / "run")
    analysis = analyse_grounding(run, n_boot=200)
    assert analysis.overall["ECE"].interval.estimate == pytest.approx(ECE_AVERAGED)
    assert analysis.overall["ECE_pooled"].interval.estimate == pytest.approx(ECE_POOLED)
    assert analysis.per_benchmark["b1"]["ECE"].interval.estimate == pytest.approx(ECE_B1)
    assert analysis.per_benchmark["b2"]["AUROC"].interval.estimate == pytest.approx(AUROC_B2)
    # every grounding score of this run averages the benchmarks the same way: TGS-self too
    tgs = two_stage_score("x", [0.4, 0.4, 0.4, 0.4, -0.25, 0.25], ["b1"] * 4 + ["b2"] * 2)
    assert analysis.overall["tgs_self"].interval.estimate == pytest.approx(tgs.interval.estimate)
    paths, _ = build_grounding_report(run, n_boot=200)
    csv = pd.read_csv(paths.summary_csv, dtype=str).set_index("score")["overall"]
    assert csv["ECE (visible self confidence; mean over benchmarks)"].startswith("0.2000 [")
    assert csv["AUROC (visible self confidence; mean over benchmarks)"].startswith("0.7500 [")
    assert csv["ECE pooled over items (item bootstrap)"].startswith(f"{ECE_POOLED:.4f} [")
    assert csv["AUROC pooled over items (item bootstrap)"].startswith("0.6875 [")
    md = paths.summary_md.read_text(encoding="utf-8")
    assert "ECE and AUROC too are each benchmark's own, averaged over the benchmarks" in md
