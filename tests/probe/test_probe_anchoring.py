"""The early-anchoring share, the speed ratio and Fig. 7 (issue 46 item 12, the probe's parts):
pure functions of stored records, checked on hand-built rows against numbers computed by hand,
and rendered in the report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from clearsight.probe.numbers.convergence import anchoring_table
from clearsight.probe.numbers.sensors import majority, most_distinct_sensors, sensor_ece_table


def _row(reasoner: str, dataset: str, steps: int | None) -> dict[str, Any]:
    return {
        "reasoner": reasoner,
        "sensor": "s",
        "signal": "true",
        "dataset": dataset,
        "steps_to_threshold": steps,
    }


def test_the_anchoring_share_and_the_speed_ratio_by_hand() -> None:
    rows = pd.DataFrame(
        [_row("big", "seedbench", v) for v in (3, 3, None, 1)]
        + [_row("small", "seedbench", v) for v in (1, 2)]
        + [_row("small", "cvqa", v) for v in (2, 2)]
    )
    table = anchoring_table(rows).set_index(["reasoner", "dataset"])
    # big: 1 of 4 anchored at the first reply; steps (3 + 3 + 1) / 3 over the 3 that reach 0.7
    assert table.loc[("big", "seedbench"), "anchored"] == pytest.approx(25.0)
    assert table.loc[("big", "seedbench"), "steps"] == pytest.approx(7 / 3)
    assert table.loc[("big", "seedbench"), "speed"] == pytest.approx(1.0)  # the slowest
    assert table.loc[("small", "seedbench"), "anchored"] == pytest.approx(50.0)
    assert table.loc[("small", "seedbench"), "speed"] == pytest.approx((7 / 3) / 1.5, rel=1e-12)
    assert table.loc[("small", "cvqa"), "speed"] == pytest.approx(1.0)  # alone in its dataset
    assert table.loc[("small", "cvqa"), "anchored"] == pytest.approx(0.0)
    assert anchoring_table(pd.DataFrame()).empty


def test_the_majority_answer_and_fig_7s_ece_by_hand() -> None:
    assert majority(["A", "A", "B", None]) == ("A", 0.5)
    assert majority(["B", "A", "A", "B"]) == ("B", 0.5)  # a tie: the first named
    assert majority([None, None]) == (None, 0.0)
    build = pd.DataFrame(
        [
            # sensor a: right at 0.5, wrong at 1.0 -> ECE (|1 - 0.5| + |0 - 1|) / 2 = 0.75
            {"sensor": "a", "dataset": "d", "gold": "A", "letters": ["A", "A", "B", None]},
            {"sensor": "a", "dataset": "d", "gold": "A", "letters": ["B", "B", "B", "B"]},
            # sensor b: right at 1.0, right at 0.5 -> ECE (0 + 0.5) / 2 = 0.25
            {"sensor": "b", "dataset": "d", "gold": "A", "letters": ["A", "A", "A", "A"]},
            {"sensor": "b", "dataset": "d", "gold": "A", "letters": ["A", "B", "A", "B"]},
            {"sensor": "c", "dataset": "d", "gold": "A", "letters": ["A", "A", "B", "B"]},
            {"sensor": "c", "dataset": "d", "gold": "A", "letters": ["B", "A", "B", "A"]},
        ]
    )
    table = sensor_ece_table(build).set_index("sensor")
    assert table.loc["a", "ece"] == pytest.approx(0.75)
    assert table.loc["b", "ece"] == pytest.approx(0.25)
    assert table.loc["a", "accuracy"] == pytest.approx(50.0)
    # c: right at 0.5, wrong at 0.5 -> ECE |1 - 1.0| / 2 = 0
    assert table.loc["c", "ece"] == pytest.approx(0.0)
    assert most_distinct_sensors(sensor_ece_table(build)) == ("a", "c", pytest.approx(0.75))
    assert sensor_ece_table(build.drop(columns="letters")).empty


def test_the_report_renders_anchoring_and_fig_7(tmp_path: Path) -> None:
    from clearsight.driver import Execution
    from clearsight.probe.bench.protocol import BuildConfig, build_stage1
    from clearsight.probe.instances import Instance
    from clearsight.probe.page.report import ANCHORING, build_probe_report
    from clearsight.probe.posthoc.protocol import AnalysisConfig, run_probe_analysis
    from clearsight.probe.protocol import run_probe
    from fixtures.probe_runs import IDS, analysis_judge, probe_config

    run = tmp_path / "run"
    run_probe(probe_config(tmp_path), run, progress=False)
    run_probe_analysis(
        run, AnalysisConfig(judge_model=analysis_judge(tmp_path)), Execution(progress=False)
    )
    a = Instance(IDS[0], "bundled:skimage-coffee", "Q1?", ("x", "y"), "A", "bundled", "c")
    instances = tmp_path / "instances.jsonl"
    instances.write_text(json.dumps(a.to_json()) + "\n")
    sensor = tmp_path / "build-sensor.jsonl"
    sensor.write_text(json.dumps({"match": "Q1?", "texts": ["A"] * 3 + ["B"] * 8}) + "\n")
    fields = {"instances": str(instances), "dataset": "jsonl", "sensor": f"scripted:{sensor}"}
    build_stage1(BuildConfig(**fields), run, Execution(progress=False))
    build_probe_report(run)
    summary = (run / "summary.md").read_text()
    assert ANCHORING.split(":")[0] in summary
    # the scripted judge states B=0.8 after the first reply: every conversation anchors there
    # 4 conversations, all anchored, 1 step each, the only population: speed 1
    assert "| true | bundled | 4 | 100.00 | 1.00 | 1.00 |" in summary
    # one sensor sampled 11 times, B named 8 times: confidence 8/11, wrong -> ECE 0.727
    assert "Fig. 7: each sensor's ECE by dataset" in summary
    assert "build-sensor.jsonl | 1 | 0.00 | 0.73 |" in summary
    html = (run / "report.html").read_text()
    assert html.count("src='data:image/png;base64,") >= 2  # Fig. 4 and Fig. 7 among them
    assert "Fig. 7: each sensor" in html
