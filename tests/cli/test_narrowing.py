"""A published design narrows from the command line (issue 49): a flag or ``--set`` replaces
the file's value of a field, mappings included; ``none`` (or ``null``) clears a mapping;
narrowing ``wordings`` drops the ``wording_scenes`` entries it no longer asks, with a note; an
error names where each bad field came from (the flag, ``--set``, the file)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from clearsight.cli import app
from clearsight.config import load_config, parse_assignment
from clearsight.grounding.config import GroundingConfig

runner = CliRunner()
DESIGN = Path(__file__).parents[2] / "examples" / "sweep-coco-hf.yaml"
VERBAL = {"verbal.plain": 300, "verbal.percent": 300, "verbal.scale": 300}


def _show(*args: str) -> tuple[dict[str, Any], str]:
    """The configuration ``clearsight sweep --config DESIGN ARGS --show-config`` resolves, and
    what it printed on stderr."""
    result = runner.invoke(app, ["sweep", "--config", str(DESIGN), *args, "--show-config"])
    assert result.exit_code == 0, result.output
    return yaml.safe_load(result.stdout), result.stderr


def test_the_published_design_holds_the_verbal_wording_scenes() -> None:
    shown, _ = _show()
    assert shown["wording_scenes"] == VERBAL


@pytest.mark.parametrize(
    "args",
    [
        ["--wording-scenes", "none"],
        ["--wording-scenes", "{}"],
        ["--set", "wording_scenes={}"],
        ["--set", "wording_scenes=null"],
    ],
)
def test_none_and_an_empty_mapping_clear_the_files_mapping(args: list[str]) -> None:
    shown, _ = _show(*args)
    assert shown.get("wording_scenes", {}) == {}


def test_a_flags_mapping_replaces_the_files() -> None:
    shown, _ = _show("--wording-scenes", "{verbal.plain: 5}")
    assert shown["wording_scenes"] == {"verbal.plain": 5}
    shown, _ = _show("--set", "wording_scenes={verbal.scale: 7}")
    assert shown["wording_scenes"] == {"verbal.scale": 7}


def test_narrowing_the_wordings_drops_the_wording_scenes_they_no_longer_ask() -> None:
    shown, said = _show("--wordings", "mcq.reason,mcq.generic")
    assert shown["wordings"] == ["mcq.reason", "mcq.generic"]
    assert shown.get("wording_scenes", {}) == {}
    assert "wording_scenes entries dropped (verbal.plain, verbal.percent, verbal.scale)" in said
    shown, said = _show("--set", "wordings=[mcq.reason, verbal.plain]")
    assert shown["wording_scenes"] == {"verbal.plain": 300}
    assert "verbal.percent, verbal.scale" in said


def test_wording_scenes_given_beside_the_wordings_are_kept_as_given() -> None:
    args = ["--wordings", "mcq.reason", "--wording-scenes", "{verbal.plain: 3}"]
    result = runner.invoke(app, ["sweep", "--config", str(DESIGN), *args, "--show-config"])
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "error: invalid sweep config: wording_scenes names ['verbal.plain'], not in wordings "
        "(wordings from --wordings, wording_scenes from --wording-scenes)"
    )


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (
            ["--arms", "smoke"],
            "arms.0: Input should be 'fog', 'water' or 'turbid' (got 'smoke') (arms from --arms)",
        ),
        (["--set", "seed=x"], "(seed from --set seed=x)"),
    ],
)
def test_an_error_names_the_option_a_bad_value_came_from(args: list[str], says: str) -> None:
    result = runner.invoke(app, ["sweep", "--config", str(DESIGN), *args, "--show-config"])
    assert result.exit_code == 2
    line = result.stderr.strip()
    assert line.startswith("error: invalid sweep config: ")
    assert says in line
    assert str(DESIGN) not in line  # the file did not give the bad value


def test_a_bad_value_in_the_file_still_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("arms: [smoke]\n")
    result = runner.invoke(app, ["sweep", "--config", str(path), "--seed", "2", "--show-config"])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: invalid sweep config in {path}: arms.0: ")
    assert "from --seed" not in result.stderr  # the flag given is not blamed


_KEYS = st.sampled_from(["batch_size", "device", "dtype", "max_new_tokens", "x"])
_VALUES = st.one_of(st.integers(-5, 64), st.sampled_from(["cpu", "cuda", "auto"]))
_OPTIONS = st.dictionaries(_KEYS, _VALUES, max_size=4)


@settings(max_examples=60, deadline=None)
@given(file=_OPTIONS, flag=_OPTIONS, key=_KEYS, value=_VALUES)
def test_a_whole_field_assignment_replaces_and_a_dotted_one_sets_one_key(
    file: dict[str, Any], flag: dict[str, Any], key: str, value: Any
) -> None:
    base = {"model_options": file}
    replaced = load_config(None, GroundingConfig, base, [(("model_options",), flag)])
    assert replaced.model_options == flag
    dotted = load_config(None, GroundingConfig, base, [(("model_options", key), value)])
    assert dotted.model_options == {**file, key: value}
    text = yaml.safe_dump(flag, default_flow_style=True).strip()
    parsed = load_config(None, GroundingConfig, base, [parse_assignment(f"model_options={text}")])
    assert parsed.model_options == flag
