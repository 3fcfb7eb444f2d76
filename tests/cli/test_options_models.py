"""The commands whose options moved onto the generated path (``preview``, ``equivalence``,
``guard calibrate``, ``probe judges``, ``probe query-types``, ``export``, ``push``: issue 42,
typer.Option <= 30) keep their defaults and refuse bad input with one error line; every
generated command's summary in its group's listing is one reflowed paragraph."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from clearsight.cli import app
from clearsight.cli.generate import ConfigCommand

runner = CliRunner()
WIDE = {"COLUMNS": "250", "TERM": "dumb"}

#: Each moved command's options and the defaults its help showed before the move.
DEFAULTS = {
    "preview": {"--target": "0", "--seed": "0"},
    "equivalence": {"--seed": "0", "--plasma": "independent"},
    "guard calibrate": {
        "--split-seed": "0",
        "--calibration-share": "0.5",
        "--scale": "estimate",
    },
    "probe judges": {"--a": "embedding", "--b": "llm:hf:smollm2-135m"},
    "probe query-types": {"--judge": "hf:smollm2-135m", "--readout": "judge"},
    "export": {"--n-boot": "1000", "--seed": "0", "--images": "64"},
    "push": {"--n-boot": "1000", "--seed": "0", "--images": "64", "--pr": "--no-pr"},
}


@pytest.mark.parametrize("spelling", list(DEFAULTS))
def test_a_moved_command_keeps_each_default(spelling: str) -> None:
    shown = runner.invoke(app, [*spelling.split(), "--help"], env=WIDE)
    assert shown.exit_code == 0, shown.output
    blocks: dict[str, str] = {}  # each option's help, its wrapped lines joined
    flag = ""
    for line in shown.output.splitlines():
        if line.strip().startswith("--"):
            flag = line.split()[0]
            blocks[flag] = line.strip()
        elif flag and line.startswith("   ") and line.strip():
            blocks[flag] += " " + line.strip()
        else:
            flag = ""
    for flag, default in DEFAULTS[spelling].items():
        assert blocks[flag].endswith(f"Default: {default}."), blocks[flag]


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["guard", "calibrate", "RUN"], "model"),
        (["probe", "query-types", "RUN"], "human_labels"),
        (["equivalence", "--plasma", "cloudy"], "plasma"),
        (["preview", "skimage-coffee", "--target", "one"], "target"),
        (["export", "RUN", "--format", "eee", "--n-boot", "99"], "n_boot"),
        (["push", "RUN", "--hub", "me/details", "--images", "-1"], "images"),
        (["export", "RUN"], "format"),
    ],
)
def test_bad_or_missing_options_are_one_error_line(
    args: list[str], field: str, tmp_path: Path
) -> None:
    out = tmp_path / "written.csv"
    result = runner.invoke(app, [*args, "--out", str(out)] if args[0] == "equivalence" else args)
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.output
    assert field in errors[0]
    assert not out.exists()


def _listed() -> list[ConfigCommand]:
    """The generated commands of the root, probe and guard groups."""
    from clearsight.cli import card, demo, export, fetch, guard, plan, probe, scenes, serve, verify

    return [
        *(card.CARD, plan.PLAN, serve.SERVE, fetch.FETCH, demo.DEMO, verify.VERIFY),
        *(verify.COMPARE, scenes.PREVIEW, scenes.EQUIVALENCE, guard.CALIBRATE, export.EXPORT),
        export.PUSH,
        *(probe.RUN, probe.BUILD, probe.ANALYSE, probe.DISTILL, probe.JUDGES, probe.QUERY_TYPES),
    ]


@pytest.mark.parametrize("command", _listed(), ids=lambda c: c.name)
def test_a_generated_commands_summary_is_its_first_paragraph_on_one_line(
    command: ConfigCommand,
) -> None:
    summary = command.summary_command().help
    first = (command.body.__doc__ or "").split("\n\n")[0]
    assert summary.split("\n\n")[0] == " ".join(first.split())
