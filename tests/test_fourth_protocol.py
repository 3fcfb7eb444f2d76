"""A fourth protocol, written here and nowhere in the package, gets every post-run feature by
registering its face (issue 42): ``clearsight report``, ``clearsight verify --readouts``, a card
section and its rows, a part of a card run and a board's paired rows, with no edit to
``report/``, ``verify/``, ``card/`` or the store.

The toy protocol asks whether each number of its configuration is even. Its "model" is a pure
function: right on every number but 5 (it says "even"), stating 0.9 on even numbers and 0.6 on
odd ones. Over 1..6 that is 5 of 6 right (accuracy 5/6) with a mean stated confidence of
(3 x 0.9 + 3 x 0.6) / 6 = 0.75. A second model, the doubter, says "odd 0.5" to everything:
right on 1, 3 and 5 (accuracy 1/2), so the guesser minus the doubter is, per number,
0, 1, 0, 1, -1, 1: a paired accuracy difference of 2/6 = 1/3.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, TypedDict

import pandas as pd
import pytest
from typer.testing import CliRunner

from clearsight import driver, faces
from clearsight.card import CardConfig
from clearsight.card.board import write_board
from clearsight.card.run import card_section, load_card, write_card
from clearsight.cli import app
from clearsight.execute.unit import KeyedItems
from clearsight.faces import card_runs, face_of, register
from clearsight.faces.card import CardSection, ci_number, number_bars
from clearsight.faces.card_run import CardRun, Part
from clearsight.faces.face import ProtocolFace, ReportRequest, Row, frame_rows
from clearsight.metrics.bootstrap import cluster_bootstrap_mean
from clearsight.pages.html import esc, page
from clearsight.pages.output import ReportPaths, write_report
from clearsight.provenance import run_manifest
from clearsight.specs import Spec
from clearsight.store import Record, RunStore

#: The protocol's name, and the kind of its one item (another test's spec is kind ``toy``).
KIND = "toy"
ITEM_KIND = "toy.parity"
GUESSER, DOUBTER = "toy-guesser", "toy-doubter"
runner = CliRunner()


class ToyReadouts(TypedDict):
    """What a toy record holds: the word said, the confidence stated, whether it was right."""

    answer: str
    confidence: float
    correct: bool


@dataclass(frozen=True)
class ToySpec(Spec):
    """Is ``n`` even? Asked of ``model``."""

    kind: ClassVar[str] = ITEM_KIND
    readout_type: ClassVar[type[ToyReadouts]] = ToyReadouts

    n: int
    model: str = GUESSER


@dataclass(frozen=True)
class ToyConfig:
    """The numbers asked about, and the model asked."""

    numbers: tuple[int, ...] = (1, 2, 3, 4, 5, 6)
    model: str = GUESSER


@dataclass(frozen=True)
class ToyUnit(KeyedItems):
    """All the toy's items in one unit."""

    items: tuple[ToySpec, ...]
    model: str = ""


def _reply(n: int, model: str) -> str:
    """The toy models: the guesser, right but on 5 and surer of even numbers; the doubter,
    "odd" to everything."""
    if model == DOUBTER:
        return "odd 0.5"
    said = "even" if n % 2 == 0 or n == 5 else "odd"
    return f"{said} {0.9 if n % 2 == 0 else 0.6}"


def _readouts(n: int, text: str) -> ToyReadouts:
    said, stated = text.split()
    return {
        "answer": said,
        "confidence": float(stated),
        "correct": (said == "even") == (n % 2 == 0),
    }


def run_toy_unit(unit: ToyUnit) -> list[Record]:
    """One record per item, its read-outs parsed from the reply it stores."""
    replies = [(item, _reply(item.n, item.model)) for item in unit.items]
    return [
        Record(item.key, "ok", None, {"text": text}, _readouts(item.n, text), 0.0)
        for item, text in replies
    ]


