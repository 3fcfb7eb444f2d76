"""The grounding report: TGS-self, TGS-pair per axis and averaged, ECE and AUROC beside them.

Tables per benchmark and overall (overall = mean over benchmarks of per-benchmark means, with a
two-stage bootstrap interval, 5000 draws by default; ECE and AUROC with an item bootstrap over
the pooled items), content variation (P(JSD <= 0.1) per axis), hesitation (P(|dc| <= .02),
mean change), an exact Wilcoxon test of visible against masked confidence over benchmark means
(and between models when the run directory list holds several), and four figures: JSD
histograms, the masking curve, the pre/post hesitation scatter and ECE against TGS. Written to
``<run>/report/``: ``grounding.md``, ``grounding.json`` and PNGs.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from clearsight.grounding.hesitation import stable_share
from clearsight.grounding.protocol import elicitation_frame, failure_reasons, judge_accuracy
from clearsight.grounding.tgs import AXES, MASK_RATIOS, Score, item_differences, scores
from clearsight.grounding.variation import JSD_THRESHOLD, jsd_per_item, share_below
from clearsight.metrics.significance import wilcoxon_exact
from clearsight.report.output import md_table, write_atomic
from clearsight.report.plots import _png, _pyplot
from clearsight.store import RunStore

ROWS: tuple[tuple[str, str], ...] = (
    ("tgs_self", "TGS-self"),
    ("tgs_pair_vision", "TGS-pair vision"),
    ("tgs_pair_reasoning", "TGS-pair reasoning"),
    ("tgs_pair_answer", "TGS-pair answer"),
    ("tgs_pair", "TGS-pair (mean of axes)"),
    ("ECE", "ECE (visible self confidence)"),
    ("AUROC", "AUROC (visible self confidence)"),
)


def _fmt(s: Score | None) -> str:
    if s is None or math.isnan(s.interval.estimate):
        return "n/a"
    i = s.interval
    return f"{i.estimate:+.4f} [{i.low:+.4f}, {i.high:+.4f}]"


def analyse(run_dir: Path, n_boot: int = 5000, seed: int = 0) -> dict[str, Any]:
    """Everything the report shows, as JSON-able data."""
    elic, trajs = elicitation_frame(run_dir)
    out: dict[str, Any] = {"n_elicitations": len(elic), "n_trajectories": len(trajs)}
    if elic.empty:
        out["failures"] = failure_reasons(run_dir)
        return out
    overall = scores(elic, trajs if len(trajs) else None, n_boot=n_boot, seed=seed)
    out["overall"] = {k: v.to_json() for k, v in overall.items()}
    per: dict[str, dict[str, Any]] = {}
    for bench, sub in elic.groupby("benchmark"):
        t = trajs[trajs["benchmark"] == bench] if len(trajs) else None
        per[str(bench)] = {k: v.to_json() for k, v in scores(sub, t, n_boot, seed).items()}
    out["per_benchmark"] = per
    out["accuracy"] = float(trajs["correct"].mean()) if len(trajs) else None
    # content variation
    out["variation"] = {}
    for axis in AXES:
        j = jsd_per_item(elic, axis)
        out["variation"][axis] = {
            "n": int(j.size),
            "p_jsd_le_0.1": share_below(j, JSD_THRESHOLD),
            "jsd": j.tolist(),
        }
    # hesitation
    pre = elic[elic["variant"] == "hesitation/pre"].set_index("problem")["expected"]
    post = elic[elic["variant"] == "hesitation/post"].set_index("problem")["expected"]
    both = pre.index.intersection(post.index)
    out["hesitation"] = {
        "n_events": len(both),
        "p_abs_change_le_0.02": stable_share(pre[both], post[both]),
        "mean_change": float((post[both] - pre[both]).mean()) if len(both) else float("nan"),
        "pre": pre[both].tolist(),
        "post": post[both].tolist(),
    }
    # visible vs masked over benchmark means (exact Wilcoxon)
    d = item_differences(elic)
    means = d.groupby("benchmark")[["E_r0.00", "E_r1.00"]].mean().dropna()
    if len(means) >= 1:
        stat, p = wilcoxon_exact(means["E_r0.00"], means["E_r1.00"])
        out["wilcoxon_visible_vs_masked"] = {"T": stat, "p": p, "n_benchmarks": len(means)}
    out["curve"] = {
        f"{r:.2f}": overall[f"E_r{r:.2f}"].to_json()
        for r in MASK_RATIOS
        if f"E_r{r:.2f}" in overall
    }
    out["judge"] = judge_accuracy(run_dir)
    out["failures"] = failure_reasons(run_dir)
    return out


def tables(analysis: dict[str, Any]) -> pd.DataFrame:
    """Rows: the scores; columns: overall and each benchmark ("estimate [low, high]")."""

    def fmt(d: dict[str, Any] | None) -> str:
        if not d or d["estimate"] is None or math.isnan(d["estimate"]):
            return "n/a"
        return f"{d['estimate']:+.4f} [{d['low']:+.4f}, {d['high']:+.4f}] (n={d['n_items']})"

    rows = []
    for key, label in ROWS:
        row = {"score": label, "overall": fmt(analysis.get("overall", {}).get(key))}
        for bench, sc in analysis.get("per_benchmark", {}).items():
            row[bench] = fmt(sc.get(key))
        rows.append(row)
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------------- figures


def jsd_figure(analysis: dict[str, Any]) -> bytes | None:
    """Histograms of JSD per axis (content variation), threshold 0.1 marked."""
    var = analysis.get("variation", {})
    if not any(v["n"] for v in var.values()):
        return None
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(AXES), figsize=(9, 2.6), sharey=True)
    for ax, axis in zip(axes, AXES, strict=True):
        j = var.get(axis, {}).get("jsd", [])
        ax.hist(j, bins=np.linspace(0, 1, 21), color="#0072B2")
        ax.axvline(JSD_THRESHOLD, color="k", linestyle="--", linewidth=0.8)
        ax.set_title(f"{axis}: P(JSD<=0.1)={share_below(j):.2f}", fontsize=9)
        ax.set_xlabel("JSD (bits)")
    axes[0].set_ylabel("items")
    return _png(fig)


def masking_figure(analysis: dict[str, Any]) -> bytes | None:
    """Mean expected confidence against the masked share r, with intervals."""
    curve = analysis.get("curve", {})
    if not curve:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(4, 3))
    r = [float(k) for k in curve]
    est = [curve[k]["estimate"] for k in curve]
    lo = [curve[k]["low"] for k in curve]
    hi = [curve[k]["high"] for k in curve]
    ax.fill_between(r, lo, hi, alpha=0.25, color="#0072B2")
    ax.plot(r, est, marker="o", color="#0072B2")
    ax.set_xlabel("share of rationale tokens masked (r)")
    ax.set_ylabel("expected confidence E")
    return _png(fig)


def hesitation_figure(analysis: dict[str, Any]) -> bytes | None:
    """Pre- against post-hesitation confidence per event, diagonal marked."""
    h = analysis.get("hesitation", {})
    if not h.get("n_events"):
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(3.4, 3.4))
    ax.scatter(h["pre"], h["post"], s=12, color="#D55E00")
    ax.plot([0, 1], [0, 1], color="k", linewidth=0.8)
    ax.set_xlabel("c_pre")
    ax.set_ylabel("c_post")
    ax.set_title(f"P(|dc|<=.02)={h['p_abs_change_le_0.02']:.2f}, n={h['n_events']}", fontsize=9)
    return _png(fig)


def ece_tgs_figure(analyses: Sequence[tuple[str, dict[str, Any]]]) -> bytes | None:
    """ECE against TGS-self and TGS-pair, one point per run (model or method)."""
    pts = [
        (
            name,
            a["overall"]["ECE"]["estimate"],
            a["overall"]["tgs_self"]["estimate"],
            a["overall"]["tgs_pair"]["estimate"],
        )
        for name, a in analyses
        if "overall" in a and "ECE" in a["overall"]
    ]
    if not pts:
        return None
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(7, 3))
    for ax, idx, label in ((axes[0], 2, "TGS-self"), (axes[1], 3, "TGS-pair")):
        for p in pts:
            ax.scatter(p[1], p[idx])
            ax.annotate(p[0], (p[1], p[idx]), fontsize=7)
        ax.set_xlabel("ECE")
        ax.set_ylabel(label)
        ax.axhline(0, color="k", linewidth=0.5)
    return _png(fig)


def build_grounding_report(
    run_dir: Path | str, n_boot: int = 5000, seed: int = 0, others: Sequence[Path] = ()
) -> tuple[Path, dict[str, Any]]:
    """Write ``<run>/report/grounding.{md,json}`` and figures; returns (directory, analysis).

    ``others``: further grounding runs (other models or methods) compared by exact Wilcoxon
    over benchmark means of TGS-self and TGS-pair, and shown in the ECE-vs-TGS figure.
    """
    run = Path(run_dir)
    with RunStore.open(run, read_only=True) as store:
        store.expect_protocol("grounding")
    out = run / "report"
    out.mkdir(parents=True, exist_ok=True)
    analysis = analyse(run, n_boot, seed)
    runs = [(run.name, analysis)] + [(Path(o).name, analyse(Path(o), n_boot, seed)) for o in others]
    comparisons = []
    for name, other in runs[1:]:
        for key in ("tgs_self", "tgs_pair"):
            a = {b: s[key]["estimate"] for b, s in analysis.get("per_benchmark", {}).items()}
            b_ = {b: s[key]["estimate"] for b, s in other.get("per_benchmark", {}).items()}
            common = sorted(k for k in set(a) & set(b_) if np.isfinite(a[k]) and np.isfinite(b_[k]))
            if common:
                t, p = wilcoxon_exact([a[k] for k in common], [b_[k] for k in common])
                comparisons.append({"other": name, "score": key, "T": t, "p": p, "n": len(common)})
    analysis["comparisons"] = comparisons
    figures = {
        "jsd.png": jsd_figure(analysis),
        "masking.png": masking_figure(analysis),
        "hesitation.png": hesitation_figure(analysis),
        "ece_vs_tgs.png": ece_tgs_figure(runs),
    }
    for name, png in figures.items():
        if png is not None:
            (out / name).write_bytes(png)
    write_atomic(out / "grounding.json", json.dumps(analysis, indent=1, default=str))
    write_atomic(
        out / "grounding.md", summary_markdown(analysis, [k for k, v in figures.items() if v])
    )
    return out, analysis


def summary_markdown(analysis: dict[str, Any], figures: Sequence[str] = ()) -> str:
    """The Markdown summary: the table, variation, hesitation, tests, failures, figures."""
    lines = [
        "# Trajectory grounding",
        "",
        f"Elicitations: {analysis.get('n_elicitations')}; own trajectories: "
        f"{analysis.get('n_trajectories')}; accuracy of own answers: "
        f"{analysis.get('accuracy')}",
        "",
        "Estimates with 95 % two-stage bootstrap intervals (ECE/AUROC: item bootstrap).",
        "",
        md_table(tables(analysis)),
        "## Content variation",
        "",
    ]
    for axis, v in analysis.get("variation", {}).items():
        lines.append(f"- {axis}: P(JSD <= 0.1) = {v['p_jsd_le_0.1']:.3f} (n = {v['n']})")
    h = analysis.get("hesitation", {})
    lines += [
        "",
        "## Hesitation",
        "",
        f"- events: {h.get('n_events')}; P(|c_pre - c_post| <= 0.02) = "
        f"{h.get('p_abs_change_le_0.02')}; mean change = {h.get('mean_change')}",
        "",
        "## Tests",
        "",
        f"- visible vs masked (exact Wilcoxon over benchmark means): "
        f"{analysis.get('wilcoxon_visible_vs_masked')}",
    ]
    lines += [f"- {c}" for c in analysis.get("comparisons", [])]
    judge = analysis.get("judge") or {}
    if judge:
        lines += ["", "## Judge validation", ""]
        lines += [
            f"- {axis}: judge picked the bad side in {v['picked_bad']:.3f} of {v['n']} pairs"
            for axis, v in judge.items()
        ]
    lines += ["", "## Failed or skipped items", ""]
    lines += [f"- {n} x {k}" for k, n in sorted(analysis.get("failures", {}).items())] or ["- none"]
    lines += ["", *(f"![{f}]({f})" for f in figures)]
    return "\n".join(lines) + "\n"


__all__ = ["analyse", "build_grounding_report", "summary_markdown", "tables"]
