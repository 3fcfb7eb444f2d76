"""Properties of the one configuration loader, :func:`clearsight.config.load_config`: the YAML
file's fields with the given flags laid over them, every problem one :class:`InputError` line
naming each bad field, and a key no configuration knows refused by name."""

from __future__ import annotations

import keyword
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from clearsight.config import load_config
from clearsight.grounding import GroundingConfig
from clearsight.probe.bench.protocol import BuildConfig
from clearsight.probe.config import ProbeConfig
from clearsight.sweep.config import SweepConfig
from clearsight.validate import InputError


def _subsets(*values: str) -> Any:
    return st.lists(st.sampled_from(values), min_size=1, max_size=len(values), unique=True)


#: Per configuration, a strategy of valid values for some of its fields (as YAML writes them).
VALID: dict[type[BaseModel], dict[str, Any]] = {
    SweepConfig: {
        "scenes": st.sampled_from(["bundled", "coco"]),
        "arms": _subsets("fog", "water"),
        "tasks": _subsets("identify", "verify"),
        "coco_n": st.integers(1, 10_000),
        "airlight": st.floats(0, 1),
        "box_thickness_px": st.integers(1, 40),
        "seed": st.integers(-(2**31), 2**31),
    },
    ProbeConfig: {
        "strategies": _subsets("direct", "react", "uot", "bp"),
        "sensor": st.sampled_from(["perceiver", "observer", "hf:smollm2-135m"]),
        "k": st.integers(1, 50),
        "runs": st.integers(1, 50),
        "budget": st.integers(1, 1000),
        "temperature": st.floats(0, 4),
        "seed": st.integers(0, 99),
    },
    GroundingConfig: {
        "model": st.sampled_from(["hf:smollm2-135m", "hf:/models/x"]),
        "n_problems": st.integers(0, 500),
        "variation": st.booleans(),
        "hesitation": st.booleans(),
        "n_boot": st.integers(100, 10_000),
        "seed": st.integers(0, 99),
    },
    BuildConfig: {
        "stage": st.sampled_from([1, 2]),
        # a file source is read when the config is (its loader inferred): tests/cli/test_sources.py
        "instances": st.just("bundled"),
        "sensor": st.sampled_from(["perceiver", "observer"]),
        "samples": st.integers(1, 50),
    },
}

#: Per configuration, values its fields refuse.
INVALID: dict[type[BaseModel], dict[str, Any]] = {
    SweepConfig: {
        "arms": st.just(["smoke"]),
        "coco_n": st.integers(max_value=0),
        "airlight": st.floats(1.01, 9),
        "box_thickness_px": st.integers(max_value=0),
        "seed": st.sampled_from(["abc", "1.5x"]),
    },
    ProbeConfig: {
        "k": st.integers(51, 500),
        "runs": st.integers(max_value=0),
        "strategies": st.just(["guess"]),
    },
    GroundingConfig: {"n_problems": st.integers(max_value=-1), "n_boot": st.integers(0, 99)},
    BuildConfig: {"stage": st.integers(3, 9), "samples": st.integers(max_value=0)},
}

#: What each configuration is called in its errors.
WHAT = {
    SweepConfig: "sweep config",
    ProbeConfig: "probe config",
    GroundingConfig: "grounding config",
    BuildConfig: "build config",
}

MODELS = list(VALID)
SETTINGS = settings(max_examples=60, deadline=None)


@st.composite
def _file_and_flags(draw: Any, model: type[BaseModel]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Some fields in the file, some given as flags (None: a flag not given)."""
    fields = VALID[model]
    in_file = draw(st.lists(st.sampled_from(sorted(fields)), unique=True))
    flagged = draw(st.lists(st.sampled_from(sorted(fields)), unique=True))
    file = {name: draw(fields[name]) for name in in_file}
    flags: dict[str, Any] = dict.fromkeys(fields)
    flags.update({name: draw(fields[name]) for name in flagged})
    return file, flags


def _write(tmp_path: Path, fields: dict[str, Any]) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(fields))
    return path


def _json(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_flags_overlay_exactly_the_fields_they_give(tmp_path: Path, model: type[BaseModel]) -> None:
    @SETTINGS
    @given(_file_and_flags(model))
    def check(case: tuple[dict[str, Any], dict[str, Any]]) -> None:
        file, flags = case
        got = load_config(_write(tmp_path, file), model, flags)
        default = model()
        for name in model.model_fields:
            if flags.get(name) is not None:
                want = flags[name]
            elif name in file:
                want = file[name]
            else:
                want = _json(getattr(default, name))
            assert _json(getattr(got, name)) == want, name

    check()


@st.composite
def _bad_fields(draw: Any, model: type[BaseModel]) -> dict[str, Any]:
    names = draw(st.lists(st.sampled_from(sorted(INVALID[model])), min_size=1, unique=True))
    return {name: draw(INVALID[model][name]) for name in names}


def _problems(message: str, prefix: str) -> list[str]:
    assert message.startswith(prefix), message
    assert "\n" not in message
    return message.removeprefix(prefix).split("; ")


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
@pytest.mark.parametrize("where", ["file", "flags"])
def test_invalid_values_are_one_line_naming_every_bad_field(
    tmp_path: Path, model: type[BaseModel], where: str
) -> None:
    @SETTINGS
    @given(_bad_fields(model))
    def check(bad: dict[str, Any]) -> None:
        path = _write(tmp_path, bad if where == "file" else {})
        with pytest.raises(InputError) as info:
            load_config(path, model, bad if where == "flags" else {})
        problems = _problems(str(info.value), f"invalid {WHAT[model]} in {path}: ")
        assert len(problems) == len(bad)
        named = {p.split(":")[0].split(".")[0] for p in problems}
        assert named == set(bad)
        for problem in problems:
            assert " (got " in problem, problem

    check()


_KEYS = st.from_regex(r"[a-z][a-z0-9_]{0,14}", fullmatch=True).filter(
    lambda k: not keyword.iskeyword(k)
)


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_unknown_keys_are_refused_by_name(tmp_path: Path, model: type[BaseModel]) -> None:
    keys = _KEYS.filter(lambda k: k not in model.model_fields)

    @SETTINGS
    @given(st.dictionaries(keys, st.integers() | st.text(max_size=5), min_size=1, max_size=4))
    def check(unknown: dict[str, Any]) -> None:
        path = _write(tmp_path, unknown)
        with pytest.raises(InputError) as info:
            load_config(path, model)
        problems = _problems(str(info.value), f"invalid {WHAT[model]} in {path}: ")
        assert sorted(problems) == sorted(f"{key}: unknown field" for key in unknown)

    check()
