"""``clearsight view RUN --bundle DIR``: the static site holds every curve point, a stratified
sample of the items behind each with the image its model received, and works from ``file://``
in Chromium with the network off."""

from __future__ import annotations

import io
import json
from pathlib import Path
from urllib.parse import unquote, urlsplit

import numpy as np
import numpy.typing as npt
import pytest
from PIL import Image
from typer.testing import CliRunner

from clearsight.cli import app as cli_app
from clearsight.faces.viewing import Query
from clearsight.sweep.face import question_of
from clearsight.sweep.view import SweepRunView
from clearsight.validate import InputError
from clearsight.view.bundle import write_bundle

Run = tuple[Path, dict[str, npt.NDArray[np.uint8]]]
CHROMIUM = Path("/usr/bin/chromium")
CURVE = "capture · identify · mcq.reason · accuracy · fog"


@pytest.fixture(scope="module")
def site(view_run: Run, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundle of the viewer tests' run, one sampled item per point at least."""
    view = SweepRunView(view_run[0], question_of)
    out = tmp_path_factory.mktemp("bundle") / "site"
    bundle = write_bundle(view, out, len(view.points()) + 10)
    assert bundle.path == out
    return out


def _decoded(path: Path) -> npt.NDArray[np.uint8]:
    return np.asarray(Image.open(io.BytesIO(path.read_bytes())).convert("RGB"))


def test_bundle_holds_every_point_and_a_sample_behind_each(view_run: Run, site: Path) -> None:
    run, captured = view_run
    view = SweepRunView(run, question_of)
    points = view.points()
    data = json.loads((site / "bundle.json").read_text())
    assert len(data["points"]) == len(points) == len(list((site / "point").iterdir()))
    size = len(points) + 10
    assert 0 < len(data["items"]) <= size
    for point, written in zip(points, data["points"], strict=True):
        assert written["n"] == point.n
        behind = {r.key for r in view.listing(Query(filters=point.filters, per_page=10**6)).rows}
        assert written["sampled"], point
        assert set(written["sampled"]) <= behind
    pages = {p.stem for p in (site / "item").iterdir()}
    images = {p.name.removesuffix(".png") for p in (site / "image").iterdir()}
    assert pages == images == set(data["items"])
    for key in images & set(captured):
        assert np.array_equal(_decoded(site / "image" / f"{key}.png"), captured[key]), key
    assert images & set(captured)


def test_bundle_refuses_an_existing_directory_and_a_bad_sample(
    view_run: Run, tmp_path: Path
) -> None:
    view = SweepRunView(view_run[0], question_of)
    with pytest.raises(InputError, match="exists"):
        write_bundle(view, tmp_path, 5)
    with pytest.raises(InputError, match="at least 1"):
        write_bundle(view, tmp_path / "new", 0)
    assert list(tmp_path.iterdir()) == []
    result = CliRunner().invoke(
        cli_app, ["view", str(view_run[0]), str(view_run[0]), "--bundle", str(tmp_path / "b")]
    )
    assert result.exit_code == 2
    assert result.output.startswith("error: --bundle writes the site of one run")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed")
def test_bundle_works_from_file_urls_offline(view_run: Run, site: Path) -> None:
    playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed")
    captured = view_run[1]
    with playwright_api.sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox"]
        )
        try:
            context = browser.new_context(offline=True, viewport={"width": 1280, "height": 800})
            page = context.new_page()
            page.set_default_timeout(15_000)
            page.goto((site / "index.html").as_uri())
            point = page.locator(f'a.point[data-curve="{CURVE}"][data-x="3.9 m"]')
            n = int(point.get_attribute("data-n") or "0")
            with page.expect_navigation():
                point.click()
            assert page.url.startswith("file://")
            assert page.inner_text("#n") == str(n)
            rows = page.locator("tr.item")
            shown = int(page.inner_text("#count"))
            assert 0 < rows.count() == shown <= n
            for i in range(shown):
                img = rows.nth(i).locator("img")
                img.scroll_into_view_if_needed()
                handle = img.element_handle()
                page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=handle)
                size = img.evaluate("img => [img.naturalHeight, img.naturalWidth]")
                file = Path(unquote(urlsplit(img.evaluate("img => img.currentSrc")).path))
                key = file.name.removesuffix(".png")
                assert tuple(size) == captured[key].shape[:2]
                assert np.array_equal(_decoded(file), captured[key]), key
            with page.expect_navigation():
                rows.nth(0).locator("a").click()
            assert page.locator("#image").evaluate("img => img.naturalWidth") > 0
        finally:
            browser.close()
