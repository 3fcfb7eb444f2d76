"""The grounding report: TGS-self, TGS-pair per axis and averaged, ECE, AUROC, AURC and E-AURC
beside them.

The scores are those of the run's main read-out (``verbalize`` when scored); a run that scored
several calibration read-outs (:mod:`clearsight.grounding.readouts`) also gets them side by
side, the paper's Table 2 (ECE, AUROC, TGS-self, TGS-pair, coverage, P(JSD <= 0.1) per axis).
Tables per benchmark and overall (overall = mean over benchmarks of per-benchmark means, with a
two-stage bootstrap interval, 5000 draws by default; ECE, AUROC, AURC and E-AURC of the visible
self confidence for the own answers' correctness with an item bootstrap over the pooled items),
content variation (P(JSD <= 0.1) per axis), hesitation (P(|dc| <= .02), mean change), an exact
Wilcoxon test of visible against masked confidence over benchmark means (and between models when
the run directory list holds several), and five figures: JSD histograms, the masking curve, the
pre/post hesitation scatter, ECE against TGS and the risk-coverage curves of the confidence
gating the answers. The run is read by :mod:`clearsight.grounding.results`; this module scores
and renders it, in the layout every report shares (:mod:`clearsight.report.output`):
``report.html`` with the tables and the figures, ``summary.md`` and ``summary.csv`` with the
scores table.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from clearsight.grounding.bench_file import retention_table
from clearsight.grounding.hesitation import event_pairs, stable_share
from clearsight.grounding.readouts import DEFAULT_READOUT, bundled_readouts
from clearsight.grounding.results import GroundingResults, load_grounding_results
from clearsight.grounding.tgs import AXES, MASK_RATIOS, item_differences, scores
from clearsight.grounding.variation import JSD_THRESHOLD, jsd_per_item, share_below
from clearsight.metrics.significance import wilcoxon_exact
from clearsight.report.headline import (
    GROUNDING_CAPTION,
    grounding_headline,
    headline_html,
    headline_markdown,
)
from clearsight.report.html import esc, frame_table, img, page
from clearsight.report.output import ReportPaths, md_table, md_text, write_report
from clearsight.report.plots import png, pyplot, risk_coverage_figure
from clearsight.store import RunStore

ROWS: tuple[tuple[str, str], ...] = (
    ("tgs_self", "TGS-self"),
    ("tgs_pair_vision", "TGS-pair vision"),
    ("tgs_pair_reasoning", "TGS-pair reasoning"),
    ("tgs_pair_answer", "TGS-pair answer"),
    ("tgs_pair", "TGS-pair (mean of axes)"),
    ("ECE", "ECE (visible self confidence)"),
    ("AUROC", "AUROC (visible self confidence)"),
    ("AURC", "AURC (visible self confidence gating answers)"),
    ("E_AURC", "E-AURC (visible self confidence gating answers)"),
)

#: The scores of the read-out comparison (the paper's Table 2), in its column order.
TABLE2: tuple[str, ...] = ("ECE", "AUROC", "tgs_self", "tgs_pair")


def readout_order(elic: pd.DataFrame) -> list[str]:
    """The read-outs a run scored, ``verbalize`` first, then in the data file's order."""
    present = set(elic["readout"]) if "readout" in elic else {DEFAULT_READOUT}
    known = [DEFAULT_READOUT, *(n for n in bundled_readouts() if n != DEFAULT_READOUT)]
    return [n for n in known if n in present] + sorted(present - set(known))


