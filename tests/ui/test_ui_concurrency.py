"""Issue 48, item 7: the web page under concurrency. Fifty players arriving at once on a fresh
run directory all start and finish their sessions, against a real uvicorn server on
127.0.0.1: the store is created once, before the server accepts requests (it was created by
the first session, while the others read a half-made file: 500s and reset connections)."""

from __future__ import annotations

import http.client
import json
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlencode

import pytest

from clearsight.probe.play.session import HumanPlay
from clearsight.store import DB_NAME, RunStore
from clearsight.ui import ServeSettings
from clearsight.ui.app import create_app
from fixtures.live_server import live_server

pytestmark = pytest.mark.timeout(120)

PLAYERS = 50


def _play(tmp_path: Path, run: Path) -> HumanPlay:
    """A server's sessions as ``clearsight serve`` makes them: the bundled instances and a
    scripted sensor (every reply "red"), both loaded from its settings on first use."""
    script = tmp_path / "sensor.jsonl"
    script.write_text(json.dumps({"match": "?", "texts": ["red"] * 5}) + "\n")
    settings = ServeSettings(sensor=f"scripted:{script}", judge="exact", k=5, budget=4)
    return HumanPlay(run, settings)


class _Browser:
    """One player's connection: keeps the cookies the server sets, follows no redirect."""

    def __init__(self, url: str) -> None:
        host, port = url.removeprefix("http://").split(":")
        self.conn = http.client.HTTPConnection(host, int(port), timeout=60)
        self.cookies: dict[str, str] = {}

    def send(self, method: str, path: str, form: dict[str, str] | None = None) -> tuple[int, str]:
        """The status and body of one request (and its ``Location`` header for a redirect)."""
        headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())}
        body = None
        if form is not None:
            body = urlencode(form)
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        self.conn.request(method, path, body=body, headers=headers)
        reply = self.conn.getresponse()
        text = reply.read().decode()
        for value in reply.headers.get_all("set-cookie") or []:
            name, _, rest = value.partition("=")
            self.cookies[name] = rest.split(";")[0]
        return reply.status, reply.headers.get("location") or text


def _player(url: str, name: str, ready: threading.Barrier) -> list[int | str]:
    """One player's whole session, arriving with all the others at once: the play page,
    starting a session on its first instance, one query, a commit, the ended page; each step's
    status (or the error that ended the connection)."""
    browser = _Browser(url)
    ready.wait(timeout=30)
    try:
        page, text = browser.send("GET", "/play")
        csrf = re.search(r'name="csrf-token" content="([^"]+)"', text)
        instance = re.search(r'name="instance" value="([^"]+)"', text)
        if csrf is None or instance is None:
            return [page]
        token = csrf.group(1)
        form = {"csrf": token, "name": name, "instance": instance.group(1)}
        started, where = browser.send("POST", "/play", form)
        if started != 303:
            return [page, started]
        key = where.removeprefix("/session/")
        asked, _ = browser.send("POST", f"/session/{key}/query", {"csrf": token, "query": "Red?"})
        done, _ = browser.send("POST", f"/session/{key}/commit", {"csrf": token, "letter": "B"})
        ended, _ = browser.send("GET", f"/session/{key}")
    except OSError as exc:
        return [repr(exc)]
    finally:
        browser.conn.close()
    return [page, started, asked, done, ended]


def test_fifty_players_arriving_at_once_on_a_fresh_run_all_start_and_finish(
    tmp_path: Path,
) -> None:
    run = tmp_path / "fresh"
    play = _play(tmp_path, run)
    with play.writing():
        app = create_app(run, play.settings, play)
        assert (run / DB_NAME).is_file()  # created before the server accepts a request
        with live_server(app) as url:
            ready = threading.Barrier(PLAYERS)
            with ThreadPoolExecutor(PLAYERS) as pool:
                futures = [pool.submit(_player, url, f"p{i}", ready) for i in range(PLAYERS)]
                statuses = [f.result(timeout=100) for f in futures]
    assert statuses == [[200, 303, 303, 303, 200]] * PLAYERS
    with RunStore.open(run, read_only=True) as store:
        records = list(store.iter_records(kind="probe"))
        assert "config" in store.manifest()
    assert len(records) == PLAYERS
    assert {r.status for r in records} == {"ok"}
    assert sorted(r.readouts["reasoner"] for r in records) == sorted(
        f"human:p{i}" for i in range(PLAYERS)
    )
