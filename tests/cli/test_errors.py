"""Issue 15, finding 4: every bad input is one line, ``error: <what> in <where>: <why>``, exit
code 2, no traceback, no pydantic URL, never "Error:"; ``--debug`` shows the traceback. The
build's sensor returning too few samples and options given as a string are clear errors."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from clearsight.cli import app
from clearsight.probe.instances import bundled_instances
from fixtures.probe_runs import IDS, scripts

runner = CliRunner()


def _one_error_line(output: str) -> str:
    """The output's only line, checked to be in the one error style."""
    lines = output.strip().splitlines()
    assert len(lines) == 1, output
    assert lines[0].startswith("error: "), output
    for banned in ("Traceback", "Error:", "errors.pydantic.dev", "╭"):
        assert banned not in output, output
    return lines[0]


def test_a_bad_command_line_is_one_error_line(tmp_path: Path) -> None:
    result = runner.invoke(app, ["probe", "build", "--out", str(tmp_path / "k.jsonl"), "--k", "3"])
    assert result.exit_code == 2
    line = _one_error_line(result.output)
    assert line.startswith("error: invalid command line in ")
    assert "No such option: --k" in line
    result = runner.invoke(app, ["probe", "run", "--executor", "bogus"])
    assert result.exit_code == 2
    assert "'bogus' is not one of serial, process, ray" in _one_error_line(result.output)


def test_a_config_error_outside_load_config_is_one_line_without_a_url(tmp_path: Path) -> None:
    source = tmp_path / "x.jsonl"
    source.write_text(json.dumps(bundled_instances()[0].to_json()) + "\n")
    args = ["probe", "instances", "--instances", str(source), "--dataset", "bundled"]
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert f"invalid dataset 'bundled' for {source}" in _one_error_line(result.output)


def test_debug_shows_the_traceback_then_the_line(tmp_path: Path) -> None:
    config = tmp_path / "sweep.yaml"
    config.write_text("seed: x\n")
    args = ["sweep", "--config", str(config), "--out", str(tmp_path / "run")]
    plain = runner.invoke(app, args)
    assert plain.exit_code == 2
    line = _one_error_line(plain.output)
    assert line.startswith(f"error: invalid sweep config in {config}: seed: ")
    debug = runner.invoke(app, ["--debug", *args])
    assert debug.exit_code == 2
    assert "Traceback (most recent call last)" in debug.output
    assert debug.output.strip().splitlines()[-1] == line


def test_build_with_a_sensor_short_of_samples_is_a_clear_error(tmp_path: Path) -> None:
    sensor = tmp_path / "sensor.jsonl"
    sensor.write_text(json.dumps({"match": "Answer with the letter", "texts": ["B"]}) + "\n")
    out = tmp_path / "kept.jsonl"
    args = ["probe", "build", "--out", str(out), "--stage", "1", "--sensor", f"scripted:{sensor}"]
    result = runner.invoke(app, [*args, "--ids", IDS[0]])
    assert result.exit_code == 2, result.output
    error = [line for line in result.output.splitlines() if line.startswith("error: ")]
    assert len(error) == 1, result.output
    assert "too few samples from the sensor: 1 of the 11 asked for" in error[0]
    assert "RuntimeError" not in result.output
    assert "Traceback" not in result.output
    assert not out.exists()


def test_options_given_as_a_string_are_refused_not_split(tmp_path: Path) -> None:
    row = {**bundled_instances()[0].to_json(), "id": "x1", "options": "ab", "gold": "A"}
    source = tmp_path / "x.jsonl"
    source.write_text(json.dumps(row) + "\n")
    args = ["probe", "instances", "--instances", str(source), "--dataset", "jsonl"]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    line = _one_error_line(result.output)
    assert "invalid options in instance 'x1': options must be a list of texts, got 'ab'" in line


def test_an_out_through_a_regular_file_is_bad_input(tmp_path: Path) -> None:
    """``--out FILE/run`` where FILE is a regular file names the wrong kind of path: exit 2
    (bad input, as the README's table says), not 4 (the disk failed)."""
    (tmp_path / "file").write_text("x")
    out = tmp_path / "file" / "run"
    sensor, reasoner = scripts(tmp_path)
    args = ["probe", "run", "--instance-ids", IDS[0], "--sensor", sensor, "--reasoners", reasoner]
    result = runner.invoke(app, [*args, "--strategies", "direct", "--out", str(out)])
    assert result.exit_code == 2, result.output
    line = _one_error_line(result.output)
    assert line.startswith(f"error: cannot create the run directory in {out}: Not a directory")
