"""The command line generated from the configuration models (issue 32, step 3): every field of
every generated command is an option with its description; a field added to a model appears
with no CLI edit; the documented spellings (aliases, the bare protocol group) give the same
configuration as ``--set``; a moved command says where it went; ``--help`` imports no model
until a command is asked for, and never torch or numba."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
import yaml
from pydantic import Field
from typer.testing import CliRunner

from clearsight.cli import app
from clearsight.cli.fields import config_fields
from clearsight.cli.generate import Alias, ConfigCommand, command_group
from clearsight.sweep import SweepConfig, plan_sweep

runner = CliRunner()
WIDE = {"COLUMNS": "250", "TERM": "dumb"}


def _generated() -> dict[str, ConfigCommand]:
    """Every generated command of the command line, by its spelling."""
    from clearsight.cli import card, export, fetch, grounding, guard, probe, scenes, serve, sweep

    out = {"card": card.CARD, "serve": serve.SERVE, "fetch": fetch.FETCH}
    out.update({"preview": scenes.PREVIEW, "equivalence": scenes.EQUIVALENCE})
    out["guard calibrate"] = guard.CALIBRATE
    out.update({"probe judges": probe.JUDGES, "probe query-types": probe.QUERY_TYPES})
    out["probe draw"] = probe.DRAW
    out.update({"export": export.EXPORT, "push": export.PUSH})
    out.update({f"sweep {c}": sweep.RUN for c in ("run",)})
    out.update({"grounding run": grounding.RUN, "grounding build-bench": grounding.BUILD_BENCH})
    out.update({f"probe {c.name}": c for c in (probe.RUN, probe.BUILD, probe.ANALYSE)})
    out["probe distill"] = probe.DISTILL
    return out


@pytest.mark.parametrize("spelling", list(_generated()))
def test_help_lists_every_field_with_its_description(spelling: str) -> None:
    command = _generated()[spelling]
    result = runner.invoke(app, [*spelling.split(), "--help"], env=WIDE)
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    for name, field in config_fields(command.model()).items():
        flag = "--" + name.replace("_", "-")
        assert flag in result.output, (spelling, flag)
        words = " ".join(field.description.split())[:40]
        # the help wraps at 80 columns under the test runner, also after a hyphen
        assert _joined(words) in _joined(text), (spelling, name, words)
    for alias in command.aliases:
        assert alias.flag in result.output, (spelling, alias.flag)


def _joined(text: str) -> str:
    """``text`` as a comparison reads it: no brackets, no break after a hyphen."""
    return text.replace("[", "").replace("- ", "-")


class _Extended(SweepConfig):
    """The sweep's configuration with a field added."""

    haze_colour: str = Field("grey", description="Colour of the added haze, a new field.")


def _extended_app(seen: list[Any]) -> typer.Typer:
    """A command line with one generated command over :class:`_Extended`."""

    def body(config: _Extended) -> None:
        """Record the configuration."""
        seen.append(config)

    command = ConfigCommand("run", lambda: _Extended, body, aliases=(Alias("--n", "coco_n"),))
    extended = typer.Typer(cls=command_group(command), no_args_is_help=True)
    extended.callback()(lambda: None)  # a group of its own (typer wants a callback or commands)
    return extended


def test_a_field_added_to_a_model_appears_with_its_help_and_no_cli_edit() -> None:
    seen: list[Any] = []
    extended = _extended_app(seen)
    shown = runner.invoke(extended, ["run", "--help"], env=WIDE)
    assert shown.exit_code == 0, shown.output
    assert "--haze-colour" in shown.output
    assert "Colour of the added haze, a new field. Default: grey." in " ".join(shown.output.split())
    assert runner.invoke(extended, ["run", "--haze-colour", "red", "--n", "3"]).exit_code == 0
    assert runner.invoke(extended, ["run", "--set", "haze_colour=blue"]).exit_code == 0
    assert [(c.haze_colour, c.coco_n) for c in seen] == [("red", 3), ("blue", 1000)]


def _shown(args: list[str]) -> dict[str, Any]:
    """The configuration a command line resolves to (``--show-config``), run nothing."""
    result = runner.invoke(app, [*args, "--show-config"])
    assert result.exit_code == 0, result.output
    loaded: dict[str, Any] = yaml.safe_load(result.output)
    return loaded


#: Documented spellings and the --set spelling of the same configuration (shell words).
SAME = {
    "sweep": (
        "sweep --model observer --n 50 --arms fog --controls none",
        "sweep run --set 'models=[observer]' --set coco_n=50 --set 'arms=[fog]' "
        "--set 'controls=[]'",
    ),
    "sweep-lists": (
        "sweep run --scene-ids skimage-chelsea,skimage-coffee --wordings mcq.reason",
        "sweep run --scene-ids skimage-chelsea --scene-ids skimage-coffee "
        "--set 'wordings=[mcq.reason]'",
    ),
    "grounding": (
        "grounding --instances mine.jsonl --batch-size 2 --generator none --no-hesitation "
        "--readout ptrue",
        "grounding run --set 'jsonl=[mine.jsonl]' --set n_problems=0 "
        "--set model_options.batch_size=2 --set generator=null --set hesitation=false "
        "--set 'readouts=[ptrue]'",
    ),
    "grounding-bundled": (
        "grounding --instances bundled --instances mine.jsonl --bench b.jsonl",
        "grounding run --set 'jsonl=[mine.jsonl]' --set bench=b.jsonl",
    ),
    "grounding-bench": (
        "grounding --bench b.jsonl",
        "grounding run --set bench=b.jsonl --set n_problems=0",
    ),
    "probe": (
        "probe run --ids a,b --reasoner hf:x --uot-depth 2 --k 3",
        "probe --set 'instance_ids=[a, b]' --set 'reasoners=[hf:x]' --set 'uot={depth: 2}' "
        "--set k=3",
    ),
    "build-bench": (
        "grounding build-bench --out b.jsonl --n 4 --instances m.jsonl",
        "grounding build-bench --out b.jsonl --set n_problems=4 --set 'jsonl=[m.jsonl]'",
    ),
}