def _variation(elic: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """Per axis: alternatives with a JSD, P(JSD <= 0.1) and the JSDs (one read-out's rows)."""
    out = {}
    for axis in AXES:
        j = jsd_per_item(elic, axis)
        out[axis] = {"n": int(j.size), "p_jsd_le_0.1": share_below(j, JSD_THRESHOLD)}
        out[axis]["jsd"] = j.tolist()
    return out


def compare_readouts(
    elic: pd.DataFrame, trajs: pd.DataFrame, n_boot: int = 5000, seed: int = 0
) -> dict[str, dict[str, Any]]:
    """The paper's Table 2 over the run's read-outs: per read-out ECE, AUROC, TGS-self and
    TGS-pair (each with its interval, as in the scores table), the mean coverage (mass on the
    read-out's candidates; ConfTuner's coverage) and P(JSD <= 0.1) per axis."""
    out: dict[str, dict[str, Any]] = {}
    for name in readout_order(elic):
        sub = elic[elic["readout"] == name] if "readout" in elic else elic
        sc = scores(sub, trajs if len(trajs) else None, n_boot=n_boot, seed=seed)
        row: dict[str, Any] = {k: sc[k].to_json() for k in TABLE2 if k in sc}
        row["coverage"] = float(sub["coverage"].mean()) if "coverage" in sub else None
        row["variation"] = {a: v["p_jsd_le_0.1"] for a, v in _variation(sub).items()}
        row["variation_n"] = {a: v["n"] for a, v in _variation(sub).items()}
        out[name] = row
    return out


def analyse(results: GroundingResults, n_boot: int = 5000, seed: int = 0) -> dict[str, Any]:
    """Everything the report shows, as JSON-able data: the scores of the main read-out (the
    first of :func:`readout_order`) and the read-outs side by side."""
    elic_all, trajs = results.elicitations, results.trajectories
    out: dict[str, Any] = {"n_elicitations": len(elic_all), "n_trajectories": len(trajs)}
    if elic_all.empty:
        out["failures"] = results.failures
        return out
    names = readout_order(elic_all)
    out["readout"] = names[0]
    elic = elic_all[elic_all["readout"] == names[0]] if "readout" in elic_all else elic_all
    if len(names) > 1:
        out["readouts"] = compare_readouts(elic_all, trajs, n_boot, seed)
    overall = scores(elic, trajs if len(trajs) else None, n_boot=n_boot, seed=seed)
    out["overall"] = {k: v.to_json() for k, v in overall.items()}
    per: dict[str, dict[str, Any]] = {}
    for bench, sub in elic.groupby("benchmark"):
        t = trajs[trajs["benchmark"] == bench] if len(trajs) else None
        per[str(bench)] = {k: v.to_json() for k, v in scores(sub, t, n_boot, seed).items()}
    out["per_benchmark"] = per
    out["accuracy"] = float(trajs["correct"].mean()) if len(trajs) else None
    out["selective"] = _gated_answers(elic, trajs)
    out["variation"] = _variation(elic)
    out["variation_sampling"] = results.variation
    out["hesitation"] = _hesitation(elic)
    # visible vs masked over benchmark means (exact Wilcoxon)
    d = item_differences(elic)
    means = d.groupby("benchmark")[["E_r0.00", "E_r1.00"]].mean().dropna()
    if len(means) >= 1:
        stat, p = wilcoxon_exact(means["E_r0.00"], means["E_r1.00"])
        out["wilcoxon_visible_vs_masked"] = {"T": stat, "p": p, "n_benchmarks": len(means)}
    out["curve"] = {
        f"{r:.2f}": overall[f"E_r{r:.2f}"].to_json()
        for r in MASK_RATIOS
        if overall[f"E_r{r:.2f}"].n_items
    }
    out["curve_change"] = {
        f"{r:.2f}": overall[f"dE_r{r:.2f}"].to_json() for r in MASK_RATIOS if out["curve"]
    }
    out["judge"] = results.judge
    out["failures"] = results.failures
    return out


def _hesitation(elic: pd.DataFrame) -> dict[str, Any]:
    """Every scored hesitation event: counts, P(|c_pre - c_post| <= 0.02), the mean change
    and the per-event confidences (the scatter's points)."""
    events = event_pairs(elic)
    change = events["post"] - events["pre"]
    return {
        "n_events": len(events),
        "n_trajectories": int(events["problem"].nunique()),
        "max_events_per_trajectory": int(events["event"].max() + 1) if len(events) else 0,
        "p_abs_change_le_0.02": stable_share(events["pre"], events["post"]),
        "mean_change": float(change.mean()) if len(events) else float("nan"),
        "pre": events["pre"].tolist(),
        "post": events["post"].tolist(),
    }


def _gated_answers(elic: pd.DataFrame, trajs: pd.DataFrame) -> dict[str, list[Any]]:
    """Each own answer's visible self confidence and correctness, with its benchmark: what a
    risk-coverage curve of the confidence gating the answers needs."""
    if trajs.empty:
        return {"benchmark": [], "confidence": [], "correct": []}
    d = item_differences(elic).merge(trajs[["problem", "correct"]], on="problem")
    d = d[np.isfinite(d["E_r0.00"].to_numpy(float))]
    return {
        "benchmark": d["benchmark"].astype(str).tolist(),
        "confidence": d["E_r0.00"].astype(float).tolist(),
        "correct": d["correct"].astype(float).tolist(),
    }


def tables(analysis: dict[str, Any]) -> pd.DataFrame:
    """Rows: the scores; columns: overall and each benchmark ("estimate [low, high]")."""

    def fmt(d: dict[str, Any] | None) -> str:
        if not d or d["estimate"] is None or math.isnan(d["estimate"]):
            return "n/a"
        sd = d.get("sd_benchmarks")
        spread = "" if sd is None or math.isnan(sd) else f", SD across benchmarks {sd:.4f}"
        return (
            f"{d['estimate']:+.4f} [{d['low']:+.4f}, {d['high']:+.4f}] (n={d['n_items']}{spread})"
        )

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
    plt = pyplot()
    fig, axes = plt.subplots(1, len(AXES), figsize=(9, 2.6), sharey=True)
    for ax, axis in zip(axes, AXES, strict=True):
        j = var.get(axis, {}).get("jsd", [])
        ax.hist(j, bins=np.linspace(0, 1, 21), color="#0072B2")
        ax.axvline(JSD_THRESHOLD, color="k", linestyle="--", linewidth=0.8)
        ax.set_title(f"{axis}: P(JSD<=0.1)={share_below(j):.2f}", fontsize=9)
        ax.set_xlabel("JSD (bits)")
    axes[0].set_ylabel("items")
    return png(fig)


def masking_figure(analysis: dict[str, Any]) -> bytes | None:
    """The masking curve on the common-valid items: mean expected confidence E against the
    masked share r (left) and its change from r = 0 (right), with two-stage intervals."""
    curve = analysis.get("curve", {})
    if not curve:
        return None
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(7.6, 3))
    panels = (
        (axes[0], curve, "expected confidence E"),
        (axes[1], analysis["curve_change"], "ΔE = E(r) - E(0)"),
    )
    for ax, points, label in panels:
        r = [float(k) for k in points]
        ax.fill_between(
            r,
            [p["low"] for p in points.values()],
            [p["high"] for p in points.values()],
            alpha=0.25,
            color="#0072B2",
        )
        ax.plot(r, [p["estimate"] for p in points.values()], marker="o", color="#0072B2")
        ax.set_xlabel("share of rationale tokens masked (r)")
        ax.set_ylabel(label)
    axes[1].axhline(0, color="k", lw=0.5)
    n = next(iter(curve.values()))["n_items"]
    fig.suptitle(f"the same {n} items at every r (valid at all five shares)", fontsize=9)
    fig.tight_layout()
    return png(fig)


