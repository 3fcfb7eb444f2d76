"""``--config`` on every run command: the YAML file's fields reach the protocol, a flag given on
the command line wins over the file, a flag not given leaves the file's value; a bad file or
option is one ``error: invalid ...`` line, exit 2, and nothing is written."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from clearsight.cli import app
from clearsight.grounding import GroundingConfig
from clearsight.store import RunStore
from clearsight.sweep.config import SweepConfig
from clearsight.sweep.plan import plan_sweep
from clearsight.validate import InputError
from fixtures.probe_runs import IDS, scripts

runner = CliRunner()


def _yaml(path: Path, fields: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(fields))
    return path


def _manifest_config(run: Path) -> dict[str, Any]:
    with RunStore.open(run, read_only=True) as store:
        config: dict[str, Any] = store.manifest()["config"]
    return config


def test_sweep_reads_its_config_file_and_a_given_flag_wins(tmp_path: Path) -> None:
    fields = {
        "scene_ids": ["skimage-chelsea"],
        "arms": ["fog"],
        "levels_m": [250.0, 2.0],
        "controls": ["clean"],
        "tasks": ["identify"],
        "wordings": ["mcq.reason"],
        "seed": 5,
    }
    config = _yaml(tmp_path / "sweep.yaml", fields)
    out = tmp_path / "run"
    args = ["sweep", "--config", str(config), "--seed", "7", "--executor", "serial"]
    result = runner.invoke(app, [*args, "--out", str(out)])
    assert result.exit_code == 0, result.output
    want = SweepConfig(**{**fields, "seed": 7})  # type: ignore[arg-type]
    assert f"{len(plan_sweep(want).items)} records written, 0 failed" in result.output
    got = _manifest_config(out)
    assert got == want.model_dump(mode="json")
    assert (got["seed"], got["levels_m"], got["controls"]) == (7, [250.0, 2.0], ["clean"])


def test_probe_run_reads_its_config_file_and_a_given_flag_wins(tmp_path: Path) -> None:
    sensor, reasoner = scripts(tmp_path)
    fields = {
        "instance_ids": list(IDS),
        "reasoners": [reasoner],
        "sensor": sensor,
        "strategies": ["direct", "bp"],
        "judge": "exact",
        "runs": 2,
        "budget": 4,
    }
    config = _yaml(tmp_path / "probe.yaml", fields)
    out = tmp_path / "run"
    args = ["probe", "run", "--config", str(config), "--runs", "1", "--strategies", "direct"]
    result = runner.invoke(app, [*args, "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "2 records written, 0 failed" in result.output  # 2 instances x 1 run x direct
    got = _manifest_config(out)
    assert (got["runs"], got["strategies"]) == (1, ["direct"])  # the flags
    assert (got["budget"], got["judge"], got["sensor"]) == (4, "exact", sensor)  # the file
    assert got["instance_ids"] == list(IDS)


def test_grounding_reads_its_config_file_and_a_given_flag_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import clearsight.grounding.protocol as protocol

    seen: list[GroundingConfig] = []

    def run_grounding(config: GroundingConfig, run_dir: Path, **_: object) -> None:
        seen.append(config)
        raise InputError("stopped before the run")

    monkeypatch.setattr(protocol, "run_grounding", run_grounding)
    fields = {
        "model": "hf:smollm2-135m",
        "generator": "hf:smollm2-135m",
        "model_options": {"batch_size": 4, "device": "cpu"},
        "n_problems": 3,
        "variation": False,
        "hesitation": True,
        "seed": 3,
    }
    config = _yaml(tmp_path / "grounding.yaml", fields)
    args = ["grounding", "--config", str(config), "--generator", "none", "--batch-size", "2"]
    args += ["--no-hesitation", "--seed", "4", "--out", str(tmp_path / "run")]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "stopped before the run" in result.output
    assert seen == [
        GroundingConfig(
            model="hf:smollm2-135m",
            generator=None,  # --generator none over the file's model
            model_options={"batch_size": 2, "device": "cpu"},  # one key of the file's options
            n_problems=3,
            variation=False,  # the file's, as --variation was not given
            hesitation=False,
            seed=4,
        )
    ]


def test_build_reads_its_config_file_and_a_given_flag_wins(tmp_path: Path) -> None:
    sensor = tmp_path / "sensor.jsonl"
    # six direct answers per question: a sensor asked for the file's eleven would fail
    sensor.write_text(json.dumps({"match": "Answer with the letter", "texts": ["B"] * 6}) + "\n")
    fields = {"instance_ids": list(IDS), "sensor": f"scripted:{sensor}", "samples": 11}
    config = _yaml(tmp_path / "build.yaml", fields)
    out = tmp_path / "kept.jsonl"
    result = runner.invoke(
        app, ["probe", "build", "--config", str(config), "--samples", "6", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    counts = re.findall(r"(bundled/\S+) +c= *(\d+)/(\d+)", result.output)
    # every answer is B: right for one question, wrong for the other, out of the flag's six
    assert sorted(counts) == sorted([(IDS[0], "6", "6"), (IDS[1], "0", "6")]), result.output
    assert f"of {len(IDS)} questions: {out}" in result.output
    assert out.is_file()


# --------------------------------------------------------------------------------------------
# Bad input: one line, exit 2, nothing written

#: Per run command: its arguments, the name in its errors, a bad field of its file with the
#: problem reported, and a bad flag with the problem reported.
COMMANDS: dict[str, tuple[list[str], str, str, str, list[str], str]] = {
    "sweep": (
        ["sweep"],
        "sweep config",
        "coco_n: 0",
        "coco_n: Input should be greater than or equal to 1 (got 0)",
        ["--arms", "smoke"],
        "arms.0: Input should be 'fog', 'water' or 'turbid' (got 'smoke')",
    ),
    "probe": (
        ["probe", "run"],
        "probe config",
        "k: 0",
        "k: Input should be greater than or equal to 1 (got 0)",
        ["--strategies", "guess"],
        "strategies.0: Input should be 'direct', 'react', 'uot', 'uot_prompt' or 'bp' "
        "(got 'guess')",
    ),
    "grounding": (
        ["grounding"],
        "grounding config",
        "n_boot: 10",
        "n_boot: Input should be greater than or equal to 100 (got 10)",
        ["--n", "-1"],
        "n_problems: Input should be greater than or equal to 0 (got -1)",
    ),
    "build": (
        ["probe", "build", "--store", "STORE"],
        "build config",
        "samples: 0",
        "samples: Input should be greater than or equal to 1 (got 0)",
        ["--stage", "3"],
        "stage: Input should be 1 or 2 (got 3)",
    ),
}


def _invoke(name: str, tmp_path: Path, extra: list[str]) -> tuple[str, int]:
    command = [a.replace("STORE", str(tmp_path / "store")) for a in COMMANDS[name][0]]
    result = runner.invoke(app, [*command, "--out", str(tmp_path / "run"), *extra])
    return result.output, result.exit_code


def _nothing_written(tmp_path: Path) -> None:
    assert not (tmp_path / "run").exists()
    assert not (tmp_path / "store").exists()


@pytest.mark.parametrize("name", COMMANDS)
@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            "seed: [1\n",
            "not valid YAML: line 2, column 1: expected ',' or ']', but got '<stream end>'",
        ),
        ("colour: red\n", "colour: unknown field"),
        ("- a list\n", "the file must hold a mapping of fields, got list"),
    ],
    ids=["malformed", "unknown-key", "not-a-mapping"],
)
def test_a_bad_config_file_is_one_line_and_writes_nothing(
    tmp_path: Path, name: str, text: str, problem: str
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(text)
    output, code = _invoke(name, tmp_path, ["--config", str(config)])
    assert code == 2, output
    assert output == f"error: invalid {COMMANDS[name][1]} in {config}: {problem}\n"
    _nothing_written(tmp_path)


@pytest.mark.parametrize("name", COMMANDS)
def test_a_bad_value_in_the_file_is_named_with_the_file(tmp_path: Path, name: str) -> None:
    _, what, field, problem, _, _ = COMMANDS[name]
    config = tmp_path / "config.yaml"
    config.write_text(f"{field}\nalso_unknown: 1\n")
    output, code = _invoke(name, tmp_path, ["--config", str(config)])
    assert code == 2, output
    assert output == f"error: invalid {what} in {config}: {problem}; also_unknown: unknown field\n"
    _nothing_written(tmp_path)


@pytest.mark.parametrize("name", COMMANDS)
def test_a_bad_flag_value_is_one_line_and_writes_nothing(tmp_path: Path, name: str) -> None:
    _, what, _, _, flag, problem = COMMANDS[name]
    output, code = _invoke(name, tmp_path, flag)
    assert code == 2, output
    field = problem.split(":")[0].split(".")[0]  # the error names the option that gave it
    assert output == f"error: invalid {what}: {problem} ({field} from {flag[0]})\n"
    _nothing_written(tmp_path)
