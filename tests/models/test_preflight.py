"""The ``openai:`` backend's preflight against a real local HTTP server, and the driver and the
command line stopping before anything is created when a server cannot serve the run.

The server is a stdlib ``http.server`` on 127.0.0.1 (ephemeral port) whose replies are set per
test: which models ``GET /v1/models`` lists (or 404), and whether a chat completion carries
log-probabilities, is refused, or is slow. It records every request it sees.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from clearsight.driver import Execution, ModelNeed, check_models
from clearsight.models import Capabilities, load_backend
from clearsight.validate import InputError

pytestmark = pytest.mark.timeout(60)

LETTERS = Capabilities(generate=False, candidate_probs=True)
TEXT = Capabilities()
KEY_ENV = "CLEARSIGHT_TEST_PREFLIGHT_KEY"


class Server:
    """A scripted OpenAI-compatible server (see the module docstring)."""

    def __init__(self) -> None:
        self.models: list[str] | None = ["served-model"]
        self.chat = "logprobs"  # "logprobs", "plain", "refuse", "unknown-model" or "slow"
        self.status = 200  # of every reply (401: a key the server refuses)
        self.requests: list[tuple[str, str, dict[str, Any]]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                server.requests.append(("GET", self.path, {}))
                if server.status != 200:
                    self._send(server.status, {"error": {"message": "bad key"}})
                elif server.models is None or self.path != "/v1/models":
                    self._send(404, {"error": {"message": "not found"}})
                else:
                    data = [{"id": m, "object": "model"} for m in server.models]
                    self._send(200, {"object": "list", "data": data})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(("POST", self.path, body))
                if server.status != 200:
                    self._send(server.status, {"error": {"message": "bad key"}})
                    return
                if server.chat == "slow":
                    time.sleep(2.0)
                if server.chat == "refuse" or (
                    server.chat == "unknown-model" and body["model"] not in (server.models or [])
                ):
                    self._send(404, {"error": {"message": f"model {body['model']} not found"}})
                    return
                choice: dict[str, Any] = {
                    "index": 0,
                    "message": {"role": "assistant", "content": "A"},
                    "finish_reason": "length",
                }
                if server.chat != "plain" and body.get("logprobs"):
                    top = [{"token": "A", "logprob": math.log(0.9)}]
                    choice["logprobs"] = {
                        "content": [{"token": "A", "logprob": math.log(0.9), "top_logprobs": top}]
                    }
                self._send(200, {"id": "c", "model": body["model"], "choices": [choice]})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def spec(self, model: str = "served-model") -> str:
        return f"openai:http://127.0.0.1:{self.httpd.server_address[1]}/v1#{model}"


@pytest.fixture
def server() -> Iterator[Server]:
    s = Server()
    s.thread.start()
    try:
        yield s
    finally:
        s.httpd.shutdown()
        s.httpd.server_close()


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def preflight(spec: str, needs: Capabilities, **options: Any) -> None:
    load_backend(spec, options).preflight(needs)  # type: ignore[attr-defined]


def test_a_served_model_with_logprobs_passes_with_two_requests(server: Server) -> None:
    preflight(server.spec(), LETTERS)
    (get, path, _), (post, _, body) = server.requests
    assert (get, path, post) == ("GET", "/v1/models", "POST")
    assert body["max_tokens"] == 1
    assert body["logprobs"] is True
    assert body["top_logprobs"] >= 1
    assert body["model"] == "served-model"


def test_a_generation_only_need_asks_only_for_the_listing(server: Server) -> None:
    preflight(server.spec(), TEXT)
    assert [r[0] for r in server.requests] == ["GET"]


def test_nothing_listening_is_one_line_within_seconds() -> None:
    started = time.perf_counter()
    spec = f"openai:http://127.0.0.1:{_closed_port()}/v1#m"
    with pytest.raises(InputError, match=r"no server answers at http://127\.0\.0\.1:\d+/v1") as e:
        preflight(spec, LETTERS)
    assert time.perf_counter() - started < 5
    assert "start the server or correct the URL" in str(e.value)
    assert "\n" not in str(e.value)


def test_a_model_the_server_does_not_serve_is_named_with_what_it_serves(server: Server) -> None:
    server.models = ["qwen-vl", "other"]
    server.chat = "unknown-model"
    with pytest.raises(InputError) as e:
        preflight(server.spec("missing"), TEXT)
    message = str(e.value)
    assert "does not serve 'missing'" in message
    assert "'qwen-vl', 'other'" in message
    assert "HTTP 404" in message


def test_a_server_that_answers_any_name_passes_though_its_listing_differs(server: Server) -> None:
    """llama.cpp's server lists its file's alias and answers whatever model is named."""
    server.models = ["/models/smollm2.gguf"]
    preflight(server.spec("smollm2"), TEXT)
    assert [r[0] for r in server.requests] == ["GET", "POST"]


def test_missing_logprobs_are_refused_when_the_protocol_needs_them(server: Server) -> None:
    server.chat = "plain"
    with pytest.raises(InputError, match="server returned no logprobs"):
        preflight(server.spec(), LETTERS)
    preflight(server.spec(), TEXT)  # a protocol that only generates does not need them


def test_a_server_without_a_model_listing_is_asked_one_token(server: Server) -> None:
    server.models = None
    preflight(server.spec(), TEXT)
    assert [r[0] for r in server.requests] == ["GET", "POST"]
    server.chat = "refuse"
    with pytest.raises(InputError, match=r"HTTP 404: model served-model not found"):
        preflight(server.spec(), TEXT)


def test_a_refused_key_names_the_variable_and_never_the_key(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-preflight-secret-0123456789"
    monkeypatch.setenv(KEY_ENV, secret)
    server.status = 401
    with pytest.raises(InputError) as e:
        preflight(server.spec(), LETTERS, api_key_env=KEY_ENV)
    assert f"${KEY_ENV}" in str(e.value)
    assert secret not in str(e.value)


def test_a_slow_server_times_out_at_the_shorter_limit(server: Server) -> None:
    server.chat = "slow"
    started = time.perf_counter()
    with pytest.raises(InputError, match=r"no reply within 0\.5 s"):
        preflight(server.spec(), LETTERS, timeout_s=0.5)
    assert time.perf_counter() - started < 2.0


def test_the_driver_runs_the_preflight_through_the_guard_too(server: Server) -> None:
    server.chat = "plain"
    need = ModelNeed(server.spec(), {}, LETTERS, "the visibility sweep")
    with pytest.raises(InputError, match="no logprobs"):
        check_models([need], Execution())
    guarded = ModelNeed(
        f"guard:{server.spec()}", {"threshold_m": 10.0}, LETTERS, "the visibility sweep"
    )
    with pytest.raises(InputError, match="no logprobs"):
        check_models([guarded], Execution())
    server.chat = "logprobs"
    check_models([need, guarded], Execution())


def _clearsight(*args: str, cwd: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    code = "from clearsight.cli import main; main()"
    started = time.perf_counter()
    res = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return res, time.perf_counter() - started


@pytest.mark.slow
def test_a_sweep_on_a_dead_server_exits_2_fast_and_creates_nothing(tmp_path: Path) -> None:
    """The issue's case verbatim: nothing listens on 127.0.0.1:9 (the discard port)."""
    res, seconds = _clearsight(
        "sweep", "--model", "openai:http://127.0.0.1:9/v1#m", "--out", "RUN", cwd=tmp_path
    )
    print(f"clearsight sweep on a dead server: exit {res.returncode} in {seconds:.1f} s")
    assert res.returncode == 2, res.stderr
    assert seconds < 10
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("error: model 'openai:http://127.0.0.1:9/v1#m' cannot be used")
    assert not (tmp_path / "RUN").exists()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_a_probe_whose_sensor_is_not_served_stops_before_its_run(
    server: Server, tmp_path: Path
) -> None:
    server.models = ["other"]
    server.chat = "unknown-model"
    run = tmp_path / "probe"
    res, _ = _clearsight(
        "probe",
        "run",
        "--sensor",
        server.spec("vlm"),
        "--strategies",
        "direct",
        "--out",
        str(run),
        cwd=tmp_path,
    )
    assert res.returncode == 2, res.stderr
    assert "does not serve 'vlm'" in res.stderr
    assert not run.exists()
