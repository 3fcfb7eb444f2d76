"""Metrics as pure array functions: calibration, crossing visibility and blind-spot width,
seeded cluster and two-stage bootstrap intervals, Jensen–Shannon divergence, selective
prediction (risk-coverage, AURC), cross-run calibration, trajectory-grounding scores and the
exact Wilcoxon test (docs/methods.md §4–6). Each function states its formula in its docstring."""

from clearsight.metrics.bootstrap import (
    BootstrapResult,
    ClusterSums,
    Interval,
    bootstrap_weights,
    cluster_bootstrap,
    cluster_bootstrap_mean,
    cluster_sums,
    percentile_interval,
    two_stage_bootstrap,
    two_stage_replicates,
)
from clearsight.metrics.calibration import (
    CALIBRATION_STATS,
    ReliabilityBins,
    auroc,
    bin_edges,
    brier,
    calibration_statistic,
    ece,
    mce,
    reliability_bins,
)
from clearsight.metrics.crossing import (
    BlindSpot,
    BlindSpotBatch,
    Crossing,
    CrossingBatch,
    blind_spot_width,
    blind_spot_width_batch,
    crossing_visibility,
    crossing_visibility_batch,
)
from clearsight.metrics.crossrun import cross_run_ece, cross_run_prediction
from clearsight.metrics.divergence import jsd_bits, jsd_bits_batch
from clearsight.metrics.selective import RiskCoverage, aurc_statistic, risk_coverage
from clearsight.metrics.significance import wilcoxon_exact
from clearsight.metrics.tgs import TgsPair, benchmark_means, tgs_pair, tgs_self

__all__ = [
    "CALIBRATION_STATS",
    "BlindSpot",
    "BlindSpotBatch",
    "BootstrapResult",
    "ClusterSums",
    "Crossing",
    "CrossingBatch",
    "Interval",
    "ReliabilityBins",
    "RiskCoverage",
    "TgsPair",
    "aurc_statistic",
    "auroc",
    "benchmark_means",
    "bin_edges",
    "blind_spot_width",
    "blind_spot_width_batch",
    "bootstrap_weights",
    "brier",
    "calibration_statistic",
    "cluster_bootstrap",
    "cluster_bootstrap_mean",
    "cluster_sums",
    "cross_run_ece",
    "cross_run_prediction",
    "crossing_visibility",
    "crossing_visibility_batch",
    "ece",
    "jsd_bits",
    "jsd_bits_batch",
    "mce",
    "percentile_interval",
    "reliability_bins",
    "risk_coverage",
    "tgs_pair",
    "tgs_self",
    "two_stage_bootstrap",
    "two_stage_replicates",
    "wilcoxon_exact",
]
