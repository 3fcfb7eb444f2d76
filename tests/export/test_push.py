"""``clearsight push``: against a local stand-in of the Hub's API (started here, HF_ENDPOINT
pointed at it) the details dataset is committed to the dataset repository (a pull request with
``--pr``) and the eval results opened as a pull request on the model repository, through
huggingface_hub's own client, with the token from HF_TOKEN sent and never written; with the
endpoint unreachable, one ``error:`` line and nothing written. ``--hub`` is parsed by the Hub's
own rules (a property test against huggingface_hub's ``validate_repo_id``)."""

from __future__ import annotations

import base64
import io
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pandas as pd
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

import clearsight
from clearsight.export import parse_repo_id
from clearsight.faces import face_of
from clearsight.validate import InputError

TOKEN = "hf_standinTokenNeverStored0123456789"


@dataclass
class Commit:
    """A commit the stand-in received: its repository type and id, the PR flag, the files."""

    kind: str
    repo: str
    create_pr: bool
    files: dict[str, bytes] = field(default_factory=dict)


class StandIn(ThreadingHTTPServer):
    """The Hub's upload API as huggingface_hub's create_repo and create_commit call it."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.commits: list[Commit] = []
        self.auth: set[str] = set()
        self.created: list[dict[str, Any]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: StandIn

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _reply(self, status: int, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        self.server.auth.add(self.headers.get("authorization", ""))
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        url = urlsplit(self.path)
        parts = url.path.strip("/").split("/")
        if url.path == "/api/repos/create":
            self.server.created.append(json.loads(body))
            created = json.loads(body)
            self._reply(
                200,
                {"url": f"{self.server.url}/datasets/{created['organization']}/{created['name']}"},
            )
        elif url.path == "/api/validate-yaml":
            self._reply(200, {"errors": [], "warnings": []})
        elif len(parts) == 6 and parts[0] == "api" and parts[4] == "preupload":
            files = json.loads(body)["files"]
            modes = [
                {"path": f["path"], "uploadMode": "regular", "shouldIgnore": False} for f in files
            ]
            self._reply(200, {"files": modes})
        elif len(parts) == 6 and parts[0] == "api" and parts[4] == "commit":
            self._commit(parts[1][:-1], f"{parts[2]}/{parts[3]}", parse_qs(url.query), body)
        else:
            self._reply(404, {"error": f"no route {url.path}"})

    def _commit(self, kind: str, repo: str, query: dict[str, list[str]], body: bytes) -> None:
        commit = Commit(kind, repo, query.get("create_pr") == ["1"])
        for line in body.splitlines():
            item = json.loads(line)
            if item["key"] == "file":
                commit.files[item["value"]["path"]] = base64.b64decode(item["value"]["content"])
        self.server.commits.append(commit)
        n = len(self.server.commits)
        pr = f"{self.server.url}/{repo}/discussions/{n}" if commit.create_pr else None
        self._reply(
            200,
            {
                "commitUrl": f"{self.server.url}/{repo}/commit/{n:040d}",
                "commitOid": f"{n:040d}",
                "pullRequestUrl": pr,
            },
        )


@pytest.fixture
def hub() -> Iterator[StandIn]:
    server = StandIn()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def push(run: Path, endpoint: str, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``clearsight push RUN ARGS`` in a process of its own, huggingface_hub's endpoint and
    token set as a user sets them."""
    env = {
        **os.environ,
        "HF_ENDPOINT": endpoint,
        "HF_TOKEN": TOKEN,
        "HF_HOME": str(home),
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "PYTHONPATH": os.pathsep.join([str(Path(clearsight.__file__).parents[1]), *sys.path]),
    }
    command = [sys.executable, "-c", "from clearsight.cli import main; main()", "push", str(run)]
    return subprocess.run(
        [*command, *args, "--n-boot", "200"], env=env, capture_output=True, text=True, timeout=300
    )