def _stages(config: ToyConfig, plan: list[ToySpec], store: RunStore) -> Iterator[driver.Stage[Any]]:
    yield driver.Stage(ITEM_KIND, plan, lambda pending: [ToyUnit(tuple(pending))], run_toy_unit)


TOY: driver.Protocol[ToyConfig, list[ToySpec]] = driver.Protocol(
    KIND,
    lambda config: [],
    lambda config: [ToySpec(n, config.model) for n in config.numbers],
    lambda config, plan: run_manifest(
        {"numbers": list(config.numbers), "model": config.model}, KIND
    ),
    _stages,
)


# ------------------------------------------------------------------- the toy's post-run face


def _frame(run_dir: Path) -> pd.DataFrame:
    """The toy run's records, read typed."""
    with RunStore.open(run_dir, read_only=True) as store:
        rows = [
            {"n": rec.spec["n"], **rec.readouts}
            for rec in store.iter_records("ok", kind=ITEM_KIND, readouts=ToyReadouts)
        ]
    return pd.DataFrame(rows, columns=["n", "answer", "confidence", "correct"])


def _report(request: ReportRequest) -> ReportPaths:
    request.alone(KIND)
    frame = _frame(request.run_dir)
    accuracy, confidence = frame["correct"].mean(), frame["confidence"].mean()
    summary = pd.DataFrame([{"items": len(frame), "accuracy": accuracy, "confidence": confidence}])
    text = f"# toy summary\n\naccuracy: {accuracy:.3f}\nmean confidence: {confidence:.3f}\n"
    html = page("toy", f"<h1>toy</h1><p>{esc(text)}</p>{request.appendix.html}")
    text += "\n".join(request.appendix.markdown)  # the report's own part: re-asks, if any
    return write_report(
        request.out_dir or request.run_dir, html=html, summary_md=text, summary_csv=summary
    )


def _derive(spec: Any, raw: Any, stored: Any) -> ToyReadouts:
    return _readouts(int(spec["n"]), str(raw["text"]))


def _card(run_dir: Path, n_boot: int, seed: int) -> CardSection:
    correct = _frame(run_dir)["correct"].astype(float).to_numpy()
    acc = cluster_bootstrap_mean(correct, range(len(correct)), n_boot=n_boot, seed=seed)
    numbers = (ci_number("toy accuracy", acc.estimate, acc.low, acc.high, len(correct), 2),)
    return CardSection(
        "toy",
        numbers=numbers,
        figure=number_bars(numbers, "toy accuracy"),
        write_report=lambda appendix: _report(ReportRequest(run_dir, appendix=appendix)),
    )


def _rows(run_dir: Path, keys: Collection[str] | None = None) -> Iterator[Row]:
    return frame_rows(_frame(run_dir), keys)


def _card_plan(model: str, config: CardConfig) -> list[Part]:
    return [Part(KIND, True, "the toy's model")]


def _card_run(
    model: str,
    config: CardConfig,
    parts: Sequence[Part],
    run_dir: Path,
    options: driver.RunOptions,
) -> driver.RunSummary:
    return driver.run_with(TOY, ToyConfig(model=model), run_dir, **options)


def _board(run_dir: Path, model: str) -> pd.DataFrame:
    """Every number is one item of one group, its own cluster."""
    frame = _frame(run_dir)
    return pd.DataFrame(
        {
            "item": frame["n"].astype(str),
            "group": "every number",
            "cluster": frame["n"],
            "correct": frame["correct"].astype(float),
        }
    )


TOY_FACE = ProtocolFace(
    KIND,
    report=_report,
    derive={ITEM_KIND: _derive},
    card=_card,
    card_run=CardRun(_card_plan, _card_run, _board),
    rows=_rows,
)


# ---------------------------------------------------------------------------------- tests


