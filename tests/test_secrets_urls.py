"""Issue 30, finding 5: secrets through the side doors. A model URL holding a user name and
password, or a key in its query, and an ``api_key_env`` that is a pasted key rather than a
variable's name, are refused before anything exists, without quoting the secret; and a URL's
credential is redacted wherever text is printed or stored."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qsl, quote, urlsplit

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from clearsight.cli import app
from clearsight.credentials import redact
from clearsight.models import load_backend
from clearsight.store import Record, RunStore
from clearsight.sweep.config import SweepConfig
from clearsight.sweep.protocol import run_sweep
from clearsight.validate import InputError

runner = CliRunner()
PASSWORD = "hunter2-pass-0123"
KEY = "sk-live-0123456789abcdef"
SWEEP = ["--scene-ids", "skimage-chelsea", "--arms", "fog", "--tasks", "identify"]


@pytest.mark.parametrize(
    ("model", "why"),
    [
        (f"openai:http://ann:{PASSWORD}@127.0.0.1:9/v1#m", "a user name or password in it"),
        (f"openai:http://{KEY}@127.0.0.1:9/v1#m", "a user name or password in it"),
        (f"openai:http://127.0.0.1:9/v1?api_key={KEY}#m", "a key in its query (api_key)"),
        (f"openai:http://127.0.0.1:9/v1?x=1&access_token={KEY}#m", "(access_token)"),
        (f"guard:openai:http://127.0.0.1:9/v1?key={KEY}#m", "a key in its query (key)"),
    ],
    ids=["user-password", "token-as-user", "api_key", "access_token", "inside-guard"],
)
def test_a_model_url_with_a_credential_is_refused_before_anything_exists(
    tmp_path: Path, model: str, why: str
) -> None:
    out = tmp_path / "run"
    result = runner.invoke(app, ["sweep", *SWEEP, "--model", model, "--out", str(out)])
    assert result.exit_code == 2, result.output
    [line] = result.output.strip().splitlines()
    assert line.startswith("error: credential in sweep config: models.0 holds a URL with ")
    assert why in line
    assert "OPENAI_API_KEY" in line
    assert PASSWORD not in result.output
    assert KEY not in result.output
    assert "***" in line or "://127.0.0.1" not in line
    assert not out.exists()


def test_a_credential_in_a_url_is_refused_from_a_file_and_from_python(tmp_path: Path) -> None:
    model = f"openai:https://ann:{PASSWORD}@example.org/v1#m"
    config = tmp_path / "sweep.yaml"
    config.write_text(yaml.safe_dump({"models": [model], "scene_ids": ["skimage-chelsea"]}))
    result = runner.invoke(app, ["sweep", "--config", str(config), "--out", str(tmp_path / "a")])
    assert result.exit_code == 2, result.output
    assert PASSWORD not in result.output
    with pytest.raises(ValueError, match=r"https://\*\*\*@example.org/v1#m: holds a URL") as err:
        run_sweep(SweepConfig(models=(model,), scene_ids=("skimage-chelsea",)), tmp_path / "b")
    assert "ann:" not in str(err.value)  # pydantic's own text quotes no part of the input
    with pytest.raises(InputError) as info:
        load_backend(model)
    assert PASSWORD not in str(info.value)
    assert not (tmp_path / "a").exists()
    assert not (tmp_path / "b").exists()


@pytest.mark.parametrize("pasted", [KEY, f"Bearer {KEY}", "", "1ABC"])
def test_an_api_key_env_that_is_no_variable_name_is_refused_unquoted(
    tmp_path: Path, pasted: str
) -> None:
    model = "openai:http://127.0.0.1:9/v1#m"
    config = tmp_path / "sweep.yaml"
    fields = {"models": [model], "model_options": {model: {"api_key_env": pasted}}}
    config.write_text(yaml.safe_dump(fields))
    out = tmp_path / "run"
    result = runner.invoke(app, ["sweep", *SWEEP, "--config", str(config), "--out", str(out)])
    assert result.exit_code == 2, result.output
    [line] = result.output.strip().splitlines()
    assert f"model_options.{model}.api_key_env is not the name of an environment variable" in line
    assert KEY not in result.output
    assert not out.exists()
    with pytest.raises(InputError) as info:
        load_backend(model, {"api_key_env": pasted})
    assert KEY not in str(info.value)


def test_a_urls_credential_is_redacted_where_text_is_stored_or_written(tmp_path: Path) -> None:
    leaky = f"connection error for https://ann:{PASSWORD}@h.example/v1?api_key={KEY}&n=1"
    with RunStore.open(tmp_path / "run") as store:
        store.begin_run({"protocol": "t", "config": {"note": leaky}})
        store.add_items([("k1", "t", {"q": 1})])
        store.write_records([Record.failed("k1", leaky, raw={"said": leaky})])
    data = b"".join(p.read_bytes() for p in (tmp_path / "run").iterdir() if p.is_file())
    assert PASSWORD.encode() not in data
    assert KEY.encode() not in data
    with RunStore.open(tmp_path / "run", read_only=True) as store:
        [record] = store.iter_records()
        assert record.error == "connection error for https://***@h.example/v1?api_key=***&n=1"
        assert record.raw == {"said": record.error}
        assert store.manifest()["config"]["note"] == record.error


_SAFE = st.text(st.sampled_from("abcXYZ019-._~%!$'()*+,;="), min_size=1, max_size=12)


@settings(max_examples=200, deadline=None)
@given(
    user=_SAFE,
    password=st.none() | _SAFE,
    name=st.sampled_from(["api_key", "key", "token", "access_token", "X-Amz-Signature", "apiKey"]),
    value=_SAFE,
    before=st.text(max_size=10),
)
def test_every_url_credential_is_found_and_redacted(
    user: str, password: str | None, name: str, value: str, before: str
) -> None:
    from clearsight.credentials import url_problems

    userinfo = user if password is None else f"{user}:{password}"
    url = f"https://{userinfo}@host.example:8443/v1?n=2&{name}={quote(value)}#model"
    text = f"{before} openai:{url} after"
    problems = url_problems(text)
    assert any("user name or password" in p for p in problems)
    assert any("a key in its query" in p for p in problems) or name == "apiKey"
    redacted = redact(text)
    parts = urlsplit(redacted[redacted.index("https://") :].split(" ")[0])
    assert parts.netloc == "***@host.example:8443"
    query = dict(parse_qsl(parts.query))
    assert query["n"] == "2"
    if name != "apiKey":  # a name of no key word (camel case) is not a key's
        assert query[name] == "***"
    assert redact(redacted) == redacted  # nothing left to redact