def _files(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` but SQLite's own ``-wal``/``-shm`` (any reader of the run's
    store may leave them)."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.endswith(("-wal", "-shm"))
    }


def test_push_commits_the_details_and_opens_a_pr_with_the_eval_results(
    sweep_run: Path, hub: StandIn, tmp_path: Path
) -> None:
    before = _files(sweep_run)
    args = ("--hub", "me/clearsight-details", "--model-repo", "me/observer-model")
    done = push(sweep_run, hub.url, tmp_path / "home", *args)
    assert done.returncode == 0, done.stderr
    dataset, model = hub.commits
    assert (dataset.kind, dataset.repo, dataset.create_pr) == (
        "dataset",
        "me/clearsight-details",
        False,
    )
    assert sorted(dataset.files) == ["README.md", "data/details.parquet", "data/sample.parquet"]
    face = face_of("sweep")
    rows = [dict(r) for r in face.need(face.rows, "rows")(sweep_run)]
    sent = pd.read_parquet(io.BytesIO(dataset.files["data/details.parquet"]))
    assert len(sent) == len(rows)
    assert list(sent.columns) == list(rows[0])
    assert sent["key"].tolist() == [r["key"] for r in rows]
    assert (model.kind, model.repo, model.create_pr) == ("model", "me/observer-model", True)
    assert list(model.files) == [".eval_results/clearsight-sweep.yaml"]
    entries = yaml.safe_load(model.files[".eval_results/clearsight-sweep.yaml"])
    assert {e["dataset"]["id"] for e in entries} == {"me/clearsight-details"}
    ((created),) = hub.created
    assert (created["organization"], created["name"], created["type"]) == (
        "me",
        "clearsight-details",
        "dataset",
    )
    assert hub.auth == {f"Bearer {TOKEN}"}
    assert f"details: {hub.url}/me/clearsight-details/commit/" in done.stdout
    assert f"eval results: {hub.url}/me/observer-model/discussions/2" in done.stdout
    # nothing written locally, the token nowhere
    assert _files(sweep_run) == before
    assert not any(TOKEN.encode() in content for content in _files(tmp_path).values())


def test_push_with_pr_opens_the_datasets_upload_as_a_pr(
    sweep_run: Path, hub: StandIn, tmp_path: Path
) -> None:
    args = ("--hub", "me/clearsight-details", "--model-repo", "me/observer-model", "--pr")
    done = push(sweep_run, hub.url, tmp_path / "home", *args)
    assert done.returncode == 0, done.stderr
    assert [(c.kind, c.create_pr) for c in hub.commits] == [("dataset", True), ("model", True)]
    assert f"details: {hub.url}/me/clearsight-details/discussions/1" in done.stdout


def test_push_offline_is_one_error_line_and_writes_nothing(sweep_run: Path, tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        endpoint = f"http://127.0.0.1:{sock.getsockname()[1]}"
    before = _files(sweep_run)
    args = ("--hub", "me/clearsight-details", "--model-repo", "me/observer-model")
    done = push(sweep_run, endpoint, tmp_path / "home", *args)
    assert done.returncode == 2
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"error: cannot push to {endpoint}: ")
    assert "(nothing was sent); check the connection, HF_ENDPOINT and your token" in lines[0]
    assert _files(sweep_run) == before


def test_push_without_a_model_repository_says_which_to_name(sweep_run: Path) -> None:
    from typer.testing import CliRunner

    from clearsight.cli import app

    before = _files(sweep_run)
    result = CliRunner().invoke(app, ["push", str(sweep_run), "--hub", "me/details"])
    assert result.exit_code == 2
    assert "the run has 0 models for a model repository (observer)" in result.output
    assert "--model-repo ORG/NAME" in result.output
    bad = CliRunner().invoke(app, ["push", str(sweep_run), "--hub", "me/../x"])
    assert bad.exit_code == 2
    assert "invalid Hub repository 'me/../x'" in bad.output
    assert _files(sweep_run) == before


_CHARS = st.sampled_from("abAZ09_-./ é")


@given(
    st.text(_CHARS, max_size=12)
    | st.builds(
        "{}/{}".format,
        st.text(_CHARS, min_size=1, max_size=8),
        st.text(_CHARS, min_size=1, max_size=8),
    )
)
def test_hub_ids_follow_the_hubs_own_rules(text: str) -> None:
    """``--hub`` accepts exactly the ids huggingface_hub accepts that name a namespace."""
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    try:
        validate_repo_id(text)
        hubs = text.count("/") == 1
    except HFValidationError:
        hubs = False
    try:
        assert parse_repo_id(text) == text
        ours = True
    except InputError:
        ours = False
    assert ours == hubs, text
