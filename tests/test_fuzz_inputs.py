"""Issue 15, fuzzing: every parser and loader that takes user input either parses it or raises
:class:`~clearsight.validate.InputError`, never another exception, and a refusal writes
nothing: config YAML, model names and options, instance rows (JSONL, JSON, Parquet), problem
files, scripted model files, the verbalized-confidence, letter and numeral parsers, and the
command line's refusal of a bad instance file. Examples are bounded (``SETTINGS``) so the file
runs in well under a minute."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from clearsight.cli import app
from clearsight.config import load_config
from clearsight.grounding import GroundingConfig
from clearsight.grounding.confidence.numerals import numeral_distribution
from clearsight.grounding.problems.problem import ANSWER_TYPES, load_jsonl, normalise_answer
from clearsight.models import load_backend, split_model_spec
from clearsight.models.hf_options import parse_options as parse_hf_options
from clearsight.models.openai_api import parse_model_spec
from clearsight.perceiver.options import parse_options as parse_perceiver_options
from clearsight.probe.bench.protocol import BuildConfig
from clearsight.probe.config import ProbeConfig
from clearsight.probe.instances import OWN_FIELDS
from clearsight.probe.reasoner.parsing import parse_action
from clearsight.probe.sources.layouts import LAYOUTS
from clearsight.probe.sources.load import instances_from_jsonl, load_instances
from clearsight.sweep.config import SweepConfig
from clearsight.sweep.readouts import parse_confidence, parse_verbalized
from clearsight.validate import InputError

#: 100 examples a property, no deadline (the first example pays for imports).
SETTINGS = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
runner = CliRunner()

_SCALAR = (
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
)
JSON = st.recursive(
    _SCALAR,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
#: The field names the instance loaders read, so rows reach past the first check.
_ROW_FIELDS = sorted(
    {*OWN_FIELDS, "answer", "choices", "category", "dataset"}
    | {name for layout in LAYOUTS.values() for name in (*layout.id, *layout.question)}
    | {name for layout in LAYOUTS.values() for name in (*layout.answer, *layout.options)}
    | {name for layout in LAYOUTS.values() for name in layout.option_columns}
)
ROW = st.dictionaries(st.sampled_from(_ROW_FIELDS), JSON, max_size=8)
#: Lines of a JSON file: mostly rows, sometimes any JSON value or no JSON at all.
LINE = ROW.map(json.dumps) | JSON.map(json.dumps) | st.text(max_size=30)


def parses_or_refuses(parse: Callable[..., Any], *args: Any) -> bool:
    """Whether ``parse(*args)`` parsed (True) or raised InputError (False); any other
    exception propagates and fails the property."""
    try:
        parse(*args)
    except InputError:
        return False
    return True


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


# ------------------------------------------------------------------------------- configs


@pytest.mark.parametrize("model", [SweepConfig, ProbeConfig, GroundingConfig, BuildConfig])
def test_any_config_yaml_loads_or_is_an_input_error(tmp_path: Path, model: type[Any]) -> None:
    fields = st.dictionaries(st.sampled_from(sorted(model.model_fields)), JSON, max_size=4)
    text = fields.map(yaml.safe_dump) | JSON.map(yaml.safe_dump) | st.text(max_size=40)

    @SETTINGS
    @given(text)
    def check(content: str) -> None:
        path = tmp_path / "config.yaml"
        path.write_text(content)
        parses_or_refuses(load_config, path, model)

    check()


# -------------------------------------------------------------------------- model names


@SETTINGS
@given(st.text(max_size=30))
def test_any_model_name_parses_or_is_an_input_error(name: str) -> None:
    parses_or_refuses(split_model_spec, name)
    parses_or_refuses(parse_model_spec, name)


@SETTINGS
@given(st.dictionaries(st.text(max_size=16), JSON, max_size=4))
def test_any_backend_options_parse_or_are_an_input_error(options: dict[str, Any]) -> None:
    parses_or_refuses(parse_hf_options, options)
    parses_or_refuses(parse_perceiver_options, options)
    parses_or_refuses(load_backend, "openai:http://127.0.0.1:9/v1#m", options)  # no request


# ----------------------------------------------------------------------- instance files


@SETTINGS
@given(st.lists(LINE, max_size=4), st.sampled_from([".jsonl", ".json", ".txt", ""]))
def test_any_instance_file_loads_or_is_an_input_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lines: list[str], suffix: str
) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("CLEARSIGHT_CACHE", str(cache))
    path = tmp_path / f"rows{suffix}"
    path.write_text("\n".join(lines))
    parses_or_refuses(instances_from_jsonl, path)
    for dataset in LAYOUTS:
        parses_or_refuses(load_instances, path, dataset)
    parses_or_refuses(load_config, None, ProbeConfig, {"instances": str(path)})  # inferred
    assert _files(cache) == []  # JSON rows hold no image bytes to cache


@SETTINGS
@given(st.lists(JSON, max_size=4))
def test_a_json_array_of_rows_loads_or_is_an_input_error(tmp_path: Path, rows: list[Any]) -> None:
    path = tmp_path / "rows.json"
    path.write_text(json.dumps(rows))
    parses_or_refuses(instances_from_jsonl, path)
    parses_or_refuses(load_instances, path, "seedbench")


_CELL = st.none() | st.text(max_size=10) | st.integers(0, 12) | st.lists(st.text(max_size=6))
PARQUET_ROW = st.fixed_dictionaries(
    {"id": _CELL, "question": _CELL, "options": _CELL, "answer": _CELL},
    optional={"image": st.binary(max_size=16) | st.text(max_size=8), "gold": _CELL},
)


@SETTINGS
@given(PARQUET_ROW, st.sampled_from(sorted(LAYOUTS)))
# found by this property: eleven options and an index answer had no letter (IndexError)
@example({"id": None, "question": None, "options": [""] * 11, "answer": 10}, "cvqa")
def test_any_parquet_row_loads_or_is_refused_leaving_no_image(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, row: dict[str, Any], dataset: str
) -> None:
    import pyarrow as pa  # type: ignore[import-untyped]
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    cache = tmp_path / "cache"
    monkeypatch.setenv("CLEARSIGHT_CACHE", str(cache))
    for old in _files(cache):
        old.unlink()
    path = tmp_path / "rows.parquet"
    pq.write_table(pa.Table.from_pylist([row]), path)
    if not parses_or_refuses(load_instances, path, dataset):
        assert _files(cache) == []  # a refused row leaves no image behind


@SETTINGS
@given(st.binary(max_size=64))
def test_any_bytes_as_an_instance_source_load_or_are_an_input_error(
    tmp_path: Path, data: bytes
) -> None:
    for name in ("rows.parquet", "rows.arrow", "rows.bin", "rows.jsonl"):
        path = tmp_path / name
        path.write_bytes(data)
        parses_or_refuses(load_instances, path, "mmstar")
        parses_or_refuses(instances_from_jsonl, path)


def test_the_command_line_refuses_a_bad_instance_file_and_writes_nothing(tmp_path: Path) -> None:
    @settings(max_examples=50, deadline=None)
    @given(st.lists(LINE, min_size=1, max_size=3))
    def check(lines: list[str]) -> None:
        source, out = tmp_path / "rows.jsonl", tmp_path / "run"
        source.write_text("\n".join(lines))
        args = ["probe", "run", "--out", str(out), "--instances", str(source)]
        result = runner.invoke(app, [*args, "--sensor", "scripted:/nonexistent.jsonl"])
        assert result.exit_code == 2, result.output
        assert result.output.startswith("error: ")
        assert len(result.output.strip().splitlines()) == 1, result.output
        assert not out.exists()

    check()


#: Every command that reads a file the user names, FILE standing for it (for ``board``, DIR is a
#: card directory whose card.json is the file) and OUT for what it would write; the name the
#: file gets. Models are scripted files that load, so the file is what is refused.
_OUT = ("--out", "OUT")
_NO_GENERATOR = ("--generator", "none")
_BENCH_OUT = ("--out", "OUT/b.jsonl", "--run-dir", "OUT/run")
_FILE_COMMANDS: dict[str, tuple[list[str], str]] = {
    "sweep --config": (["sweep", "run", "--config", "FILE", "--out", "OUT"], "config.yaml"),
    "plan": (["plan", "FILE"], "config.yaml"),
    "probe --config": (["probe", "run", "--config", "FILE", "--out", "OUT"], "config.yaml"),
    "probe --instances": (
        [
            "probe",
            "run",
            "--instances",
            "FILE",
            "--sensor",
            "SENSOR",
            "--reasoners",
            "REASONER",
            *_OUT,
        ],
        "rows.jsonl",
    ),
    "probe --sensor": (
        ["probe", "run", "--sensor", "scripted:FILE", "--reasoners", "REASONER", "--out", "OUT"],
        "sensor.jsonl",
    ),
    "probe build --config": (
        ["probe", "build", "--config", "FILE", "--out", "OUT/kept.jsonl", "--store", "OUT/s"],
        "config.yaml",
    ),
    "instances": (["instances", "--instances", "FILE"], "rows.jsonl"),
    "grounding --config": (["grounding", "run", "--config", "FILE", "--out", "OUT"], "c.yaml"),
    "grounding --instances": (
        ["grounding", "run", "--instances", "FILE", "--model", "MODEL", *_NO_GENERATOR, *_OUT],
        "problems.jsonl",
    ),
    "grounding --bench": (
        ["grounding", "run", "--bench", "FILE", "--model", "MODEL", *_NO_GENERATOR, *_OUT],
        "bench.jsonl",
    ),
    "build-bench --instances": (
        ["grounding", "build-bench", "--instances", "FILE", "--generator", "MODEL", *_BENCH_OUT],
        "problems.jsonl",
    ),
    "problems": (["problems", "--instances", "FILE"], "problems.jsonl"),
    "board": (["board", "DIR", "DIR", "--out", "OUT"], "card.json"),
}
#: Malformed files: bytes that are no UTF-8 text, UTF-16 text of a well-formed file, and
#: JSON / YAML values of the wrong shape (no mapping, no list of rows).
_NOT_UTF8 = st.binary(min_size=1, max_size=48).filter(lambda b: not _utf8(b))
_UTF16 = st.sampled_from(
    ['{"id": "q", "question": "Q?", "answer": "1"}', "seed: 3\n", '{"card_version": 1}']
).map(lambda text: text.encode("utf-16"))
_SHAPE_VALUE = st.recursive(
    st.booleans() | st.integers() | st.text(min_size=1, max_size=8).filter(str.strip),
    lambda inner: st.lists(inner, min_size=1, max_size=3),
    max_leaves=6,
)
_WRONG_SHAPE = _SHAPE_VALUE.map(lambda v: json.dumps(v).encode())
MALFORMED = _NOT_UTF8 | _UTF16 | _WRONG_SHAPE


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _file_command(name: str, tmp_path: Path) -> tuple[list[str], Path, Path]:
    """The command line of ``name`` in ``tmp_path``, its input file and its output path."""
    from fixtures.probe_runs import scripts

    sensor, reasoner = scripts(tmp_path)
    model = tmp_path / "model.jsonl"
    lines = [{"texts": ["A"]}, {"hidden": {"share": 1.0, "sequence_probs": {"3": 1.0}}}]
    model.write_text("".join(json.dumps(x) + "\n" for x in lines))
    template, file_name = _FILE_COMMANDS[name]
    card_dir, out = tmp_path / "card", tmp_path / "out"
    card_dir.mkdir(exist_ok=True)
    path = card_dir / file_name if name == "board" else tmp_path / file_name
    words = {"SENSOR": sensor, "REASONER": reasoner, "MODEL": f"scripted:{model}"}
    words |= {"FILE": str(path), "DIR": str(card_dir), "OUT": str(out)}
    names = re.compile(r"\b(FILE|DIR|OUT|SENSOR|REASONER|MODEL)\b")
    args = [names.sub(lambda m: words[m[1]], arg) for arg in template]
    return args, path, out


@pytest.mark.parametrize("name", _FILE_COMMANDS)
def test_every_command_refuses_a_malformed_input_file_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """Issue 48: random bytes, UTF-16 text or a value of the wrong shape in any file a command
    reads is exit 2 and one ``error:`` line naming the file, no traceback, nothing written."""
    monkeypatch.setenv("CLEARSIGHT_CACHE", str(tmp_path / "cache"))
    args, path, out = _file_command(name, tmp_path)

    @settings(max_examples=12, deadline=None)
    @given(MALFORMED)
    def check(data: bytes) -> None:
        path.write_bytes(data)
        result = runner.invoke(app, args)
        assert result.exit_code == 2, (data, result.output)
        (line,) = result.output.strip().splitlines()
        assert line.startswith("error: "), line
        assert str(path if name != "board" else path.parent) in line, line
        assert "Traceback" not in result.output
        assert not out.exists()
        assert not (tmp_path / "cache").exists()

    check()


# --------------------------------------------------------------- problems and scripts


@SETTINGS
@given(st.lists(LINE, max_size=4) | JSON.map(lambda v: [json.dumps(v)]), st.booleans())
def test_any_problem_file_loads_or_is_an_input_error(
    tmp_path: Path, lines: list[str], jsonl: bool
) -> None:
    path = tmp_path / ("problems.jsonl" if jsonl else "problems.json")
    path.write_text("\n".join(lines))
    parses_or_refuses(load_jsonl, path)


SCRIPT_ENTRY = st.fixed_dictionaries(
    {},
    optional={
        "match": JSON,
        "texts": JSON,
        "token_logprobs": JSON,
        "candidate_probs": JSON,
        "usage": JSON,
        "latency_s": JSON,
        "extra": JSON,
        # a row of the masked-scoring table (scripted.ScriptedScores)
        "hidden": JSON
        | st.fixed_dictionaries(
            {},
            optional={
                k: JSON
                for k in (
                    "hide",
                    "share",
                    "failed",
                    "sequence_probs",
                    "end_probs",
                    "hidden_tokens",
                    "prompt_tokens",
                )
            },
        ),
    },
)


@SETTINGS
@given(
    st.lists(SCRIPT_ENTRY | JSON, max_size=3),
    st.sampled_from([".jsonl", ".json", ".yaml"]),
    st.booleans(),
)
def test_any_scripted_file_loads_or_is_an_input_error(
    tmp_path: Path, entries: list[Any], suffix: str, garble: bool
) -> None:
    path = tmp_path / f"script{suffix}"
    if suffix == ".jsonl":
        text = "\n".join(json.dumps(e) for e in entries)
    else:
        text = json.dumps(entries) if suffix == ".json" else yaml.safe_dump(entries)
    path.write_text(text[: len(text) // 2] if garble else text)
    parses_or_refuses(load_backend, f"scripted:{path}")


# ------------------------------------------------------------------------------ parsers


@SETTINGS
@given(st.text(max_size=60), st.sampled_from([1.0, 10.0, 100.0, 7.0]))
def test_the_confidence_parsers_return_a_probability_or_none(text: str, scale: float) -> None:
    try:
        value = parse_confidence(text, scale)
    except InputError:
        assert scale == 7.0  # the only refusal: a scale no prompt asks for
        return
    assert value is None or 0.0 <= value <= 1.0
    letter, conf = parse_verbalized(text, ("A", "B", "C"), scale=scale)
    assert letter in (None, "A", "B", "C")
    assert conf == value


@SETTINGS
@given(st.text(max_size=60))
def test_the_reasoner_action_parser_never_raises_another_error(text: str) -> None:
    parses_or_refuses(parse_action, text, ("A", "B", "C"), ("red", "green", "blue"))


@SETTINGS
@given(st.text(max_size=30), st.sampled_from(ANSWER_TYPES))
def test_the_answer_normaliser_parses_or_refuses(text: str, answer_type: Any) -> None:
    parses_or_refuses(normalise_answer, text, answer_type)


_PROBS = st.dictionaries(
    st.sampled_from([str(i) for i in range(11)]) | st.text(max_size=3),
    st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=4) | st.none(),
    max_size=5,
)


@SETTINGS
@given(_PROBS, st.none() | _PROBS)
def test_the_numeral_distribution_parses_or_refuses(
    sequence: dict[str, Any], ends: dict[str, Any] | None
) -> None:
    parses_or_refuses(numeral_distribution, sequence, ends)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.dictionaries(st.text(max_size=6), st.text(max_size=12), max_size=3), max_size=4))
@example([{"q": "a\u2028b\x85c\u2029"}])  # line separators JSON allows raw inside a string
def test_jsonl_lines_round_trip_whatever_their_characters(rows: list[dict[str, str]]) -> None:
    """A JSONL file written without ASCII escapes reads back as its rows, line numbers kept."""
    from clearsight.validate import jsonl_values

    text = "\r\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n"
    assert jsonl_values(text, "f.jsonl") == list(enumerate(rows, 1))
