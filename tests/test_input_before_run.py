"""Bad input is refused before anything exists: one ``error:`` line, exit 2, no run directory.
Duplicate instance and problem ids (two questions under one id would run and be analysed as
one), numeric fields that are not finite or out of their domain (NaN levels, wavelengths
outside the water table), and per-model options naming no model of the run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from clearsight.cli import app
from clearsight.probe.instances import Instance
from clearsight.probe.sources.load import load_instances
from clearsight.validate import InputError
from fixtures.probe_runs import scripts

runner = CliRunner()


def _refused(args: list[str], out: Path) -> str:
    """The one error line of a command that must stop before its run directory exists."""
    result = runner.invoke(app, [*args, "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert not out.exists()
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith("error: ")
    return lines[0]


# --------------------------------------------------------------------------------------------
# Duplicate ids


def _instance(id_: str, gold: str) -> dict[str, Any]:
    options = ("a cup", "a bowl")
    return Instance(
        id_, "bundled:skimage-coffee", "What is it?", options, gold, "mine", "c"
    ).to_json()


def test_two_questions_under_one_id_stop_the_probe_before_its_run_exists(tmp_path: Path) -> None:
    instances = tmp_path / "instances.jsonl"
    rows = [_instance("g1", "A"), _instance("g2", "A"), _instance("g1", "B")]
    instances.write_text("".join(json.dumps(r) + "\n" for r in rows))
    sensor, reasoner = scripts(tmp_path)
    args = ["probe", "run", "--instances", str(instances), "--sensor", sensor]
    args += ["--reasoner", reasoner, "--strategies", "direct,bp", "--judge", "exact"]
    line = _refused(args, tmp_path / "run")
    assert line == (
        f"error: duplicate instance id 'g1': given in {instances} row 1 and again in "
        f"{instances} row 3 (ids must be unique)"
    )


def test_a_dataset_loader_refuses_a_repeated_question_id(tmp_path: Path) -> None:
    rows = [
        {"question_id": "7", "question": "Q?", "choice_a": "x", "choice_b": "y", "answer": "A"},
        {"question_id": "7", "question": "R?", "choice_a": "x", "choice_b": "y", "answer": "B"},
    ]
    rows = [{**r, "image": "photo.png"} for r in rows]
    path = tmp_path / "seed.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(InputError, match=r"duplicate instance id 'seedbench/7': .* row 1 .* row 2"):
        load_instances(path, "seedbench")


def test_grounding_refuses_a_problem_id_given_twice(tmp_path: Path) -> None:
    from clearsight.grounding import GroundingConfig
    from clearsight.grounding.plan import load_problems

    one = tmp_path / "one.jsonl"
    one.write_text(
        json.dumps({"id": "p", "question": "1+1?", "answer": "2", "benchmark": "mine"})
        + "\n"
        + json.dumps({"id": "p", "question": "2+2?", "answer": "4", "benchmark": "mine"})
        + "\n"
    )
    config = GroundingConfig(n_problems=0, jsonl=(str(one),))
    with pytest.raises(InputError) as info:
        load_problems(config)
    assert str(info.value) == (
        f"duplicate problem id 'mine/p': given in {one} record 0 and again in {one} record 1 "
        "(ids must be unique)"
    )
    other = tmp_path / "other.jsonl"
    other.write_text(
        json.dumps({"id": "p", "question": "3+3?", "answer": "6", "benchmark": "mine"})
    )
    one.write_text(json.dumps({"id": "p", "question": "1+1?", "answer": "2", "benchmark": "mine"}))
    config = GroundingConfig(n_problems=0, jsonl=(str(one), str(other)))
    with pytest.raises(InputError, match=rf"'mine/p': given in {one} and again in {other} "):
        load_problems(config)


# --------------------------------------------------------------------------------------------
# Numbers finite and in their domain; per-model maps naming models of the run

SWEEP = ["sweep", "--scene-ids", "skimage-chelsea", "--arms", "water", "--controls", "clean"]


@pytest.mark.parametrize(
    ("yaml", "message"),
    [
        ("levels_m: [250, .nan, 1.0]", "levels_m.1: Input should be a finite number (got nan)"),
        ("levels_m: [.inf, 1.0]", "levels_m.0: Input should be a finite number (got inf)"),
        (
            "wavelengths_nm: [-650, 525, 450]",
            "wavelengths [-650.0, 525.0, 450.0] nm outside the pope_fry_1997 table (380-727.5 nm)",
        ),
        (
            "water_table: smith_baker_1981\nwavelengths_nm: [850, 525, 450]",
            "wavelengths [850.0, 525.0, 450.0] nm outside the smith_baker_1981 table (200-800 nm)",
        ),
        ("airlight: .nan", "airlight: Input should be a finite number (got nan)"),
        (
            "imagenet_c_severities: [0, 3]",
            "imagenet_c_severities: must be distinct severities 1..5 (got [0, 3])",
        ),
        (
            "observer: {slope: .inf}",
            "observer.slope: Input should be a finite number (got inf)",
        ),
        (
            "model_options: {obsrever: {batch_size: 4}}",
            "model_options names 'obsrever', not a model of the run (observer)",
        ),
    ],
    ids=[
        "nan-level",
        "inf-level",
        "negative-wavelength",
        "beyond-table",
        "nan-airlight",
        "severity",
        "inf-slope",
        "model-options-typo",
    ],
)
def test_a_bad_sweep_number_or_option_is_one_line_before_the_run(
    tmp_path: Path, yaml: str, message: str
) -> None:
    config = tmp_path / "sweep.yaml"
    config.write_text(yaml + "\n")
    line = _refused([*SWEEP, "--config", str(config)], tmp_path / "run")
    assert line == f"error: invalid sweep config in {config}: {message}"


def test_reasoner_options_must_name_a_reasoner_of_the_run(tmp_path: Path) -> None:
    sensor, reasoner = scripts(tmp_path)
    config = tmp_path / "probe.yaml"
    config.write_text(
        f"sensor: '{sensor}'\nreasoners: ['{reasoner}']\n"
        "reasoner_options: {'hf:smollm2-135m': {batch_size: 4}}\n"
    )
    line = _refused(["probe", "run", "--config", str(config)], tmp_path / "run")
    assert "reasoner_options names 'hf:smollm2-135m', not a model of the run" in line


@pytest.mark.parametrize("ratios", [(0.0, float("nan")), (0.0, 1.5), (0.5, 0.5)])
def test_grounding_mask_ratios_are_distinct_shares(ratios: tuple[float, ...]) -> None:
    from clearsight.grounding import GroundingConfig

    with pytest.raises(ValidationError, match="mask_ratios"):
        GroundingConfig(mask_ratios=ratios)


def test_probe_numbers_are_finite() -> None:
    from clearsight.probe.config import ProbeConfig

    with pytest.raises(ValidationError, match="finite"):
        ProbeConfig(temperature=float("inf"))
    with pytest.raises(ValidationError, match="finite"):
        ProbeConfig(uot={"sharpness": float("nan")})


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--scene-ids", "skimage-chelsea,skimage-chelsea"],
            "scene_ids names 'skimage-chelsea' twice",
        ),
        (["--model", "observer", "--model", "observer"], "models names 'observer' twice"),
    ],
)
def test_a_scene_or_model_named_twice_is_refused(
    tmp_path: Path, flags: list[str], message: str
) -> None:
    line = _refused(["sweep", "--arms", "fog", *flags], tmp_path / "run")
    assert message in line
