"""``clearsight board --records DIR``: exported Every Eval Ever records of several models ranked
per evaluation by its direction, with intervals and the models each is not separable from
(intervals that overlap), as CSV and HTML; a folder without records is one error line."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from clearsight.cli import app
from clearsight.faces import register
from clearsight.faces.card import CardSection, Number
from clearsight.faces.face import ProtocolFace
from clearsight.store import Record, RunStore

runner = CliRunner()

#: Three models' numbers: (ECE, its interval), (W, its interval), (accuracy, its interval).
NUMBERS = {
    "model-a": ((0.10, 0.05, 0.15), (-0.4, -0.6, -0.2), (0.9, 0.85, 0.95)),
    "model-b": ((0.30, 0.25, 0.35), (0.1, -0.05, 0.3), (0.6, 0.5, 0.64)),
    "model-c": ((0.12, 0.08, 0.20), (0.5, 0.45, 0.55), (0.7, 0.65, 0.75)),
}


def _section(run: Path, n_boot: int, seed: int) -> CardSection:
    by_model = {}
    for model, (ece, w, acc) in NUMBERS.items():
        by_model[model] = (
            Number("fog ECE internal", *ece, "", n=40),
            Number("fog W internal", *w, "", "exact", 40),
            Number("clean accuracy", *acc, "", n=40),
        )
    return CardSection("board", by_model=by_model)


@pytest.fixture
def records(tmp_path: Path) -> Path:
    """Each model's EEE record, exported from a run of a face whose card gives NUMBERS."""
    register("board-test", ProtocolFace("board-test", card=_section))
    run = tmp_path / "run"
    with RunStore.open(run) as store:
        store.begin_run({"protocol": "board-test", "config": {}})
        store.add_items([("a", "board-test", {"n": 1})])
        store.write_records([Record("a", "ok", None, {}, {}, 0.0)])
    for model in NUMBERS:
        args = ["export", str(run), "--format", "eee", "--model", model]
        result = runner.invoke(app, [*args, "--out", str(tmp_path / "records")])
        assert result.exit_code == 0, result.output
    return tmp_path / "records"


def test_the_models_are_ranked_with_what_they_are_not_separable_from(
    records: Path, tmp_path: Path
) -> None:
    out = tmp_path / "board"
    result = runner.invoke(app, ["board", "--records", str(records), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert f"leaderboard: {out / 'leaderboard.html'}" in result.output
    table = pd.read_csv(out / "leaderboard.csv", keep_default_na=False)

    def ranked(evaluation: str) -> list[tuple[str, int, str]]:
        rows = table[table["evaluation"] == evaluation]
        return list(zip(rows["model"], rows["rank"], rows["not_separable_from"], strict=True))

    # ECE, lower is better: a 0.10 [0.05, 0.15] overlaps c 0.12 [0.08, 0.20]; b apart
    assert ranked("fog ECE internal") == [
        ("model-a", 1, "model-c"),
        ("model-c", 2, "model-a"),
        ("model-b", 3, ""),
    ]
    # W as |W|: b 0.1 [0, 0.3], a 0.4 [0.2, 0.6], c 0.5 [0.45, 0.55]
    assert ranked("fog W internal") == [
        ("model-b", 1, "model-a"),
        ("model-a", 2, "model-b, model-c"),
        ("model-c", 3, "model-a"),
    ]
    # accuracy, higher is better: all apart
    assert ranked("clean accuracy") == [
        ("model-a", 1, ""),
        ("model-c", 2, ""),
        ("model-b", 3, ""),
    ]
    w = table[(table["evaluation"] == "fog W internal") & (table["model"] == "model-a")]
    assert (w["score"].iloc[0], w["low"].iloc[0], w["high"].iloc[0]) == pytest.approx(
        (0.4, 0.2, 0.6), abs=1e-12
    )
    html = (out / "leaderboard.html").read_text()
    assert "not separable from" in html
    assert "0.400 [0.200, 0.600]" in html


def test_a_folder_without_records_is_one_error_line(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    out = tmp_path / "board"
    result = runner.invoke(app, ["board", "--records", str(empty), "--out", str(out)])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1
    assert lines[0].startswith("error: no Every Eval Ever record under")
    assert not out.exists()