@pytest.fixture
def toy_face(monkeypatch: pytest.MonkeyPatch) -> None:
    """The toy's face registered for one test (the registry as it was afterwards: a card run
    registered for good would join every later card)."""
    monkeypatch.setattr(faces, "_FACES", dict(faces._FACES))
    register(KIND, TOY_FACE)


@pytest.fixture
def toy_run(tmp_path: Path, toy_face: None) -> Path:
    """A finished toy run, its face registered."""
    run = tmp_path / "cards" / "toy"
    summary = driver.run(TOY, ToyConfig(), run, driver.Execution(progress=False))
    assert (summary.ok, summary.failed) == (6, 0)
    return run


def test_the_toy_run_is_reported_by_clearsight_report(toy_run: Path) -> None:
    result = runner.invoke(app, ["report", str(toy_run)])
    assert result.exit_code == 0, result.output
    assert "accuracy: 0.833" in result.output  # 5 of 6
    assert "mean confidence: 0.750" in result.output
    csv = pd.read_csv(toy_run / "summary.csv")
    assert csv["items"].tolist() == [6]
    assert csv["accuracy"].iloc[0] == pytest.approx(5 / 6, abs=1e-12)
    assert (toy_run / "report.html").read_text().startswith("<!DOCTYPE html>")
    refused = runner.invoke(app, ["report", str(toy_run), str(toy_run)])
    assert refused.exit_code == 2
    assert "a toy report shows one run" in refused.output


def test_the_toy_run_without_a_view_is_one_error_line_in_clearsight_view(toy_run: Path) -> None:
    """The toy declares no ``view``: ``clearsight view`` says so in one line and writes no
    file of its own (no side index; SQLite's own -wal and -shm files of the run set aside)."""

    def files() -> list[str]:
        return sorted(p.name for p in toy_run.iterdir() if not p.name.endswith(("-wal", "-shm")))

    before = files()
    result = runner.invoke(app, ["view", str(toy_run)])
    assert result.exit_code == 2
    assert result.output == f"error: a {KIND} run has no viewer (clearsight view)\n"
    assert files() == before


def test_the_toy_readouts_are_derived_again_by_verify(toy_run: Path) -> None:
    result = runner.invoke(app, ["verify", str(toy_run), "--readouts"])
    assert result.exit_code == 0, result.output
    assert "read-outs derived again from raw outputs: 6 toy.parity" in result.output
    assert "0 records' stored read-outs differ" in result.output
    # a stored read-out edited by hand is found: the toy's own derivation ran
    import sqlite3

    with sqlite3.connect(toy_run / "run.sqlite") as conn:
        rows = conn.execute("SELECT id, readouts FROM records").fetchall()
        rid, text = next((r, t) for r, t in rows if "0.6" in t)
        conn.execute(
            "UPDATE records SET readouts = ? WHERE id = ?", (text.replace("0.6", "0.7"), rid)
        )
    again = runner.invoke(app, ["verify", str(toy_run), "--readouts"])
    assert again.exit_code == 3, again.output
    assert "differs:" in again.output
    assert "): confidence" in again.output


def test_the_toy_has_a_card_section_and_rows(toy_run: Path) -> None:
    section = card_section(toy_run, 200, 0)
    assert [n.key for n in section.numbers] == ["toy accuracy"]
    number = section.numbers[0]
    assert number.estimate == pytest.approx(5 / 6, abs=1e-12)
    assert number.low <= number.estimate <= number.high
    assert number.n == 6
    card_dir = toy_run.parent
    card = write_card(GUESSER, card_dir, CardConfig(), [], {"toy"})
    assert card["numbers"][GUESSER]["toy accuracy"]["estimate"] == pytest.approx(5 / 6)
    assert card["reports"] == {"toy": "toy/report.html"}
    assert load_card(card_dir)["numbers"] == json.loads(json.dumps(card["numbers"]))
    assert f"data-key='{GUESSER}|toy accuracy'" in (card_dir / "card.html").read_text()
    assert (toy_run / "report.html").is_file()  # the stale part's report, written by its face
    rows: Sequence[Row] = list(face_of(KIND).need(face_of(KIND).rows, "rows")(toy_run))
    assert [r["n"] for r in rows] == [1, 2, 3, 4, 5, 6]
    assert [r["correct"] for r in rows] == [True, True, True, True, False, True]
    assert all(isinstance(r["confidence"], float) for r in rows)


