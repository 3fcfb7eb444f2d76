"""Issue 30, finding 7: every text output escapes what came from a model, an instance file or a
user for its format. ``summary.md`` carries no live HTML and no link from a model's name or a
run's name (``report.html`` escapes the same text), and a CSV cell a spreadsheet would run as a
formula opens as text."""

from __future__ import annotations

import json
import re
from io import StringIO
from pathlib import Path

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from clearsight.report import build_report
from clearsight.sweep.config import SweepConfig
from clearsight.sweep.protocol import run_sweep

HOSTILE = "<img src=x onerror=alert(1)>[click](javascript:alert(2))"


def test_summary_md_escapes_a_models_and_a_runs_name(tmp_path: Path) -> None:
    script = tmp_path / f"m{HOSTILE}.jsonl"
    answer = {"texts": ["A"], "candidate_probs": {"A": 0.7, "B": 0.1, "C": 0.1, "D": 0.1}}
    script.write_text("\n".join([json.dumps(answer)] * 9) + "\n")
    run = tmp_path / "run<script>alert(3)<"
    config = SweepConfig(
        models=(f"scripted:{script}",),
        scene_ids=("skimage-chelsea",),
        arms=("fog",),
        tasks=("identify",),
        wordings=("mcq.reason",),
        controls=("clean",),
    )
    run_sweep(config, run, progress=False)
    paths = build_report(run, n_boot=20, thumbnails=False)
    md = paths.summary_md.read_text(encoding="utf-8")
    assert "&lt;img src=x onerror=alert(1)&gt;" in md  # the model's name, as text
    assert "&lt;script&gt;alert(3)&lt;" in md  # the run's name in the title
    for live in ("<img", "<script", "](javascript:"):
        assert live not in md
    html = paths.html.read_text(encoding="utf-8")
    for live in ("<img src=x", "<script>alert"):
        assert live not in html


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_md_text_is_inert_on_one_line(text: str) -> None:
    from clearsight.pages.output import md_text

    out = md_text(text)
    assert "<" not in out
    assert ">" not in out
    assert "](" not in out
    assert "\n" not in out
    assert "\r" not in out
    assert re.search(r"(?<!\\)(?:\\\\)*\|", out) is None  # every | escaped
    # what it escaped reads back: entities and backslashes undone give the text, one-lined
    back = out.replace("]\\(", "](").replace("\\|", "|")
    back = back.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    assert back.replace("\\\\", "\\") == " ".join(text.split())


def test_csv_cells_a_spreadsheet_would_run_open_as_text() -> None:
    from clearsight.pages.output import csv_text

    frame = pd.DataFrame(
        {
            "model": [
                '=HYPERLINK("http://x","y")',
                "-2+3+cmd|' /C calc'!A0",
                "-cmd",
                "@SUM(A1)",
                "\tx",
                "+SUM(1)",
                "ok",
            ],
            "text_number": ["-0.5", "+3", "+1+1", "-1e3", "+0.15 [+0.10, +0.20] (n=6)", "=", "x"],
            "value": [-0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
        }
    )
    back = pd.read_csv(StringIO(csv_text(frame)), keep_default_na=False)
    assert back["model"].tolist() == [
        '\'=HYPERLINK("http://x","y")',
        "'-2+3+cmd|' /C calc'!A0",
        "'-cmd",
        "'@SUM(A1)",
        "'\tx",
        "'+SUM(1)",
        "ok",
    ]
    # a signed number, as the reports write one, calls nothing: it stays as it is
    assert back["text_number"].tolist()[:5] == frame["text_number"].tolist()[:5]
    assert back["text_number"].tolist()[5:] == ["'=", "x"]
    assert back["value"].tolist() == frame["value"].tolist()  # numbers untouched
