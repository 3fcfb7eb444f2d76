"""The viewer's pages as Chromium lays them out at 1280x800 (``scripts/view_pages.py``): no
two text boxes overlap and no text is cut, on the served pages (points, a listing, an item,
its side-by-side pages) and on the static bundle's, opened from ``file://``; and the check
itself finds an overlap and a cut where a page has them."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import numpy.typing as npt
import pytest

from clearsight.view import open_views
from clearsight.view.app import create_view_app
from clearsight.view.bundle import write_bundle
from fixtures.live_server import live_server

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="Debian's chromium is not installed at /usr/bin/chromium: run `make browser`",
)


@pytest.fixture(scope="module")
def pages() -> ModuleType:
    """``scripts/view_pages.py`` as a module."""
    pytest.importorskip("playwright.sync_api", reason="playwright not installed")
    spec = importlib.util.spec_from_file_location("view_pages", ROOT / "scripts/view_pages.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["view_pages"] = module
    spec.loader.exec_module(module)
    return module


_BAD = """<!DOCTYPE html><html><body style="margin:0">
<p style="position:absolute; left:10px; top:10px; margin:0">first label</p>
<p style="position:absolute; left:30px; top:14px; margin:0">second label</p>
<div style="position:absolute; left:10px; top:100px; width:40px; overflow:hidden">
<span>unbreakablewordthatdoesnotfit</span></div>
<p style="position:absolute; left:1250px; top:200px; margin:0; white-space:nowrap">past the edge</p>
</body></html>"""
_GOOD = """<!DOCTYPE html><html><body><p>one line</p><p>another line</p>
<svg width="200" height="20"><text x="10" y="15">a</text><text x="60" y="15">b</text></svg>
</body></html>"""


def test_the_check_finds_overlapping_and_cut_text(pages: ModuleType) -> None:
    with pages.chromium() as browser:
        page = browser.new_page(viewport=pages.VIEWPORT)
        page.set_content(_BAD)
        problems = pages.layout_problems(page)
        page.set_content(_GOOD)
        assert pages.layout_problems(page) == []
    assert "overlap: 'first label' and 'second label'" in problems
    assert "cut: 'unbreakablewordthatdoesnotfit' reaches past the box that clips it" in problems
    assert any(p.startswith("cut: 'past the edge' reaches") for p in problems)
    assert any(p.startswith("cut: the page is") for p in problems)


def test_the_viewers_pages_have_no_overlapping_or_cut_text(
    pages: ModuleType,
    view_run: tuple[Path, dict[str, npt.NDArray[np.uint8]]],
    tmp_path: Path,
) -> None:
    run, _ = view_run
    views = open_views([run])
    site = write_bundle(views[0], tmp_path / "site", 40).path
    query = {"model": "capture", "condition": "fog", "level": "3.9"}
    with live_server(create_view_app(views)) as base, pages.chromium() as browser:
        served = list(pages.viewer_pages(browser.new_page(viewport=pages.VIEWPORT), base, query))
        found = pages.check(browser, [*served, *pages.bundle_pages(site)], tmp_path)
    assert [name for name, _ in served] == ["points", "listing", "item", "side-0", "side-1"]
    assert len(found) == 8
    assert {name: problems for name, problems in found.items() if problems} == {}
    assert all((tmp_path / f"{name}.png").stat().st_size > 0 for name in found)
