"""Regenerate README's screenshot of ``clearsight view`` (``docs/img/view-item.png``): one item
page of the demo-size sweep run, in headless Chromium at 1280x800.

It serves the run with the ``clearsight view`` command itself (a free loopback port), opens the
listing of the observer's fog items at ``--level`` (default 31.25 m: the fog visible, the
target still there), the item its ``--index`` names in that listing (the run's order: the
first is the letter wording, with its option probabilities as bars), and saves the
viewport as a PNG with its colours quantised to a palette (README's image stays well under
300 kB). The run is ``--run`` (default ``runs/demo``); where it holds no run yet it is made
first with ``clearsight demo --quick`` (about a minute on two cores). Needs Debian's
``/usr/bin/chromium`` (``make browser``) and playwright::

    python scripts/view_screenshot.py                 # runs/demo -> docs/img/view-item.png
    python scripts/view_screenshot.py --run DIR --out shot.png
"""

from __future__ import annotations

import argparse
import io
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
VIEWPORT = {"width": 1280, "height": 800}


def _clearsight(*args: str) -> list[str]:
    """The ``clearsight`` command of this interpreter's environment (beside it in its bin/)."""
    return [str(Path(sys.executable).parent / "clearsight"), *args]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait(url: str, timeout_s: float = 120.0) -> None:
    """Until ``url`` answers (the viewer's first page builds its side index first)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(url, timeout=timeout_s):
                return
        except (urllib.error.URLError, ConnectionError):
            if time.monotonic() > deadline:
                raise SystemExit(f"error: the viewer did not answer at {url}") from None
            time.sleep(0.5)


def _shoot(base: str, query: dict[str, str], index: int) -> bytes:
    """The item page's viewport as PNG: the ``index``-th item of the listing ``query``."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport=VIEWPORT)
            page.goto(f"{base}/run/0/items?{urlencode(query)}")
            links = page.locator("#items tr.item a")
            if links.count() <= index:
                raise SystemExit(f"error: the listing {query} has {links.count()} items")
            with page.expect_navigation():
                links.nth(index).click()
            page.wait_for_load_state("networkidle")
            return bytes(page.screenshot(full_page=False))
        finally:
            browser.close()


def _small(png: bytes) -> bytes:
    """The screenshot with its colours quantised to 256 (an image that small enough for the
    README, and sharp: the page is mostly flat colours and text)."""
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB").quantize(256, dither=Image.Dither.NONE)
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=True)
    return out.getvalue()


def main() -> None:
    """Parse the options, make the run if needed, serve it, shoot, write."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", type=Path, default=ROOT / "runs" / "demo")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img" / "view-item.png")
    parser.add_argument("--model", default="observer")
    parser.add_argument("--level", default="31.25")
    parser.add_argument("--index", type=int, default=0)
    args = parser.parse_args()
    if not (args.run / "run.sqlite").exists():
        subprocess.run(_clearsight("demo", "--quick", "--out", str(args.run)), check=True)
    port = _free_port()
    server = subprocess.Popen(_clearsight("view", str(args.run), "--port", str(port)))
    try:
        base = f"http://127.0.0.1:{port}"
        _wait(f"{base}/run/0/")
        query = {"model": args.model, "condition": "fog", "level": args.level}
        png = _small(_shoot(base, query, args.index))
    finally:
        server.terminate()
        server.wait(timeout=10)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(png)
    print(f"{args.out}: {len(png) / 1000:.0f} kB, {VIEWPORT['width']}x{VIEWPORT['height']}")


if __name__ == "__main__":
    main()
