"""Evaluate the perceiver on the visibility sweep: does the detector evidence make SmolLM2 see?

Runs (or resumes) the sweep

    SweepConfig(models=("perceiver:llm", "perceiver:detector", "hf:smollm2-135m"),
                tasks=("identify",), wordings=("mcq.reason",), arms=("fog",),
                controls=("clean", "blank"))

over all bundled scenes (22 scenes, 43 targets, 10 conditions each: clean, fog at 250 m .. 1.95
m, blank) with a process pool, then prints, per model:

* accuracy on the clean identification questions, at 1.953125 m fog and on the blank control,
  each with a 95 % bootstrap interval resampling scenes (``cluster_bootstrap_mean``, 2000
  replicates, seed 0), plus the abstention rate;
* how its answers spread over the letters (SmolLM2 alone favours "A") and, for the LLM mode,
  on how many items its answer differs from the blind control's — the direct test of whether
  the LLM uses the evidence at all;
* the blind-spot width W with its bound and interval, from ``clearsight.sweep.summary_table``
  (the report is written to the run directory as well).

The models are named explicitly (``perceiver:llm``, ``perceiver:detector``) so the numbers do
not depend on which mode bare ``perceiver`` means. Usage::

    .venv/bin/python scripts/perceiver_eval.py --run-dir runs/perceiver-eval [--analyse-only]

Results on the bundled scenes (CenterNet, threshold 0.3, 2 workers): see the report of the
issue that added the perceiver; the script prints them and writes ``perceiver_eval.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

MODELS = ("perceiver:llm", "perceiver:detector", "hf:smollm2-135m")
#: The lowest fog level of the sweep (250 m / 2^7).
FOG_LOW_M = 1.953125


def run(run_dir: Path, models: tuple[str, ...], workers: int, executor: str) -> None:
    """Run (or resume) the evaluation sweep into ``run_dir``."""
    from clearsight.sweep.config import SweepConfig
    from clearsight.sweep.protocol import run_sweep

    config = SweepConfig(
        models=models,
        tasks=("identify",),
        wordings=("mcq.reason",),
        arms=("fog",),
        controls=("clean", "blank"),
    )
    start = time.perf_counter()
    summary = run_sweep(config, run_dir, executor=executor, workers=workers)  # type: ignore[arg-type]
    print(f"# sweep: {summary} in {time.perf_counter() - start:.0f} s", flush=True)


def accuracy_rows(frame: pd.DataFrame, n_boot: int) -> list[dict[str, Any]]:
    """Accuracy with scene-bootstrap intervals per model and condition."""
    from clearsight.metrics import cluster_bootstrap_mean

    rows = []
    for model, by_model in frame.groupby("model", sort=False):
        for label, mask in (
            ("clean", by_model["condition"] == "clean"),
            (
                f"fog {FOG_LOW_M:g} m",
                (by_model["condition"] == "fog")
                & np.isclose(by_model["level_m"].astype(float), FOG_LOW_M),
            ),
            (
                "fog 15.625 m",
                (by_model["condition"] == "fog")
                & np.isclose(by_model["level_m"].astype(float), 15.625),
            ),
            ("blank", by_model["condition"] == "blank"),
        ):
            part = by_model[mask]
            if part.empty:
                continue
            correct = part["correct"].astype(float).to_numpy()
            ci = cluster_bootstrap_mean(correct, part["scene.id"].to_numpy(), n_boot=n_boot, seed=0)
            answers = part["answer"].fillna("-").value_counts(normalize=True)
            rows.append(
                {
                    "model": model,
                    "condition": label,
                    "n": len(part),
                    "accuracy": ci.estimate,
                    "low": ci.low,
                    "high": ci.high,
                    "abstained": float(part["abstained"].astype(float).mean()),
                    "mean_internal_conf": float(part["internal_conf"].astype(float).mean()),
                    "answer_shares": {k: round(float(v), 3) for k, v in answers.items()},
                }
            )
    return rows


def agreement(frame: pd.DataFrame, model: str, other: str) -> float | None:
    """Share of items on which ``model`` and ``other`` give the same answer (same spec but the
    model: joined on scene, target, condition and level)."""
    keys = ["scene.id", "target", "condition", "level_m"]
    a = frame[frame["model"] == model][[*keys, "answer"]]
    b = frame[frame["model"] == other][[*keys, "answer"]]
    if a.empty or b.empty:
        return None
    joined = a.merge(b, on=keys, suffixes=("", "_other"))
    return float((joined["answer"].fillna("-") == joined["answer_other"].fillna("-")).mean())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run-dir", type=Path, default=Path("runs/perceiver-eval"))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--executor", default="process", choices=("serial", "process"))
    parser.add_argument("--models", nargs="+", default=list(MODELS))
    parser.add_argument("--n-boot", type=int, default=2000)
    parser.add_argument("--analyse-only", action="store_true", help="Do not run the sweep.")
    args = parser.parse_args(argv)

    from clearsight.report import build_report
    from clearsight.store import load_run
    from clearsight.sweep import summary_table

    if not args.analyse_only:
        run(args.run_dir, tuple(args.models), args.workers, args.executor)
    frame = load_run(args.run_dir)
    frame = frame[(frame["status"] == "ok") & (frame["task"] == "identify")]
    rows = accuracy_rows(frame, args.n_boot)
    print("\n## accuracy (95 % CI over scenes)")
    for r in rows:
        print(
            f"{r['model']:<20} {r['condition']:<14} n={r['n']:<3} "
            f"acc {r['accuracy']:.3f} [{r['low']:.3f}, {r['high']:.3f}]  "
            f"abstain {r['abstained']:.2f}  conf {r['mean_internal_conf']:.2f}  "
            f"answers {r['answer_shares']}"
        )
    same = {
        m: agreement(frame, m, "hf:smollm2-135m")
        for m in frame["model"].unique()
        if m != "hf:smollm2-135m"
    }
    print("\n## share of items answered as the blind control answers them")
    for m, v in same.items():
        print(f"{m:<20} {'n/a' if v is None else f'{v:.3f}'}")

    build_report(args.run_dir, n_boot=args.n_boot, seed=0, thumbnails=False)
    table = summary_table(args.run_dir, n_boot=args.n_boot, seed=0)
    print("\n## crossings and W (summary_table)")
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(table.to_string(index=False))
    out = {
        "accuracy": rows,
        "agreement_with_blind": same,
        "crossings": table.astype(str).to_dict(orient="records"),
    }
    (args.run_dir / "perceiver_eval.json").write_text(json.dumps(out, indent=2), "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
