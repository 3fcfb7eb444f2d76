"""Properties of ``--set FIELD=VALUE`` (:func:`clearsight.config.parse_assignment`) and of laying
assignments over a configuration (:func:`clearsight.config.load_config`): a dotted path and a
YAML value read back exactly what was written, every malformed text is one InputError naming
it, and an assignment sets its field and nothing else."""

from __future__ import annotations

import keyword
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from clearsight.config import load_config, parse_assignment
from clearsight.grounding import GroundingConfig
from clearsight.probe import ProbeConfig
from clearsight.sweep import SweepConfig
from clearsight.validate import InputError

SETTINGS = settings(max_examples=150, deadline=None)

_NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,12}", fullmatch=True).filter(
    lambda k: not keyword.iskeyword(k)
)
_PATHS = st.lists(_NAMES, min_size=1, max_size=4).map(tuple)
_SCALARS = (
    st.integers(-(10**9), 10**9)
    | st.floats(allow_nan=False, allow_infinity=False, width=64)
    | st.booleans()
    | st.none()
    | st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=12)
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_NAMES, inner, max_size=3),
    max_leaves=8,
)


def _yaml(value: Any) -> str:
    """``value`` on one line as YAML writes it (flow style)."""
    return yaml.safe_dump(value, default_flow_style=True, width=10**6).strip().removesuffix("...")


@SETTINGS
@given(_PATHS, _VALUES)
def test_a_dotted_path_and_a_yaml_value_read_back_exactly(
    path: tuple[str, ...], value: Any
) -> None:
    keys, parsed = parse_assignment(f"{'.'.join(path)}={_yaml(value)}")
    assert keys == path
    assert parsed == value


@SETTINGS
@given(_PATHS, st.text(max_size=30))
def test_the_value_is_everything_after_the_first_equals_sign(
    path: tuple[str, ...], text: str
) -> None:
    """A value holding ``=`` (a URL's query, an expression) is the value, not a second field."""
    try:
        expected = yaml.safe_load(f"x{text}")  # what YAML makes of it, with a safe prefix
    except yaml.YAMLError:
        expected = None
    if expected is None:
        return
    keys, parsed = parse_assignment(f"{'.'.join(path)}=x{text}")
    assert keys == path
    assert parsed == expected


@SETTINGS
@given(st.text(max_size=40))
def test_any_text_is_an_assignment_or_one_input_error_naming_it(text: str) -> None:
    try:
        keys, _ = parse_assignment(text)
    except InputError as exc:
        message = str(exc)
        assert message.startswith(f"--set {text!r}: "), message
        return
    assert "=" in text
    assert keys
    assert all(keys)
    assert ".".join(keys) == ".".join(k.strip() for k in text.partition("=")[0].split("."))


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("seed", "give FIELD=VALUE"),
        ("=3", "is not a field path"),
        ("uot..depth=2", "is not a field path"),
        ("seed.=2", "is not a field path"),
        ("arms=[fog", "the value is not valid YAML: line 1"),
        ("arms={a: [}", "the value is not valid YAML"),
    ],
)
def test_malformed_assignments_say_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(InputError) as info:
        parse_assignment(text)
    assert str(info.value).startswith(f"--set {text!r}: ")
    assert says in str(info.value)
    assert "\n" not in " ".join(str(info.value).split())


#: Per configuration, fields and values an assignment may give them (as YAML writes them).
FIELDS: dict[type[Any], dict[str, Any]] = {
    SweepConfig: {
        "seed": st.integers(-(2**31), 2**31),
        "arms": st.sampled_from([["fog"], ["water"], ["fog", "water"]]),
        "airlight": st.floats(0, 1),
        "coco_n": st.integers(1, 10_000),
        "scene_ids": st.none() | st.just(["skimage-chelsea"]),
    },
    ProbeConfig: {
        "k": st.integers(1, 50),
        "runs": st.integers(1, 50),
        "uot.depth": st.integers(1, 3),
        "uot.candidates": st.integers(1, 4),
        "sensor_options.device": st.sampled_from(["cpu", "cuda"]),
    },
    GroundingConfig: {
        "n_problems": st.integers(0, 500),
        "variation": st.booleans(),
        "model_options.batch_size": st.integers(1, 64),
        "model_options.device": st.sampled_from(["cpu", "cuda"]),
        "generator": st.none() | st.just("hf:smollm2-135m"),
    },
}