def hesitation_figure(analysis: dict[str, Any]) -> bytes | None:
    """Pre- against post-hesitation confidence per event, diagonal marked."""
    h = analysis.get("hesitation", {})
    if not h.get("n_events"):
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(3.4, 3.4))
    ax.scatter(h["pre"], h["post"], s=12, color="#D55E00")
    ax.plot([0, 1], [0, 1], color="k", linewidth=0.8)
    ax.set_xlabel("c_pre")
    ax.set_ylabel("c_post")
    ax.set_title(f"P(|dc|<=.02)={h['p_abs_change_le_0.02']:.2f}, n={h['n_events']}", fontsize=9)
    return png(fig)


def selective_figure(analysis: dict[str, Any]) -> bytes | None:
    """Risk-coverage curves of the visible self confidence gating the model's own answers:
    every answer, and each benchmark's."""
    sel = analysis.get("selective", {})
    conf = np.asarray(sel.get("confidence", []), dtype=float)
    correct = np.asarray(sel.get("correct", []), dtype=float)
    bench = np.asarray(sel.get("benchmark", []), dtype=object)
    cuts = [("all benchmarks", conf, correct)]
    cuts += [(str(b), conf[bench == b], correct[bench == b]) for b in sorted(set(bench.tolist()))]
    return risk_coverage_figure([("visible self confidence gating answers", cuts)])


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
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(7, 3))
    for ax, idx, label in ((axes[0], 2, "TGS-self"), (axes[1], 3, "TGS-pair")):
        for p in pts:
            ax.scatter(p[1], p[idx])
            ax.annotate(p[0], (p[1], p[idx]), fontsize=7)
        ax.set_xlabel("ECE")
        ax.set_ylabel(label)
        ax.axhline(0, color="k", linewidth=0.5)
    return png(fig)


# ------------------------------------------------------------------------------------ page


