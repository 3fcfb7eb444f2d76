"""End to end: a real uvicorn server and Debian's headless Chromium play a whole human session.

The sensor is the ``scripted`` backend (replies matched on the query text) with the exact
judge, so the test is fast and deterministic; everything else is the real path: the CLI's
settings, the instance loader reading a JSONL file, the sensor, the store, the pages and their
script under the Content-Security-Policy.
"""

from __future__ import annotations

import http.client
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from clearsight.probe.play.session import HumanPlay
from clearsight.probe.records import load_transcripts
from clearsight.ui import ServeSettings
from clearsight.ui.app import create_app
from fixtures.live_server import live_server

CHROMIUM = Path("/usr/bin/chromium")
SCRIPT = "<script>alert(1)</script>"
CAR = ("red", "red", "blue", "red", "red")

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="Debian's chromium is not installed at /usr/bin/chromium: run `make browser`",
)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A uvicorn server in a thread on a free loopback port; yields its URL and run dir."""
    run = tmp_path / "humans"
    settings = _settings(tmp_path)
    with live_server(create_app(run, settings, HumanPlay(run, settings))) as url:
        yield url, run


def _settings(tmp_path: Path, **more: Any) -> ServeSettings:
    """Serve settings over an instance file and a scripted sensor written into ``tmp_path``."""
    image = tmp_path / "car.png"
    Image.fromarray(np.full((32, 48, 3), 90, np.uint8)).save(image)
    instance = {
        "id": "test/car-colour",
        "image": str(image),
        "question": "What colour is the car?",
        "options": ["blue", "red", "green"],
        "gold": "B",
        "dataset": "test",
        "category": "colour",
    }
    (tmp_path / "instances.jsonl").write_text(json.dumps(instance) + "\n")
    replies = [
        {"match": "colour", "texts": list(CAR)},
        {"match": "script", "texts": [SCRIPT] * 5},
    ]
    (tmp_path / "sensor.jsonl").write_text("".join(json.dumps(r) + "\n" for r in replies))
    return ServeSettings(
        sensor=f"scripted:{tmp_path / 'sensor.jsonl'}",
        judge="exact",
        k=5,
        budget=10,
        instances=str(tmp_path / "instances.jsonl"),
        **more,
    )


def _raw_get(base: str, path: str) -> tuple[int, str]:
    """GET ``path`` sent verbatim (no client-side ``..`` normalisation)."""
    host, port = base.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.read().decode("utf-8", "replace")
    finally:
        conn.close()


def test_browser_plays_a_whole_session(served: tuple[str, Path], tmp_path: Path) -> None:
    playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed")
    base, run = served
    (tmp_path / "secret.txt").write_text("TOP-SECRET")
    dialogs: list[str] = []
    problems: list[str] = []
    with playwright_api.sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox"]
        )
        try:
            page = browser.new_page()
            page.set_default_timeout(15_000)

            def on_dialog(dialog: Any) -> None:
                dialogs.append(str(dialog.message))
                dialog.dismiss()

            page.on("dialog", on_dialog)
            page.on("pageerror", lambda exc: problems.append(str(exc)))

            def on_console(msg: Any) -> None:
                if msg.type == "error":
                    problems.append(f"{msg.text} {msg.location}")

            page.on("console", on_console)
            page.goto(f"{base}/play")
            assert "What colour is the car?" in page.inner_text("#instances")
            page.fill("#name", "tester")
            with page.expect_navigation():
                page.click("#start-button")
            assert "/session/" in page.url
            key = page.url.split("/session/")[1].split("#")[0]
            assert page.inner_text("#question") == "What colour is the car?"
            assert page.locator("img").count() == 0  # never the image
            # the page's script runs under the CSP: focus lands in the query box
            assert page.evaluate("document.activeElement.id") == "query"

            for query in ("What colour is the car?", "Is there a script on the car?"):
                page.fill("#query", query)
                with page.expect_navigation():
                    page.click("#ask-button")
            turns = page.locator("#turns .turn")
            assert turns.count() == 2
            first = turns.nth(0)
            assert first.locator(".query").inner_text() == "What colour is the car?"
            shown = re.fullmatch(r"\((\d)/5\)", first.locator(".u").inner_text())
            assert shown is not None
            first_reply = first.locator(".reply").inner_text()
            assert first_reply in CAR
            assert int(shown.group(1)) == CAR.count(first_reply)
            second = turns.nth(1)
            assert second.locator(".reply").inner_text() == SCRIPT  # shown as text
            assert second.locator(".u").inner_text() == "(5/5)"
            assert page.locator("#turns script").count() == 0
            assert "9 of 10 turns left" not in page.inner_text("#budget")
            assert page.inner_text("#budget") == "8 of 10 turns left"

            # another site's page posting into the session (even knowing the form token) is
            # refused by the origin check, and changes nothing (the session is committed below)
            token = page.get_attribute('meta[name="csrf-token"]', "content")
            attack = (
                f'<form method="post" action="{base}/session/{key}/abandon">'
                f'<input name="csrf" value="{token}"><button id="go">go</button></form>'
            )
            page.route(
                "http://attacker.test/**",
                lambda route: route.fulfill(body=attack, content_type="text/html"),
            )
            page.goto("http://attacker.test/page.html")
            assert problems == []
            with page.expect_navigation():
                page.click("#go")
            assert "refused" in page.inner_text("body")
            (refused,) = problems  # the browser logs the 403 of the refused post
            assert "403" in refused
            problems.clear()
            page.goto(f"{base}/session/{key}")
            assert page.inner_text("#budget") == "8 of 10 turns left"  # the post did nothing

            page.check("#letter-B")
            with page.expect_navigation():
                page.click("#commit-button")
            outcome = page.inner_text("#outcome")
            assert "Committed (B)" in outcome
            assert "correct" not in outcome  # the player never learns the verdict or the gold
            assert "gold" not in outcome
            assert page.locator("#ask").count() == 0

            # a player reaches no record and no file of the run
            for path in (f"/records/{key}", f"/records/{key}/raw.json", "/files", "/files/x"):
                assert _raw_get(base, path)[0] == 404, path
            # ../ in a URL reaches no file (the browser itself would normalise it away)
            for path in (
                "/files/../secret.txt",
                "/files/../../secret.txt",
                "/files/%2e%2e%2fsecret.txt",
                "/files/%2e%2e%2f%2e%2e%2fsecret.txt",
                "/files/..%2f..%2f..%2f..%2fetc%2fpasswd",
            ):
                status, body = _raw_get(base, path)
                assert status in (403, 404), path
                assert "TOP-SECRET" not in body, path
                assert "root:" not in body, path
        finally:
            browser.close()
    assert dialogs == []  # the <script> reply never ran
    assert problems == []  # no script error, no CSP violation
    (transcript,) = load_transcripts(run)
    assert transcript.reasoner == "human:tester"
    assert transcript.instance_id == "test/car-colour"
    assert [t.query for t in transcript.turns] == [
        "What colour is the car?",
        "Is there a script on the car?",
        None,
    ]
    first_turn = transcript.turns[0].reply
    assert first_turn is not None
    assert first_turn.samples == CAR
    assert first_turn.reply == first_reply
    assert first_turn.u == int(shown.group(1))
    assert transcript.turns[2].commit == "B"
    assert transcript.committed == "B"
    assert transcript.correct is True
    assert transcript.stop == "committed"


def test_browser_plays_a_session_under_each_signal(tmp_path: Path) -> None:
    """With --signal balanced one person's three sessions get the true, no and random signal;
    each page shows what its session's signal shows, and never names the signal."""
    playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed")
    run = tmp_path / "humans"
    settings = _settings(tmp_path, signal="balanced")
    pages = []
    with (
        live_server(create_app(run, settings, HumanPlay(run, settings))) as base,
        playwright_api.sync_playwright() as pw,
    ):
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox"]
        )
        try:
            page = browser.new_page()
            page.set_default_timeout(15_000)
            for _ in range(3):
                page.goto(f"{base}/play")
                page.fill("#name", "tester")
                with page.expect_navigation():
                    page.click("#start-button")
                for query in ("What colour is the car?", "Which colour is the car?"):
                    page.fill("#query", query)
                    with page.expect_navigation():
                        page.click("#ask-button")
                pages.append(
                    (
                        [
                            page.locator(".turn .u").nth(i).inner_text()
                            for i in range(page.locator(".turn .u").count())
                        ],
                        page.inner_text("body"),
                        page.locator("#no-signal").count(),
                    )
                )
                page.check("#letter-B")
                with page.expect_navigation():
                    page.click("#commit-button")
        finally:
            browser.close()
    transcripts = load_transcripts(run)
    assert sorted(t.signal for t in transcripts) == ["none", "random", "true"]
    for t, (shown, body, note) in zip(transcripts, pages, strict=True):
        stored = [turn.shown_u for turn in t.turns if turn.reply is not None]
        if t.signal == "none":
            assert stored == [None, None]
            assert shown == []
            assert note == 1
        else:
            assert all(u is not None for u in stored)
            assert shown == [f"({u}/5)" for u in stored]
            assert note == 0
        if t.signal == "true":
            assert stored == [turn.reply.u for turn in t.turns if turn.reply is not None]
        assert "random" not in body.lower()
        assert "signal" not in body.lower()
