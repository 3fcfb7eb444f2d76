"""Issue 15, finding 3: a secret never lands in a run. A configuration key that names a
credential is refused before the run (nothing written), naming the environment variable to
use; and the value of a key variable never appears in anything a run writes (its database,
report files) nor in what the command prints, even when it is part of an error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from clearsight.cli import app
from clearsight.credentials import credential_paths, is_credential_key, redact, redact_value
from clearsight.probe.instances import bundled_instances
from clearsight.store import RunStore
from fixtures.probe_runs import IDS, scripts

runner = CliRunner()
FAKE_KEY = "sk-fake-0123456789abcdefKEY"


@pytest.mark.parametrize(
    "options",
    [
        {"sensor_options": {"api_key": FAKE_KEY}},
        {"sensor_options": {"API-Key": FAKE_KEY}},
        {"sensor_options": {"extra_body": {"headers": {"Authorization": f"Bearer {FAKE_KEY}"}}}},
        {"reasoner_options": {"openai:http://x/v1#m": {"token": FAKE_KEY}}},
        {"sensor_options": {"password": FAKE_KEY}},
    ],
    ids=["api_key", "case-and-dash", "nested-authorization", "per-reasoner-token", "password"],
)
def test_a_credential_in_a_config_is_refused_before_the_run(
    tmp_path: Path, options: dict[str, object]
) -> None:
    sensor, reasoner = scripts(tmp_path)
    fields = {"instance_ids": list(IDS), "sensor": sensor, "reasoners": [reasoner], **options}
    config = tmp_path / "probe.yaml"
    config.write_text(yaml.safe_dump(fields))
    out = tmp_path / "run"
    args = ["probe", "run", "--config", str(config), "--out", str(out), "--strategies", "direct"]
    result = runner.invoke(app, [*args, "--runs", "1", "--judge", "exact"])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("error: credential in probe config"), lines
    assert "OPENAI_API_KEY" in lines[0]
    assert "HF_TOKEN" in lines[0]
    assert FAKE_KEY not in result.output
    assert not out.exists()


@pytest.mark.parametrize(
    ("key", "credential"),
    [
        ("api_key", True),
        ("Authorization", True),
        ("client_secret", True),
        ("access-token", True),
        ("key", True),
        ("api_key_env", False),  # names the variable, holds no secret
        ("max_tokens", False),
        ("max_new_tokens", False),
        ("top_logprobs", False),
        ("keep", False),
        ("scripted:/tmp/my_token", False),  # a model spec as a key
    ],
)
def test_which_keys_name_a_credential(key: str, credential: bool) -> None:
    assert is_credential_key(key) is credential


def test_credential_paths_are_found_at_any_depth() -> None:
    data = {"a": [{"b": {"secret": 1}}], "api_key_env": "MY_VAR", "token": 2}
    assert credential_paths(data) == [("a", "0", "b", "secret"), ("token",)]


def test_redaction_replaces_every_key_variable_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    monkeypatch.setenv("SOME_SERVICE_TOKEN", "tok-987654321")
    monkeypatch.setenv("SHORT_TOKEN", "abc")  # too short to redact without mangling text
    text = f"HTTP 401 for {FAKE_KEY} and tok-987654321, abc"
    assert redact(text) == "HTTP 401 for *** and ***, abc"
    assert redact_value({FAKE_KEY: [f"x{FAKE_KEY}", 3]}) == {"***": ["x***", 3]}


def test_a_key_in_an_error_lands_in_no_file_of_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    sensor, reasoner = scripts(tmp_path)
    source = tmp_path / "leaky.jsonl"
    inst = next(i for i in bundled_instances() if i.id == IDS[0]).to_json()
    inst["image"] = f"/nonexistent/{FAKE_KEY}/photo.jpg"  # the sensor's error quotes the path
    source.write_text(json.dumps(inst) + "\n")
    out = tmp_path / "run"
    args = ["probe", "run", "--out", str(out), "--instances", str(source), "--dataset", "jsonl"]
    args += ["--sensor", sensor, "--reasoner", reasoner, "--strategies", "direct", "--runs", "1"]
    result = runner.invoke(app, [*args, "--judge", "exact"])
    assert result.exit_code == 3, result.output  # the item failed, with the key in its reason
    with RunStore.open(out, read_only=True) as store:
        errors = [r.error or "" for r in store.iter_records("failed")]
    assert len(errors) == 1
    assert "/nonexistent/***/photo.jpg" in errors[0]
    written = [p for p in out.rglob("*") if p.is_file()]
    assert {p.name for p in written} >= {"run.sqlite", "report.html", "summary.md"}
    assert [p.name for p in written if FAKE_KEY.encode() in p.read_bytes()] == []
    assert FAKE_KEY not in result.output


# Issue 48, item 4: what the command line prints holds no key either.

OTHER_KEY = "other-secret-98765432"
PROBE_EXAMPLE = Path(__file__).parents[1] / "examples" / "probe-openai-sensor.yaml"


def test_show_config_prints_no_key_variables_value(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--show-config`` redacts the values of ``OPENAI_API_KEY`` and of the variable a
    configuration's ``api_key_env`` names, wherever the configuration holds them, as the store
    does (it printed both)."""
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    monkeypatch.setenv("CLEARSIGHT_TEST_SENSOR_VAR", OTHER_KEY)
    sets = [
        "sensor_options.api_key_env=CLEARSIGHT_TEST_SENSOR_VAR",
        f"sensor_options.extra_body={{note: {OTHER_KEY}}}",
        f"judge=llm:openai:http://127.0.0.1:8001/v1#{FAKE_KEY}",
    ]
    args = ["probe", "run", "--config", str(PROBE_EXAMPLE), "--show-config"]
    result = runner.invoke(app, [*args, *(x for s in sets for x in ("--set", s))])
    assert result.exit_code == 0, result.output
    shown = yaml.safe_load(result.output)
    assert shown["sensor_options"]["api_key_env"] == "CLEARSIGHT_TEST_SENSOR_VAR"
    assert shown["sensor_options"]["extra_body"] == {"note": "***"}
    assert shown["judge"] == "llm:openai:http://127.0.0.1:8001/v1#***"
    assert FAKE_KEY not in result.output
    assert OTHER_KEY not in result.output


def test_help_defaults_show_no_key_variables_value(monkeypatch: pytest.MonkeyPatch) -> None:
    """A default shown by ``--help`` that is a key variable's value is shown redacted."""
    shown = runner.invoke(app, ["grounding", "run", "--help"], terminal_width=200)
    assert "hf:smollm2-135m" in shown.output  # the model's default, before it names a key
    monkeypatch.setenv("SOME_SERVICE_TOKEN", "hf:smollm2-135m")
    result = runner.invoke(app, ["grounding", "run", "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "hf:smollm2-135m" not in result.output
    assert "Default: ***." in result.output


def test_an_errors_debug_traceback_shows_no_key_variables_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ``--debug`` the traceback before the error line is redacted as the line is."""
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    missing = tmp_path / FAKE_KEY / "probe.yaml"
    result = runner.invoke(app, ["--debug", "probe", "run", "--config", str(missing)])
    assert result.exit_code == 2, result.output
    assert "Traceback" in result.output
    assert f"{tmp_path}/***/probe.yaml" in result.output
    assert FAKE_KEY not in result.output
