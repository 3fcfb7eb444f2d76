"""Issue 15, finding 5: what the docs say is what the code does. ``scripted:`` reads YAML and
JSON files as the README says (and JSONL); ``clearsight sweep --controls`` chooses the controls
(``none``: none); a one-scene sweep skips the shuffled control with a note instead of stopping."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from clearsight.cli import app
from clearsight.models.base import Decoding, Message, Request
from clearsight.models.scripted import make_scripted
from clearsight.store import RunStore

runner = CliRunner()
RESPONSES = [{"match": "colour", "texts": ["red"]}, {"texts": ["one"]}, {"texts": ["two"]}]


def _request(text: str) -> Request:
    return Request((Message.user(text),), Decoding(max_new_tokens=4))


@pytest.mark.parametrize("suffix", [".yaml", ".yml", ".json", ".jsonl"])
def test_scripted_reads_yaml_json_and_jsonl(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"script{suffix}"
    if suffix == ".jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in RESPONSES))
    elif suffix == ".json":
        path.write_text(json.dumps(RESPONSES))
    else:
        path.write_text(yaml.safe_dump(RESPONSES))
    backend = make_scripted(str(path), {})
    asked = ["What colour?", "first", "second"]
    got = [r.texts for r in backend.complete([_request(t) for t in asked])]
    assert got == [("red",), ("one",), ("two",)]


def _sweep(tmp_path: Path, controls: str, name: str) -> tuple[Any, dict[str, Any]]:
    config = tmp_path / "sweep.yaml"
    config.write_text(yaml.safe_dump({"levels_m": [250.0, 2.0], "imagenet_c_severities": [1]}))
    out = tmp_path / name
    args = ["sweep", "--config", str(config), "--out", str(out), "--scene-ids", "skimage-chelsea"]
    args += ["--arms", "fog", "--tasks", "identify", "--wordings", "mcq.reason"]
    args += ["--model", "observer", "--executor", "serial", "--controls", controls]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    with RunStore.open(out, read_only=True) as store:
        return result, store.manifest()["config"]


def test_a_one_scene_sweep_skips_the_shuffled_control_with_a_note(tmp_path: Path) -> None:
    result, config = _sweep(tmp_path, "blank,shuffled", "run")
    assert "note: the shuffled control is skipped: it needs at least 2 scenes" in result.output
    assert config["controls"] == ["blank"]


def test_controls_none_runs_no_control(tmp_path: Path) -> None:
    result, config = _sweep(tmp_path, "none", "run")
    assert config["controls"] == []
    assert "note:" not in result.output
