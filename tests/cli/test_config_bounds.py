"""Issue 30, finding 8 and the config part of 15: a ``--config`` file is read within bounds.
A nine-line alias bomb is refused in milliseconds and deep nesting is one line (not a
``RecursionError``), both before anything walks the tree; a file that is UTF-16 or binary
garbage is one error line. Whatever the text, the loader returns a value or raises a YAML
error, and what it returns is what PyYAML's safe loader returns."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from clearsight.cli import app
from clearsight.config import load_config
from clearsight.sweep.config import SweepConfig
from clearsight.validate import InputError

runner = CliRunner()


def _bomb() -> str:
    """The nine-line "billion laughs": 9**9 strings once its aliases are expanded."""
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [{', '.join([f'*{prev}'] * 9)}]")
    return "\n".join(lines) + "\n"


def _one_error_line(args: list[str]) -> str:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith("error: "), result.output
    assert "Traceback" not in result.output
    return lines[0]


def test_an_alias_bomb_is_refused_in_milliseconds(tmp_path: Path) -> None:
    config = tmp_path / "bomb.yaml"
    config.write_text(_bomb())
    assert len(config.read_text().splitlines()) == 9
    started = time.perf_counter()
    with pytest.raises(InputError, match="aliases expand to more than 10000 nodes") as info:
        load_config(config, SweepConfig)
    elapsed_ms = 1000 * (time.perf_counter() - started)
    print(f"yaml_alias_bomb_refused_ms: {elapsed_ms:.1f}")
    assert elapsed_ms < 500
    assert str(info.value).startswith(f"invalid sweep config in {config}: not valid YAML: line ")


def test_a_few_aliases_still_load(tmp_path: Path) -> None:
    config = tmp_path / "reuse.yaml"
    config.write_text("seed: 3\narms: &a [fog]\ncontrols: [clean]\ntasks: [identify]\n")
    assert load_config(config, SweepConfig).seed == 3
    text = "x: &x {a: 1, b: [1, 2]}\ny: *x\nz: [*x, *x]\n"
    from clearsight.config import load_yaml

    assert load_yaml(text) == yaml.safe_load(text)


@pytest.mark.parametrize(
    "text",
    [
        "seed: " + "[" * 20_000 + "]" * 20_000,
        "seed: " + "{a: " * 5_000 + "1" + "}" * 5_000,
        "seed:\n" + "".join(f"{'  ' * (i + 1)}k{i}:\n" for i in range(300)),
    ],
    ids=["flow-lists", "flow-mappings", "block-mappings"],
)
def test_deep_nesting_is_one_error_line(tmp_path: Path, text: str) -> None:
    config = tmp_path / "deep.yaml"
    config.write_text(text)
    line = _one_error_line(["sweep", "--config", str(config), "--out", str(tmp_path / "run")])
    assert "collections nested more than 100 deep" in line
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("data", "why"),
    [
        ("seed: 1\n".encode("utf-16"), "the file is UTF-16 text: save it as UTF-8"),
        (bytes(range(256)) * 4, "not UTF-8 text (byte 0x80 at offset 128)"),
        (b"seed: 1\nwhat: \xff\xfe\n", "not UTF-8 text (byte 0xff at offset 14)"),
        (b"seed: 2001-02-30\n", "line 1, column 7: cannot read the value: day is out of range"),
    ],
    ids=["utf-16", "binary", "latin-1", "bad-date"],
)
def test_a_config_that_is_not_yaml_text_is_one_error_line(
    tmp_path: Path, data: bytes, why: str
) -> None:
    config = tmp_path / "sweep.yaml"
    config.write_bytes(data)
    line = _one_error_line(["sweep", "--config", str(config), "--out", str(tmp_path / "run")])
    assert line.startswith(f"error: invalid sweep config in {config}: ")
    assert why in line
    assert not (tmp_path / "run").exists()


_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(st.characters(exclude_categories=("Cs",)), max_size=20)
)
_DATA = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=30,
)


@settings(max_examples=150, deadline=None)
@given(_DATA)
def test_what_pyyaml_writes_reads_back_the_same(data: Any) -> None:
    from clearsight.config import load_yaml

    assert _same(load_yaml(yaml.safe_dump(data)), data)


def _same(a: Any, b: Any) -> bool:
    """Equal, a NaN-free float compared exactly (YAML keeps every float's repr)."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isinf(a) and a == b)
    return bool(a == b)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab:-[]{},&*!#|>'\" \n\t?0123456789.e")), max_size=80))
def test_any_text_loads_or_is_a_yaml_error(text: str) -> None:
    from clearsight.config import load_yaml

    try:
        got = load_yaml(text)
    except yaml.YAMLError:
        return
    assert _same_tree(got, yaml.safe_load(text))


def _same_tree(a: Any, b: Any) -> bool:
    """Equal as trees (NaN equal to NaN)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same_tree(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_tree(a[k], b[k]) for k in a)
    return bool(a == b)


def test_a_scripted_model_file_is_read_within_the_same_bounds(tmp_path: Path) -> None:
    """A scripted backend's YAML script is a user's file too: the alias bomb is refused as a
    one-line input error, in milliseconds, before any entry is read."""
    from clearsight.models.scripted import make_scripted

    script = tmp_path / "script.yaml"
    script.write_text(_bomb())
    started = time.perf_counter()
    with pytest.raises(InputError, match=r"invalid YAML in .*aliases expand to more than 10000"):
        make_scripted(str(script), {})
    assert time.perf_counter() - started < 0.5
