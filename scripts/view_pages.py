"""Render the pages of ``clearsight view`` in headless Chromium at 1280x800 and check their
layout: no two text boxes overlap and no text is cut.

The pages: the curve points, a listing (the observer's fog items at ``--level``), the first
item of it, that item's side-by-side pages (the same item for each model, its scene's strips
across levels), and the same of the static bundle (``clearsight view RUN --bundle``) opened from
``file://``: its points, a point's sample and an item. Each is saved as a screenshot of the
viewport (``--out DIR``, one PNG per page) and its text boxes as Chromium lays them out, the
whole page at 1280 px wide, are checked as the report's figures' labels are
(``tests/report/test_grounding_runs.py``: every pair of text boxes, those that meet listed):

* **overlap**: two text boxes (a text node's line, an SVG label) that meet by more than
  :data:`SLACK` px both ways;
* **cut**: a text box reaching past the page's right edge (1280 px: a horizontal scroll bar) or
  past an ancestor that clips its overflow.

Prints one line per page and exits 1 if any page has a problem. The run is ``--run`` (default
``runs/demo``; where it holds no run yet it is made first with ``clearsight demo --quick``). Needs
Debian's ``/usr/bin/chromium`` (``make browser``) and playwright::

    python scripts/view_pages.py                     # runs/demo, screenshots in view-pages/
    python scripts/view_pages.py --run DIR --out shots/
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent))
from view_screenshot import CHROMIUM, ROOT, VIEWPORT, _clearsight, _free_port, _wait

#: How far two text boxes may meet (px, both ways) before they overlap: adjacent lines of
#: text touch, and layout rounds to fractions of a pixel.
SLACK = 1.0

#: The text boxes of a page: each text node's line boxes and each SVG text element's box, with
#: the box of every ancestor that clips its overflow.
_BOXES_JS = """
() => {
  const out = [];
  const clips = (el) => {
    const found = [];
    for (let a = el; a && a !== document.documentElement; a = a.parentElement) {
      const style = getComputedStyle(a);
      if (style.overflowX !== 'visible' || style.overflowY !== 'visible') {
        const r = a.getBoundingClientRect();
        found.push([r.left + scrollX, r.top + scrollY, r.right + scrollX, r.bottom + scrollY]);
      }
    }
    return found;
  };
  const add = (text, r, el) => {
    if (r.width > 0 && r.height > 0) {
      out.push({text: text.slice(0, 40), box: [r.left + scrollX, r.top + scrollY,
                r.right + scrollX, r.bottom + scrollY], clips: clips(el)});
    }
  };
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const el = node.parentElement;
    if (!node.textContent.trim() || el.closest('svg, title, option, script, style')) continue;
    if (getComputedStyle(el).visibility === 'hidden') continue;
    const range = document.createRange();
    range.selectNodeContents(node);
    for (const r of range.getClientRects()) add(node.textContent.trim(), r, el);
  }
  for (const el of document.querySelectorAll('svg text')) {
    add(el.textContent.trim(), el.getBoundingClientRect(), el);
  }
  return {boxes: out, width: document.documentElement.scrollWidth};
}
"""


class Box(NamedTuple):
    """A text box as laid out: its text (the first 40 characters) and corners (px, page)."""

    text: str
    x0: float
    y0: float
    x1: float
    y1: float


def _meet(a: Sequence[float], b: Sequence[float], slack: float) -> bool:
    """Whether boxes ``a`` and ``b`` (x0, y0, x1, y1) meet by more than ``slack`` both ways."""
    return min(a[2], b[2]) - max(a[0], b[0]) > slack and min(a[3], b[3]) - max(a[1], b[1]) > slack


def overlapping(boxes: Sequence[Box], slack: float = SLACK) -> list[tuple[str, str]]:
    """The pairs of texts whose boxes meet (every pair compared, as the report's figures'
    labels are), sorted by their tops so only boxes on the same band are compared."""
    ordered = sorted(boxes, key=lambda b: b.y0)
    pairs = []
    for i, a in enumerate(ordered):
        for b in ordered[i + 1 :]:
            if b.y0 >= a.y1 - slack:
                break
            if _meet(a[1:], b[1:], slack):
                pairs.append((a.text, b.text))
    return pairs


def layout_problems(page: Any, width: int = VIEWPORT["width"]) -> list[str]:
    """What is wrong with the layout of the loaded ``page`` (module docstring), one line each."""
    found = page.evaluate(_BOXES_JS)
    boxes = [Box(b["text"], *b["box"]) for b in found["boxes"]]
    problems = [f"overlap: {a!r} and {b!r}" for a, b in overlapping(boxes)]
    if found["width"] > width:
        problems.append(f"cut: the page is {found['width']} px wide, the screen {width}")
    for b in found["boxes"]:
        if b["box"][2] > width + SLACK:
            problems.append(f"cut: {b['text']!r} reaches {b['box'][2]:.0f} px")
        elif any(not _inside(b["box"], clip) for clip in b["clips"]):
            problems.append(f"cut: {b['text']!r} reaches past the box that clips it")
    return problems


def _inside(box: Sequence[float], clip: Sequence[float]) -> bool:
    return all(box[i] >= clip[i] - SLACK for i in (0, 1)) and all(
        box[i] <= clip[i] + SLACK for i in (2, 3)
    )


def viewer_pages(page: Any, base: str, query: dict[str, str]) -> Iterator[tuple[str, str]]:
    """The served viewer's pages to check, as (name, URL): the points, the listing ``query``,
    its first item and that item's side-by-side pages."""
    yield "points", f"{base}/run/0/"
    listing = f"{base}/run/0/items?{urlencode(query)}"
    yield "listing", listing
    page.goto(listing)
    item = page.locator("#items tr.item a").first.get_attribute("href")
    if item is None:
        raise SystemExit(f"error: the listing {query} has no items")
    yield "item", f"{base}/run/0/{item}"
    page.goto(f"{base}/run/0/{item}")
    for n, href in enumerate(page.locator("#sides a").evaluate_all("a => a.map(e => e.href)")):
        yield f"side-{n}", str(href)