def test_the_toy_takes_part_in_cards_and_a_board(tmp_path: Path, toy_face: None) -> None:
    """The toy's card run, found in the registry after the three protocols, runs a card's
    part for each model; the board ranks the two cards and pairs their items."""
    assert [name for name, _ in card_runs()] == ["sweep", "grounding", "probe", KIND]
    config = CardConfig(n_boot=200)
    card_run = face_of(KIND).card_run
    assert card_run is not None
    for model in (GUESSER, DOUBTER):
        parts = card_run.plan(model, config)
        assert [(p.name, p.runs) for p in parts] == [(KIND, True)]
        summary = card_run.run(model, config, parts, tmp_path / model / KIND, {"progress": False})
        assert (summary.ok, summary.failed) == (6, 0)
        card = write_card(model, tmp_path / model, config, parts, {KIND})
        assert card["parts"] == [p.to_json() for p in parts]
    _, csv = write_board([tmp_path / GUESSER, tmp_path / DOUBTER], tmp_path / "board")
    board = pd.read_csv(csv)
    ranks = board[board["kind"] == "number"].set_index("model")
    assert ranks.loc[GUESSER, "estimate"] == pytest.approx(5 / 6, abs=1e-12)
    assert ranks.loc[DOUBTER, "estimate"] == pytest.approx(1 / 2, abs=1e-12)
    assert (ranks.loc[GUESSER, "rank"], ranks.loc[DOUBTER, "rank"]) == (1, 2)
    paired = board[board["kind"] == "paired"]
    assert paired["key"].tolist() == ["accuracy difference (every number)"]
    row = paired.iloc[0]
    assert (row["model"], row["other"], row["n"]) == (GUESSER, DOUBTER, 6)
    assert row["estimate"] == pytest.approx(1 / 3, abs=1e-12)
    assert row["low"] <= row["estimate"] <= row["high"]


def test_the_toy_run_is_exported_in_every_format(toy_run: Path, tmp_path: Path) -> None:
    """``clearsight export`` reaches the toy through its face only: its rows as Parquet, its
    card number as the Hub's eval results and as an Every Eval Ever record."""
    import yaml

    out = tmp_path / "export"
    for fmt in ("parquet", "eval-results", "eee"):
        args = ["export", str(toy_run), "--format", fmt, "--out", str(out), "--n-boot", "200"]
        result = runner.invoke(app, [*args, "--model", "toy-guesser"])
        assert result.exit_code == 0, result.output
    frame = pd.read_parquet(out / "data" / "details.parquet")
    assert frame["n"].tolist() == [1, 2, 3, 4, 5, 6]
    assert frame["correct"].tolist() == [True, True, True, True, False, True]
    (entry,) = yaml.safe_load(
        (out / "models/toy-guesser/.eval_results/clearsight-toy.yaml").read_text()
    )
    assert entry["dataset"]["task_id"] == "toy_accuracy"
    assert entry["value"] == pytest.approx(5 / 6, abs=1e-12)
    (record_path,) = (out / "eee").rglob("*.json")
    record = json.loads(record_path.read_text())
    schema = Path(__file__).parent / "fixtures" / "every_eval_ever" / "eval.schema.json"
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.Draft7Validator(json.loads(schema.read_text())).validate(record)
    (found,) = record["evaluation_results"]
    assert found["evaluation_name"] == "toy accuracy"
    assert found["metric_config"]["lower_is_better"] is False
    assert found["score_details"]["score"] == pytest.approx(5 / 6, abs=1e-12)
