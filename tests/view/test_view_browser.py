"""End to end in Debian's headless Chromium: the viewer of a sweep run served by uvicorn; a
click on the fog curve's point at 3.9 m of the capturing model lists that many items, each
with an ``<img>`` the browser decoded whose pixels are those the model received."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from PIL import Image

from clearsight.view import open_views
from clearsight.view.app import create_view_app
from fixtures.live_server import live_server

CHROMIUM = Path("/usr/bin/chromium")
CURVE = "capture · identify · mcq.reason · accuracy · fog"

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="Debian's chromium is not installed at /usr/bin/chromium: run `make browser`",
)


def _watch(page: Any) -> list[str]:
    """Collect the page's script errors and failed loads (none are expected)."""
    problems: list[str] = []
    page.on("pageerror", lambda exc: problems.append(str(exc)))
    page.on("console", lambda msg: problems.append(msg.text) if msg.type == "error" else None)
    return problems


def test_click_a_point_and_see_its_items_images(
    view_run: tuple[Path, dict[str, npt.NDArray[np.uint8]]],
) -> None:
    playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed")
    run, captured = view_run
    with (
        live_server(create_view_app(open_views([run]))) as base,
        playwright_api.sync_playwright() as pw,
    ):
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox"]
        )
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.set_default_timeout(15_000)
            problems = _watch(page)
            page.goto(f"{base}/run/0/")
            point = page.locator(f'a.point[data-curve="{CURVE}"][data-x="3.9 m"]')
            n = int(point.get_attribute("data-n") or "0")
            assert n > 0
            with page.expect_navigation():
                point.click()
            assert "/run/0/items?" in page.url
            assert page.inner_text("#count") == str(n)
            rows = page.locator("tr.item")
            assert rows.count() == n
            for i in range(n):
                row = rows.nth(i)
                key = row.get_attribute("data-key") or ""
                img = row.locator("img")
                img.scroll_into_view_if_needed()
                page.wait_for_function(
                    "img => img.complete && img.naturalWidth > 0", arg=img.element_handle()
                )
                size = img.evaluate("img => [img.naturalHeight, img.naturalWidth]")
                assert tuple(size) == captured[key].shape[:2]
                src = img.evaluate("img => img.currentSrc")
                body = page.request.get(src).body()
                shown = np.asarray(Image.open(io.BytesIO(body)).convert("RGB"))
                assert np.array_equal(shown, captured[key]), key
            assert problems == []
        finally:
            browser.close()
