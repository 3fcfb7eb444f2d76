"""Issue 15, finding 1: the user's instances are what runs. ``--instances PATH`` on every
command that takes questions (probe run, probe instances, build, grounding) reads the file,
its loader inferred from its rows or an error saying it cannot; ``bundled`` is a name, never a
fallback; the manifest records the resolved source, its sha256 and the instance count."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from clearsight.cli import app
from clearsight.grounding import GroundingConfig
from clearsight.probe.instances import bundled_instances
from clearsight.store import RunStore
from clearsight.validate import InputError
from fixtures.probe_runs import IDS, scripts

runner = CliRunner()


def _own_file(tmp_path: Path) -> Path:
    """Two bundled questions in clearsight's own JSON form, under a name that is no loader's."""
    path = tmp_path / "valid.jsonl"
    chosen = [i for i in bundled_instances() if i.id in IDS]
    path.write_text("".join(json.dumps(i.to_json()) + "\n" for i in chosen))
    return path


def _manifest(run: Path) -> dict[str, Any]:
    with RunStore.open(run, read_only=True) as store:
        return store.manifest()


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_probe_run_reads_the_named_file_and_records_it(tmp_path: Path) -> None:
    sensor, reasoner = scripts(tmp_path)
    source, out = _own_file(tmp_path), tmp_path / "run"
    args = ["probe", "run", "--out", str(out), "--instances", str(source), "--sensor", sensor]
    args += ["--reasoner", reasoner, "--strategies", "direct", "--runs", "1", "--judge", "exact"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "2 records written, 0 failed" in result.output  # the file's 2, not the bundled 53
    manifest = _manifest(out)
    assert manifest["config"]["dataset"] == "jsonl"  # inferred from the rows
    assert manifest["instances"] == {
        "source": str(source.resolve()),
        "format": "jsonl",
        "dataset": "jsonl",
        "sha256": _sha256(source),
        "count": 2,
    }


def test_probe_run_says_when_it_cannot_tell_the_loader_and_writes_nothing(
    tmp_path: Path,
) -> None:
    source = tmp_path / "seed.jsonl"
    row = {"question_id": 1, "question": "q?", "choice_a": "x", "choice_b": "y", "answer": "A"}
    source.write_text(json.dumps(row) + "\n")
    out, (sensor, _) = tmp_path / "run", scripts(tmp_path)
    args = ["probe", "run", "--out", str(out), "--instances", str(source), "--sensor", sensor]
    result = runner.invoke(app, [*args, "--strategies", "direct", "--runs", "1"])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith("error: "), result.output
    assert f"unknown loader for {source}" in lines[0]
    assert "--dataset" in lines[0]
    assert not out.exists()


@pytest.mark.parametrize(
    ("instances", "dataset", "says"),
    [
        ("FILE", "bundled", "'bundled' is the bundled question set"),
        ("bundled", "seedbench", "invalid dataset 'seedbench' for instances 'bundled'"),
        ("FILE", "nosuchloader", "unknown dataset 'nosuchloader'"),
    ],
)
def test_bundled_is_a_name_never_a_fallback(
    tmp_path: Path, instances: str, dataset: str, says: str
) -> None:
    source = str(_own_file(tmp_path)) if instances == "FILE" else instances
    out = tmp_path / "run"
    sensor, _ = scripts(tmp_path)
    args = ["probe", "run", "--out", str(out), "--instances", source, "--dataset", dataset]
    result = runner.invoke(app, [*args, "--sensor", sensor, "--strategies", "direct"])
    assert result.exit_code == 2, result.output
    assert says in result.output
    assert result.output.startswith("error: ")
    assert not out.exists()


def test_probe_instances_lists_the_named_file(tmp_path: Path) -> None:
    result = runner.invoke(app, ["probe", "instances", "--instances", str(_own_file(tmp_path))])
    assert result.exit_code == 0, result.output
    listed = [line.split()[0] for line in result.output.strip().splitlines()]
    assert sorted(listed) == sorted(IDS)


def test_build_reads_the_named_file_and_records_it(tmp_path: Path) -> None:
    sensor = tmp_path / "sensor.jsonl"
    sensor.write_text(json.dumps({"match": "Answer with the letter", "texts": ["B"] * 11}) + "\n")
    source, store, out = _own_file(tmp_path), tmp_path / "store", tmp_path / "kept.jsonl"
    args = ["probe", "build", "--out", str(out), "--stage", "1", "--instances", str(source)]
    result = runner.invoke(app, [*args, "--sensor", f"scripted:{sensor}", "--store", str(store)])
    assert result.exit_code == 0, result.output
    assert "of 2 questions" in result.output
    recorded = _manifest(store)["instances"]
    assert (recorded["source"], recorded["sha256"], recorded["count"]) == (
        str(source.resolve()),
        _sha256(source),
        2,
    )


def test_grounding_runs_only_the_named_problem_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import clearsight.grounding.protocol as protocol

    seen: list[GroundingConfig] = []

    def run_grounding(config: GroundingConfig, run_dir: Path, **_: object) -> None:
        seen.append(config)
        raise InputError("stopped before the run")

    monkeypatch.setattr(protocol, "run_grounding", run_grounding)
    problems = tmp_path / "mine.jsonl"
    rows = [{"id": f"p{i}", "question": f"{i} + 1 = ?", "answer": str(i + 1)} for i in range(3)]
    problems.write_text("".join(json.dumps(r) + "\n" for r in rows))
    base = ["grounding", "--out", str(tmp_path / "run"), "--instances", str(problems)]
    result = runner.invoke(app, base)
    assert result.exit_code == 2, result.output
    assert "stopped before the run" in result.output
    assert (seen[0].n_problems, seen[0].jsonl) == (0, (str(problems),))  # no bundled ones
    result = runner.invoke(app, [*base, "--instances", "bundled", "--n", "4"])
    assert (seen[1].n_problems, seen[1].jsonl) == (4, (str(problems),))  # bundled when named
    manifest = protocol._manifest(seen[0], protocol.load_problems(seen[0]))
    assert manifest["problems"] == {
        "bundled": 0,
        "files": [{"source": str(problems.resolve()), "sha256": _sha256(problems), "count": 3}],
        "count": 3,
    }


@pytest.mark.parametrize("command", ["run", "build-bench"])
def test_a_problem_source_with_no_rows_is_one_line_and_writes_nothing(
    tmp_path: Path, command: str
) -> None:
    """A benchmark or file that holds no problems is bad input (exit 2, one line): not an empty
    run and an empty TGS-Bench file with exit 0."""
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    model = tmp_path / "model.jsonl"
    lines = [{"texts": ["A"]}, {"hidden": {"share": 1.0, "sequence_probs": {"3": 1.0}}}]
    model.write_text("".join(json.dumps(x) + "\n" for x in lines))
    out = ["--out", str(tmp_path / "run")]
    if command == "run":
        args = ["grounding", "run", "--model", f"scripted:{model}", "--generator", "none", *out]
    else:
        args = ["grounding", "build-bench", "--generator", f"scripted:{model}", "--out"]
        args += [str(tmp_path / "b" / "bench.jsonl"), "--run-dir", str(tmp_path / "run")]
    result = runner.invoke(app, [*args, "--instances", str(empty)])
    assert result.exit_code == 2, result.output
    assert result.output == f"error: no problems in {empty}: it holds no rows\n"
    assert not (tmp_path / "run").exists()
    assert not (tmp_path / "b").exists()