def _at(config: Any, path: str) -> Any:
    value = config
    for key in path.split("."):
        value = value[key] if isinstance(value, dict) else getattr(value, key)
    return value


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


@pytest.mark.parametrize("model", list(FIELDS), ids=lambda m: m.__name__)
def test_assignments_set_their_fields_and_nothing_else(model: type[Any]) -> None:
    fields = FIELDS[model]

    @SETTINGS
    @given(st.data())
    def check(data: st.DataObject) -> None:
        chosen = data.draw(st.lists(st.sampled_from(sorted(fields)), min_size=1, unique=True))
        given_values = {path: data.draw(fields[path]) for path in chosen}
        texts = [f"{path}={_yaml(value)}" for path, value in given_values.items()]
        got = load_config(None, model, None, [parse_assignment(t) for t in texts])
        default = model()
        for path, value in given_values.items():
            assert _plain(_at(got, path)) == value, path
        untouched = set(model.model_fields) - {p.split(".")[0] for p in chosen}
        for name in untouched:
            assert getattr(got, name) == getattr(default, name), name
        # a nested field set alone keeps the defaults of its siblings
        if "model_options.device" in given_values and "model_options.batch_size" not in chosen:
            assert got.model_options["batch_size"] == default.model_options["batch_size"]

    check()


def test_later_assignments_win_and_a_mapping_sets_only_its_keys(tmp_path: Path) -> None:
    config = tmp_path / "g.yaml"
    config.write_text("model_options: {batch_size: 4, device: cpu}\nseed: 1\n")
    texts = ["seed=2", "seed=3", "model_options={batch_size: 8}", "judge=hf:x"]
    got = load_config(config, GroundingConfig, None, [parse_assignment(t) for t in texts])
    assert (got.seed, got.judge) == (3, "hf:x")
    assert got.model_options == {"batch_size": 8, "device": "cpu"}


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("armz=[fog]", "armz: unknown field"),
        ("seed=x", "seed: Input should be a valid integer"),
        ("arms=[smoke]", "arms.0: Input should be 'fog', 'water' or 'turbid' (got 'smoke')"),
        ("observer.nope=1", "observer.nope: unknown field"),
    ],
)
def test_a_bad_field_or_value_is_one_line_naming_the_field(text: str, problem: str) -> None:
    with pytest.raises(InputError) as info:
        load_config(None, SweepConfig, None, [parse_assignment(text)])
    assert str(info.value).startswith("invalid sweep config: ")
    assert problem in str(info.value)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 20_000), st.sampled_from(["1", "{a: 1}", "[x]"]))
def test_a_field_path_of_any_depth_is_set_or_one_input_error(depth: int, value: str) -> None:
    """A dotted path nests as deep as a configuration file may (``MAX_DEPTH``) or is refused in
    one line naming it: a path of thousands of names was a RecursionError traceback."""
    from clearsight.config import MAX_DEPTH

    text = ".".join(["uot"] * depth) + f"={value}"
    if depth > MAX_DEPTH:
        with pytest.raises(InputError) as err:
            parse_assignment(text)
        assert str(err.value).startswith("--set 'uot.uot.uot.")
        assert f"nests {depth} names deep, at most {MAX_DEPTH}" in str(err.value)
        assert len(str(err.value)) < 300
        return
    keys, _ = parse_assignment(text)
    assert len(keys) == depth
    with pytest.raises(InputError):  # set, then refused by the configuration's own checks
        load_config(None, ProbeConfig, assignments=[(keys, yaml.safe_load(value))])


def test_a_very_deep_set_on_the_command_line_is_one_error_line(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from clearsight.cli import app

    deep = ".".join(["uot"] * 5000) + "=1"
    result = CliRunner().invoke(app, ["probe", "run", "--set", deep, "--out", str(tmp_path / "r")])
    assert result.exit_code == 2, result.output
    (line,) = result.output.strip().splitlines()
    assert line.startswith("error: --set 'uot.uot.")
    assert "Traceback" not in result.output
    assert not (tmp_path / "r").exists()
