"""Trust under faults (issue 30): what a hostile client, server or file costs clearsight.

Prints ``name: value`` lines:

* ``serve_rss_idle_mb`` — resident memory of a real ``clearsight serve`` process (a scripted
  sensor) before the attack.
* ``serve_rss_growth_mb_1gib_chunked`` — how far its resident memory rose above idle (sampled
  every 2 ms) while a client posted a 1 GiB chunked body to ``/play`` (goal < 50).
* ``serve_1gib_chunked_bytes_sent_mb`` — how much of the body the client got to send before
  the server refused it (413) and closed the connection.
* ``serve_1gib_declared_bytes_sent`` — the same with ``Content-Length: 1 GiB``: refused from
  the headers (goal 0).
* ``openai_trickle_attempt_s`` — wall time of one HTTP attempt of the ``openai:`` backend
  with ``timeout_s: 3`` against a local server that sends its reply one byte a second, forever
  (goal <= 4).
* ``yaml_alias_bomb_refused_ms`` — time to refuse the nine-line "billion laughs" config.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from _timing import report
from clearsight.config import load_config
from clearsight.models import Message, Request
from clearsight.models.base import RequestFailedError
from clearsight.models.openai_api import make_openai
from clearsight.validate import InputError
from fixtures.hostile import post_body, rss_kib, sampled_peak, serve_process, trickle_server

GIB = 1 << 30


def serve_body_limit(tmp: Path) -> None:
    """A 1 GiB body posted to a real server, chunked and declared; its memory meanwhile."""
    with serve_process(tmp / "run", tmp) as server:
        time.sleep(2)  # settled after start-up
        idle = rss_kib(server.process.pid)
        with sampled_peak(server.process.pid) as peak:
            chunked = post_body(server.port, "/play", GIB)
        declared = post_body(server.port, "/play", GIB, chunked=False, wait_s=5)
        refusals = server.output().count('"POST /play HTTP/1.1" 413')
    assert refusals == 2, server.output()
    report("serve_rss_idle_mb", idle / 1024, 1)
    report("serve_rss_growth_mb_1gib_chunked", (peak[0] - idle) / 1024, 1)
    report("serve_1gib_chunked_bytes_sent_mb", chunked.sent / (1 << 20), 1)
    report("serve_1gib_declared_bytes_sent", declared.sent, 0)


def openai_trickle() -> None:
    """One attempt against a server that never finishes its reply."""
    with trickle_server(interval_s=1.0) as url:
        backend = make_openai(f"{url}#trickled", {"timeout_s": 3, "max_retries": 0})
        request = Request((Message.user("Which letter?"),), candidates=("A", "B"), generate=False)
        started = time.perf_counter()
        try:
            backend.complete([request])
        except RequestFailedError as exc:
            reason = str(exc)
        else:
            raise AssertionError("the trickled reply was accepted")
        report("openai_trickle_attempt_s", time.perf_counter() - started, 2)
        if "timeout" not in reason:
            raise AssertionError(reason)


def yaml_bomb(tmp: Path) -> None:
    """The nine-line alias bomb as a --config file."""
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [{', '.join([f'*{prev}'] * 9)}]")
    config = tmp / "bomb.yaml"
    config.write_text("\n".join(lines) + "\n")
    from clearsight.sweep import SweepConfig  # imported first: the refusal is timed, not imports

    started = time.perf_counter()
    try:
        load_config(config, SweepConfig)
    except InputError:
        report("yaml_alias_bomb_refused_ms", 1000 * (time.perf_counter() - started), 1)
    else:
        raise AssertionError("the alias bomb was loaded")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        serve_body_limit(Path(tmp))
        openai_trickle()
        yaml_bomb(Path(tmp))


if __name__ == "__main__":
    main()
