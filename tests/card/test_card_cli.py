"""``clearsight card``, ``board`` and ``fetch`` on bad input: one ``error:`` line, exit code 2,
nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clearsight.cli import app

runner = CliRunner()


def _error(args: list[str]) -> str:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith("error: "), result.output
    assert "Traceback" not in result.output
    return lines[0]


def test_card_refuses_an_unknown_model_and_a_bad_config(tmp_path: Path) -> None:
    out = tmp_path / "card"
    assert "nosuch" in _error(["card", "nosuch:model", "--out", str(out)])
    config = tmp_path / "card.yaml"
    config.write_text("probe_runs: 1\ncolour: red\n")
    line = _error(["card", "observer", "--out", str(out), "--config", str(config)])
    assert line.startswith(f"error: invalid card config in {config}: ")
    assert "probe_runs" in line
    assert "colour: unknown field" in line
    assert not out.exists()


def test_card_refuses_sizes_the_sweep_does_not_take_before_anything_runs(tmp_path: Path) -> None:
    """The card's wordings and controls are checked by the sweep's own configuration (its card
    run's plan), before any part runs: one line, exit 2, nothing written."""
    out = tmp_path / "card"
    line = _error(["card", "observer", "--out", str(out), "--wordings", "mcq.reason,bogus"])
    assert line.startswith("error: invalid card config: wordings.1: ")
    assert "(got 'bogus')" in line
    line = _error(["card", "observer", "--out", str(out), "--controls", "clean,murky"])
    assert line.startswith("error: invalid card config: controls.1: ")
    assert not out.exists()


def test_board_refuses_too_few_cards_and_a_folder_without_one(tmp_path: Path) -> None:
    out = tmp_path / "board"
    assert "needs two or more card directories, got 1" in _error(["board", str(tmp_path)])
    empty = tmp_path / "empty"
    empty.mkdir()
    line = _error(["board", str(empty), str(empty), "--out", str(out)])
    assert f"{empty} holds no card.json" in line
    (empty / "card.json").write_text("[1]")
    assert "is not a clearsight card" in _error(["board", str(empty), str(empty)])
    assert not out.exists()


_CARD = {
    "card_version": 1,
    "model": "m",
    "manifest_hash": "h",
    "config": {"n_boot": 100, "seed": 0},
    "roles": {"m": "card model"},
    "numbers": {"m": {"acc": {"key": "acc", "estimate": 0.5, "low": 0.4, "high": 0.6, "text": ""}}},
    "cost": [],
    "parts": [],
    "reports": {},
}


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        ({"numbers": None}, "its 'numbers' is missing or not a dict"),
        ({"model": 3}, "its 'model' is missing or not a str"),
        ({"numbers": {"m": {"acc": {"key": "acc"}}}}, "its numbers of 'm' are missing or malf"),
        ({"numbers": {"other": {}}}, "its numbers of 'm' are missing or malformed"),
        ({"config": {"n_boot": "many", "seed": 0}}, "lacks the integers n_boot and seed"),
    ],
)
def test_board_refuses_a_card_json_missing_a_field_in_one_line(
    tmp_path: Path, edit: dict[str, object], says: str
) -> None:
    """A card.json without a field the board reads (a KeyError traceback before) or with one
    of the wrong type is one line, exit 2."""
    card = tmp_path / "card"
    card.mkdir()
    fields = {k: v for k, v in {**_CARD, **edit}.items() if v is not None}
    (card / "card.json").write_text(json.dumps(fields))
    line = _error(["board", str(card), str(card), "--out", str(tmp_path / "board")])
    assert line.startswith(f"error: {card / 'card.json'} is not a clearsight card of version 1: ")
    assert says in line
    assert not (tmp_path / "board").exists()


def test_fetch_refuses_an_unknown_step() -> None:
    assert "unknown fetch step 'maps'" in _error(["fetch", "--steps", "photos,maps"])


def test_the_demo_says_what_it_skips_and_what_fetches_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from clearsight.card import parts
    from clearsight.cli import demo

    monkeypatch.setattr(parts, "missing_embedded", lambda: "needs SmolLM2: run `clearsight fetch`")
    monkeypatch.setattr(parts, "missing_detectors", lambda: None)
    assert demo.demo_models() == ("observer", "perceiver:detector")
    assert demo.demo_skipped() == {
        "hf:smollm2-135m": "needs SmolLM2: run `clearsight fetch`",
        "perceiver:llm": "needs SmolLM2: run `clearsight fetch`",
    }
    printed: list[str] = []
    monkeypatch.setattr(demo.typer, "secho", lambda text, **_: printed.append(text))
    monkeypatch.setattr(demo.typer, "echo", lambda text, **_: printed.append(text))
    demo._say_what_runs(demo._only_scenes(demo.demo_config(), ("skimage-chelsea",)))
    assert printed[0] == "demo: 1 scenes, models: observer, perceiver:detector"
    assert "note: hf:smollm2-135m skipped: needs SmolLM2: run `clearsight fetch`" in printed
    assert printed[-1].startswith("note: `clearsight fetch` fetches what is missing")


def test_a_stopped_card_says_how_to_resume(monkeypatch: pytest.MonkeyPatch) -> None:
    import clearsight.card
    from clearsight.execute import Interrupted, Summary

    def stopped(*args: object, **kwargs: object) -> None:
        raise Interrupted(Summary(units=1, ok=20, failed=0), terminated=True)

    monkeypatch.setattr(clearsight.card, "run_card", stopped)
    result = runner.invoke(app, ["card", "observer", "--out", "unused"])
    assert result.exit_code == 143
    assert "terminated: 20 records committed; rerun the same command to resume" in result.output
    assert "Traceback" not in result.output