def _num(value: Any, digits: int = 3) -> str:
    """A number of the analysis with ``digits`` decimals ('n/a' when missing or NaN)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.{digits}f}"


def _variation_frame(analysis: dict[str, Any]) -> pd.DataFrame:
    """Content variation per axis: alternatives scored, the share with JSD <= 0.1, and for
    sampled alternatives how many were sampled and accepted, and the main rejection
    reasons."""
    sampling = analysis.get("variation_sampling") or {}
    rows = []
    for axis, v in analysis.get("variation", {}).items():
        row: dict[str, Any] = {"axis": axis, "alternatives": v["n"]}
        row["P(JSD <= 0.1)"] = _num(v["p_jsd_le_0.1"])
        if axis in sampling:
            s = sampling[axis]
            row["sampled / accepted"] = f"{s['sampled']} / {s['accepted']}"
            top = sorted(s["reasons"].items(), key=lambda kv: -kv[1])[:2]
            row["rejected because"] = "; ".join(f"{n} x {why}" for why, n in top)
        rows.append(row)
    return pd.DataFrame(rows)


def readouts_frame(analysis: dict[str, Any]) -> pd.DataFrame:
    """The read-outs side by side (the paper's Table 2): per read-out ECE, AUROC, TGS-self,
    TGS-pair (estimate [95 % interval]), coverage and P(JSD <= 0.1) per axis."""
    rows = []
    for name, r in (analysis.get("readouts") or {}).items():
        row: dict[str, Any] = {"read-out": name}
        for key in TABLE2:
            d = r.get(key)
            ok = d and d["estimate"] is not None and not math.isnan(d["estimate"])
            row[key] = f"{d['estimate']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}]" if ok else "n/a"
        row["coverage"] = _num(r.get("coverage"))
        for axis in AXES:
            row[f"P(JSD<=0.1) {axis}"] = (
                f"{_num(r['variation'][axis])} (n={r['variation_n'][axis]})"
            )
        rows.append(row)
    return pd.DataFrame(rows)


def _hesitation_frame(analysis: dict[str, Any]) -> pd.DataFrame:
    """Hesitation events, the share whose confidence moved by at most 0.02, the mean change."""
    h = analysis.get("hesitation", {})
    if not h:
        return pd.DataFrame()
    row = {
        "events": h["n_events"],
        "trajectories with an event": h.get("n_trajectories", "n/a"),
        "most events in one trajectory": h.get("max_events_per_trajectory", "n/a"),
        "P(|c_pre - c_post| <= 0.02)": _num(h["p_abs_change_le_0.02"]),
        "mean change": _num(h["mean_change"], 4),
    }
    return pd.DataFrame([row])


def _tests_frame(analysis: dict[str, Any]) -> pd.DataFrame:
    """The exact Wilcoxon tests: visible against masked, then this run against the others."""
    rows = []
    if (w := analysis.get("wilcoxon_visible_vs_masked")) is not None:
        rows.append(
            {
                "test": "visible vs masked confidence, over benchmark means",
                "T": _num(w["T"], 1),
                "p": _num(w["p"], 4),
                "benchmarks": w["n_benchmarks"],
            }
        )
    for c in analysis.get("comparisons", []):
        rows.append(
            {
                "test": f"{c['score']}: this run vs {c['other']}",
                "T": _num(c["T"], 1),
                "p": _num(c["p"], 4),
                "benchmarks": c["n"],
            }
        )
    return pd.DataFrame(rows)


def _judge_frame(analysis: dict[str, Any]) -> pd.DataFrame:
    """Per axis: pairs judged and the share where the judge picked the bad side."""
    rows = [
        {"axis": axis, "pairs": v["n"], "picked the bad side": _num(v["picked_bad"])}
        for axis, v in (analysis.get("judge") or {}).items()
    ]
    return pd.DataFrame(rows)


def _failures_frame(analysis: dict[str, Any]) -> pd.DataFrame:
    """Failed or skipped items by kind and reason."""
    rows = [
        {"kind: reason": k, "items": n} for k, n in sorted(analysis.get("failures", {}).items())
    ]
    return pd.DataFrame(rows)


#: Alt text and caption of each figure of the page, by the name build_grounding_report gives it.
_FIGURES: dict[str, tuple[str, str]] = {
    "masking": (
        "masking curve",
        "Mean expected confidence E (left) and its change from r = 0 (right) against the share "
        "r of rationale tokens masked, on the items valid at every share, with 95 % two-stage "
        "intervals.",
    ),
    "jsd": (
        "JSD histograms",
        "JSD between the confidence distributions of a trajectory and its content variant, per "
        "axis; dashed: the 0.1 threshold.",
    ),
    "hesitation": (
        "hesitation scatter",
        "Confidence before and after every hesitation event (one point each, the answer held "
        "fixed); the diagonal is no change.",
    ),
    "ece_vs_tgs": ("ECE against TGS", "ECE against TGS-self and TGS-pair, one point per run."),
    "selective": (
        "risk-coverage curves",
        "Risk (error share of the accepted answers) against coverage, accepting the own "
        "answers whose visible self confidence is at least a threshold; AURC and E-AURC with "
        "item-bootstrap intervals in the scores table.",
    ),
}


def _figure(figures: dict[str, bytes | None], name: str) -> str:
    """The figure ``name`` inlined with its caption, or a note when the run lacks its data."""
    alt, caption = _FIGURES[name]
    return img(figures[name], alt, caption) or "<p class='note'>(no data in this run)</p>"


def render_html(name: str, analysis: dict[str, Any], figures: dict[str, bytes | None]) -> str:
    """The self-contained page: the scores table, the masking curve, variation, hesitation,
    the tests, ECE against TGS, the judge and the failures, tables with their figures."""
    sections = [
        ("Scores", frame_table(tables(analysis))),
        ("Calibration read-outs (Table 2)", frame_table(readouts_frame(analysis))),
        ("Masking curve", _figure(figures, "masking")),
        ("Content variation", frame_table(_variation_frame(analysis)) + _figure(figures, "jsd")),
        (
            "Hesitation",
            frame_table(_hesitation_frame(analysis)) + _figure(figures, "hesitation"),
        ),
        ("Tests", frame_table(_tests_frame(analysis))),
        ("ECE against TGS", _figure(figures, "ece_vs_tgs")),
        ("Selective prediction", _figure(figures, "selective")),
    ]
    if analysis.get("judge"):
        sections.append(("Judge validation", frame_table(_judge_frame(analysis))))
    if analysis.get("tgs_bench_retention"):
        retention = frame_table(pd.DataFrame(analysis["tgs_bench_retention"]))
        sections.append(("TGS-Bench retention (kept / attempted)", retention))
    sections.append(("Failed or skipped items", frame_table(_failures_frame(analysis))))
    body = [
        f"<h1>Trajectory grounding: {esc(name)}</h1>",
        headline_html(*grounding_headline(analysis), GROUNDING_CAPTION),
        f"<p class='note'>Elicitations: {esc(analysis.get('n_elicitations'))}; own "
        f"trajectories: {esc(analysis.get('n_trajectories'))}; accuracy of own answers: "
        f"{esc(_num(analysis.get('accuracy')))}; scores of the read-out "
        f"{esc(analysis.get('readout', DEFAULT_READOUT))}. Estimates with 95 % two-stage bootstrap "
        "intervals (ECE/AUROC: item bootstrap).</p>",
        *(f"<h2>{esc(title)}</h2>\n{html}" for title, html in sections),
    ]
    return page(f"clearsight grounding: {name}", "\n".join(body))


def _comparisons(
    analysis: dict[str, Any], others: Sequence[tuple[str, dict[str, Any]]]
) -> list[dict[str, Any]]:
    """Exact Wilcoxon tests of TGS-self and TGS-pair of this run against each other run, over
    the benchmarks both have a finite score for."""
    comparisons = []
    for name, other in others:
        for key in ("tgs_self", "tgs_pair"):
            a = {b: s[key]["estimate"] for b, s in analysis.get("per_benchmark", {}).items()}
            b_ = {b: s[key]["estimate"] for b, s in other.get("per_benchmark", {}).items()}
            common = sorted(k for k in set(a) & set(b_) if np.isfinite(a[k]) and np.isfinite(b_[k]))
            if common:
                t, p = wilcoxon_exact([a[k] for k in common], [b_[k] for k in common])
                comparisons.append({"other": name, "score": key, "T": t, "p": p, "n": len(common)})
    return comparisons


def _bench_retention(run: Path) -> list[dict[str, Any]]:
    """The retention table of the TGS-Bench file a run scored (its manifest is kept in the
    run's), as records; none for a run that built its pairs itself."""
    with RunStore.open(run, read_only=True) as store:
        manifest = store.manifest().get("tgs_bench")
    if not manifest:
        return []
    return [
        {str(k): v for k, v in row.items()} for row in retention_table(manifest).to_dict("records")
    ]


def build_grounding_report(
    run_dir: Path | str, n_boot: int = 5000, seed: int = 0, others: Sequence[Path] = ()
) -> tuple[ReportPaths, dict[str, Any]]:
    """Write ``report.html``, ``summary.md`` and ``summary.csv`` into the run directory;
    returns where they are and the analysis.

    ``others``: further grounding runs (other models or methods) compared by exact Wilcoxon
    over benchmark means of TGS-self and TGS-pair, and shown in the ECE-vs-TGS figure.
    """
    run = Path(run_dir)
    results = load_grounding_results(run)
    analysis = analyse(results, n_boot, seed)
    runs = [(results.name, analysis)]
    for other in others:
        other_results = load_grounding_results(other)
        runs.append((other_results.name, analyse(other_results, n_boot, seed)))
    analysis["comparisons"] = _comparisons(analysis, runs[1:])
    analysis["tgs_bench_retention"] = _bench_retention(run)
    figures = {
        "jsd": jsd_figure(analysis),
        "masking": masking_figure(analysis),
        "hesitation": hesitation_figure(analysis),
        "ece_vs_tgs": ece_tgs_figure(runs),
        "selective": selective_figure(analysis),
    }
    return write_report(
        run,
        html=render_html(results.name, analysis, figures),
        summary_md=summary_markdown(analysis),
        summary_csv=tables(analysis),
    ), analysis


def summary_markdown(analysis: dict[str, Any]) -> str:
    """The Markdown summary: the table, variation, hesitation, tests, judge, failures."""
    lines = [
        "# Trajectory grounding",
        "",
        *headline_markdown(*grounding_headline(analysis), GROUNDING_CAPTION),
        f"Elicitations: {analysis.get('n_elicitations')}; own trajectories: "
        f"{analysis.get('n_trajectories')}; accuracy of own answers: "
        f"{analysis.get('accuracy')}",
        "",
        "Estimates with 95 % two-stage bootstrap intervals (ECE/AUROC: item bootstrap).",
        "",
        f"Main read-out: {md_text(analysis.get('readout', DEFAULT_READOUT))}",
        "",
        md_table(tables(analysis)),
    ]
    if analysis.get("readouts"):
        lines += ["## Calibration read-outs (Table 2)", "", md_table(readouts_frame(analysis))]
    lines += [
        "## Content variation",
        "",
    ]
    for axis, v in analysis.get("variation", {}).items():
        lines.append(f"- {md_text(axis)}: P(JSD <= 0.1) = {v['p_jsd_le_0.1']:.3f} (n = {v['n']})")
    for axis, s in (analysis.get("variation_sampling") or {}).items():
        lines.append(
            f"- {md_text(axis)}: {s['sampled']} sampled, {s['accepted']} accepted; "
            f"rejected: {md_text(s['reasons'])}"
        )
    h = analysis.get("hesitation", {})
    lines += [
        "",
        "## Hesitation",
        "",
        f"- events: {h.get('n_events')} in {h.get('n_trajectories')} trajectories (at most "
        f"{h.get('max_events_per_trajectory')} in one); P(|c_pre - c_post| <= 0.02) = "
        f"{h.get('p_abs_change_le_0.02')}; mean change = {h.get('mean_change')}",
        "",
        "## Tests",
        "",
        f"- visible vs masked (exact Wilcoxon over benchmark means): "
        f"{analysis.get('wilcoxon_visible_vs_masked')}",
    ]
    lines += [f"- {md_text(c)}" for c in analysis.get("comparisons", [])]
    judge = analysis.get("judge") or {}
    if judge:
        lines += ["", "## Judge validation", ""]
        lines += [
            f"- {md_text(axis)}: judge picked the bad side in {v['picked_bad']:.3f} of "
            f"{v['n']} pairs"
            for axis, v in judge.items()
        ]
    if analysis.get("tgs_bench_retention"):
        retention = pd.DataFrame(analysis["tgs_bench_retention"])
        lines += ["", "## TGS-Bench retention (kept / attempted)", "", md_table(retention)]
    lines += ["", "## Failed or skipped items", ""]
    failures = sorted(analysis.get("failures", {}).items())
    lines += [f"- {n} x {md_text(k)}" for k, n in failures] or ["- none"]
    return "\n".join(lines) + "\n"


__all__ = [
    "analyse",
    "build_grounding_report",
    "compare_readouts",
    "readout_order",
    "readouts_frame",
    "render_html",
    "summary_markdown",
    "tables",
]