def bundle_pages(site: Path) -> Iterator[tuple[str, str]]:
    """The static bundle's pages to check, from ``file://``: its points, its first point's
    sample and the first item of that sample."""
    yield "bundle-points", (site / "index.html").as_uri()
    yield "bundle-point", (site / "point" / "0.html").as_uri()
    yield "bundle-item", sorted((site / "item").glob("*.html"))[0].as_uri()


def check(browser: Any, pages: Sequence[tuple[str, str]], out: Path | None) -> dict[str, list[str]]:
    """Each page's layout problems (module docstring), its screenshot saved in ``out``."""
    page = browser.new_page(viewport=VIEWPORT)
    found = {}
    for name, url in pages:
        page.goto(url)
        page.wait_for_load_state("load")
        found[name] = layout_problems(page)
        if out is not None:
            page.screenshot(path=str(out / f"{name}.png"), full_page=False)
    page.close()
    return found


@contextmanager
def chromium() -> Iterator[Any]:
    """Debian's headless Chromium, through playwright."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        try:
            yield browser
        finally:
            browser.close()


def main() -> None:
    """Make the run if needed, serve it, write its bundle, check and shoot every page."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", type=Path, default=ROOT / "runs" / "demo")
    parser.add_argument("--out", type=Path, default=ROOT / "view-pages")
    parser.add_argument("--model", default="observer")
    parser.add_argument("--level", default="31.25")
    args = parser.parse_args()
    if not (args.run / "run.sqlite").exists():
        subprocess.run(_clearsight("demo", "--quick", "--out", str(args.run)), check=True)
    args.out.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    server = subprocess.Popen(_clearsight("view", str(args.run), "--port", str(port)))
    try:
        base = f"http://127.0.0.1:{port}"
        _wait(f"{base}/run/0/")
        with tempfile.TemporaryDirectory() as tmp, chromium() as browser:
            site = Path(tmp) / "site"
            bundle = _clearsight("view", str(args.run), "--bundle", str(site), "--sample", "40")
            subprocess.run(bundle, check=True, stdout=subprocess.DEVNULL)
            query = {"model": args.model, "condition": "fog", "level": args.level}
            pages = list(viewer_pages(browser.new_page(viewport=VIEWPORT), base, query))
            found = check(browser, [*pages, *bundle_pages(site)], args.out)
    finally:
        server.terminate()
        server.wait(timeout=10)
    for name, problems in found.items():
        print(f"{name}: {len(problems)} problems" + "".join(f"\n  {p}" for p in problems))
    sys.exit(1 if any(found.values()) else 0)


if __name__ == "__main__":
    main()