@pytest.mark.parametrize("case", list(SAME))
def test_documented_spellings_give_the_same_configuration_as_set(case: str) -> None:
    documented, with_set = SAME[case]
    assert _shown(shlex.split(documented)) == _shown(shlex.split(with_set))


def test_the_same_configuration_plans_the_same_items(tmp_path: Path) -> None:
    """A sweep given by its old flags and by --set plans the same items under the same keys."""
    config = tmp_path / "sweep.yaml"
    config.write_text(yaml.safe_dump({"levels_m": [250.0, 2.0], "imagenet_c_severities": [1]}))
    old = ["sweep", "--config", str(config), "--scene-ids", "skimage-chelsea,skimage-coffee"]
    old += ["--arms", "fog", "--tasks", "identify", "--wordings", "mcq.reason", "--seed", "3"]
    new = ["sweep", "run", "--config", str(config), "--set", "arms=[fog]", "--set", "seed=3"]
    new += ["--set", "scene_ids=[skimage-chelsea, skimage-coffee]", "--set", "tasks=[identify]"]
    new += ["--set", "wordings=[mcq.reason]"]
    plans = [plan_sweep(SweepConfig.model_validate(_shown(args))) for args in (old, new)]
    keys = [[item.key for item in plan.items] for plan in plans]
    assert keys[0] == keys[1]
    assert len(keys[0]) > 0


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["sweep", "run", "--set", "armz=[fog]"], "invalid sweep config: armz: unknown field"),
        (["sweep", "run", "--set", "seed=x"], "invalid sweep config: seed: Input should be"),
        (["sweep", "run", "--set", "seed"], "--set 'seed': give FIELD=VALUE"),
        (["sweep", "run", "--coco-n", "0"], "invalid sweep config: coco_n: Input should be"),
        (["grounding", "--readout", "ptrue", "--readouts", "vlcal"], "not both"),
        (["probe", "run", "--executor", "threads"], "'threads' is not one of serial, process"),
        (["build", "--out", "k.jsonl"], "`root build` is now `clearsight probe build`"),
        (["build-bench"], "`root build-bench` is now `clearsight grounding build-bench`"),
        (["probe", "report", "r"], "`root probe report` is now `clearsight report RUN`"),
    ],
)
def test_bad_input_and_moved_commands_are_one_line_exit_2(
    tmp_path: Path, args: list[str], says: str
) -> None:
    out = tmp_path / "run"
    result = runner.invoke(app, [*args, "--out", str(out)] if "run" in args else args)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith("error: "), result.output
    assert says in lines[0]
    assert not out.exists()


@pytest.mark.parametrize("group", ["sweep", "grounding", "probe", "guard", ""])
def test_a_group_given_nothing_prints_its_help_exit_2(group: str) -> None:
    result = runner.invoke(app, [group] if group else [])
    assert result.exit_code == 2
    assert "Usage:" in result.output
    assert "Commands" in result.output


HELPS = [
    [],
    ["sweep"],
    ["sweep", "run"],
    ["grounding"],
    ["grounding", "run"],
    ["grounding", "build-bench"],
    ["probe"],
    ["probe", "run"],
    ["probe", "build"],
    ["probe", "analyse"],
    ["probe", "distill"],
    ["report"],
    ["card"],
    ["serve"],
    ["fetch"],
    ["demo"],
]


def test_every_help_is_fast_and_imports_no_model_it_does_not_show() -> None:
    """Each ``--help`` in a fresh process: never torch or numba; the root's imports no
    configuration (its generated commands are listed by their summaries), a group's only its
    default command's (whose options it shows)."""
    code = f"""
import json, sys, time
from typer.testing import CliRunner
helps = {HELPS!r}
out = []
for args in helps:
    started = time.perf_counter()
    from clearsight.cli import app
    result = CliRunner().invoke(app, [*args, "--help"])
    out.append({{
        "args": args,
        "code": result.exit_code,
        "seconds": time.perf_counter() - started,
        "heavy": sorted(m for m in ("torch", "numba", "transformers") if m in sys.modules),
        "configs": sorted(m for m in sys.modules if m.endswith((".config", ".protocol"))
                          and m.startswith("clearsight.") and m != "clearsight.config"),
    }})
print(json.dumps(out))
"""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=600, check=True
    )
    results = json.loads(done.stdout.strip().splitlines()[-1])
    for entry in results:
        assert entry["code"] == 0, entry
        assert entry["heavy"] == [], entry
    # the root's help imports no configuration; the sweep group's only its default command's
    # (it shows that command's options: issue 49)
    assert results[0]["args"] == [], results[0]
    assert results[0]["configs"] == [], results[0]
    assert results[1]["args"] == ["sweep"], results[1]
    assert results[1]["configs"] == ["clearsight.sweep.config"], results[1]
