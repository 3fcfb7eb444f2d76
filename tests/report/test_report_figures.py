"""The sweep report as a reader sees it: the headline in the first screen of Debian's headless
Chromium (a screenshot taken) with three headline rows and with eight, the figures of the
reference curves and of the corruptions each whole on a 1280x800 screen, no panel for what did
not run, no overlapping tick labels."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from PIL import Image

from clearsight.metrics.crossing import W_READING
from clearsight.pages.plots import overlapping_ticks, pyplot, slant_crowded_ticks
from clearsight.physics import SWEEP_LEVELS_M
from clearsight.report import build_report
from clearsight.sweep.analysis import analyse_sweep
from clearsight.sweep.config import SweepConfig
from clearsight.sweep.numbers.panels import reliability_panels
from clearsight.sweep.page.plots import shown_panels
from clearsight.sweep.protocol import run_sweep

CHROMIUM = Path("/usr/bin/chromium")
#: The first screen of a laptop.
SCREEN = {"width": 1280, "height": 800}


#: Three photos' scenes of the bundled set.
SCENES = ("skimage-chelsea", "skimage-coffee", "skimage-camera")


def _made(factory: pytest.TempPathFactory, name: str, **fields: object) -> Path:
    """A sweep run of :data:`SCENES` with the configuration ``fields``, under a new folder."""
    out = factory.mktemp(name) / "run"
    run_sweep(SweepConfig.model_validate({"scene_ids": SCENES, **fields}), out, progress=False)
    return out


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The observer and the detector perceiver (fog and the clean images only, one wording)."""
    return _made(
        tmp_path_factory,
        "figures",
        models=("observer", "perceiver:detector"),
        model_wordings={"perceiver:detector": ("mcq.reason",)},
        model_conditions={"perceiver:detector": ("clean", "fog")},
        controls=("clean",),
        wordings=("mcq.reason", "verbal.plain"),
        tasks=("identify",),
    )


@pytest.fixture(scope="module")
def eight_rows(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Eight headline rows: two reference observers, both tasks, both arms (a task column)."""
    return _made(
        tmp_path_factory,
        "eight",
        models=("observer", "observer:recognition"),
        controls=("clean",),
        wordings=("mcq.reason", "verbal.plain"),
        tasks=("identify", "verify"),
    )


@pytest.fixture(scope="module")
def corrupted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two reference observers in fog, with two ImageNet-C corruptions (one placed, one not)."""
    return _made(
        tmp_path_factory,
        "corrupted",
        models=("observer", "observer:human"),
        arms=("fog",),
        controls=("clean", "blank", "imagenet_c"),
        imagenet_c_severities=(1, 3, 5),
        imagenet_c_corruptions=("contrast", "gaussian_noise"),
        tasks=("identify",),
        wordings=("mcq.reason",),
    )


def test_no_panel_for_an_arm_or_a_wording_that_did_not_run(run: Path) -> None:
    analysis = analyse_sweep(run, n_boot=50)
    task = analysis.tasks["identify"]
    every = [
        (p.model, p.arm, p.wording)
        for row in reliability_panels(analysis.data, "identify")
        for p in row
    ]
    kept = [(p.model, p.arm, p.wording) for row in task.reliability for p in row]
    assert ("perceiver:detector", "water", "mcq.reason") in every  # computed, then left out
    assert set(kept) == {
        ("observer", "fog", "mcq.reason"),
        ("observer", "fog", "verbal.plain"),
        ("observer", "water", "mcq.reason"),
        ("observer", "water", "verbal.plain"),
        ("perceiver:detector", "fog", "mcq.reason"),
    }
    asked_risk = [(p.model, p.wording) for row in task.risk for p in row if p.asked]
    assert ("perceiver:detector", "verbal.plain") not in asked_risk
    # Fig. 3: no water panel for the perceiver, never shown water
    models, arms = analysis.run.models, analysis.run.arms
    assert shown_panels(analysis.curves, "identify", models, arms) == [
        ("observer", "fog"),
        ("observer", "water"),
        ("perceiver:detector", "fog"),
    ]


def test_crowded_visibility_ticks_are_slanted_until_none_overlap() -> None:
    plt = pyplot()
    from clearsight.sweep.page.plots import visibility_axis

    fig, ax = plt.subplots(figsize=(3.0, 2.4))
    visibility_axis(ax, SWEEP_LEVELS_M)  # nine labels on a narrow panel: they collide
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    assert overlapping_ticks(ax, renderer)
    assert slant_crowded_ticks(fig)
    fig.tight_layout()
    fig.draw_without_rendering()
    assert overlapping_ticks(ax, renderer) == []
    assert {t.get_rotation() for t in ax.get_xticklabels()} == {45.0}
    wide, wide_ax = plt.subplots(figsize=(9, 3))
    visibility_axis(wide_ax, SWEEP_LEVELS_M)
    assert not slant_crowded_ticks(wide)  # room enough: left level
    plt.close(fig)
    plt.close(wide)


@pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="Debian's chromium is not installed at /usr/bin/chromium: run `make browser`",
)
@pytest.mark.parametrize(
    ("which", "rows", "sentence"),
    [
        ("run", 3, "perceiver:detector, identification (t2): accuracy"),
        ("eight_rows", 8, "observer:recognition, verification (t3): "),
    ],
)
def test_the_first_screen_explains_itself(
    which: str, rows: int, sentence: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """The lead (what V* and W are, which sign is a blind spot), the headline table, its first
    sentence and a curve with its axis labels lie within the first screen, none overlapping
    another: with three headline rows and with eight (a task column beside them)."""
    paths = build_report(request.getfixturevalue(which), n_boot=100, thumbnails=False)
    shot = tmp_path / "first-screen.png"
    with _screen(paths.html) as page:
        page.screenshot(path=str(shot))
        boxes = {name: page.locator(css).first.bounding_box() for name, css in FIRST.items()}
        shown = page.locator("#headline table tr").count()
        text = page.inner_text("#headline")
        curve = page.locator("#headline .beside img").evaluate("i => i.naturalWidth")
    for name, box in boxes.items():
        assert box is not None, name
        assert min(box["width"], box["height"]) > 0, name
        # within the first screen, nothing cut off
        assert box["y"] + box["height"] <= SCREEN["height"], name
        assert box["x"] + box["width"] <= SCREEN["width"], name
    placed = [(n, b) for n, b in boxes.items() if b is not None]
    overlapping = [(a, b) for (a, p), (b, q) in itertools.combinations(placed, 2) if _meet(p, q)]
    assert overlapping == []
    assert curve > 0  # the figure's pixels arrived
    assert shown == 1 + rows  # a header, then a row per model, task and arm it was shown
    assert text.index(W_READING) < text.index("clean accuracy")  # the lead before the table
    assert sentence in text
    assert "undetermined [" not in text
    assert "n/a [" not in text
    assert Image.open(shot).size == (SCREEN["width"], SCREEN["height"])


@contextlib.contextmanager
def _screen(html: Path) -> Iterator[Any]:
    """The page ``html`` open in Debian's headless Chromium at :data:`SCREEN` (skips the test
    without playwright)."""
    playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed")
    with playwright_api.sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox"]
        )
        try:
            page = browser.new_page(viewport=SCREEN)
            page.goto(html.as_uri())
            yield page
        finally:
            browser.close()


#: What the first screen must hold, by CSS selector.
FIRST = {
    "lead": "#headline p.lead",
    "table": "#headline table",
    "sentences": "#headline .beside ul",
    "curve": "#headline .beside img",
}


def _meet(a: dict[str, float], b: dict[str, float]) -> bool:
    """Whether two bounding boxes overlap (touching edges do not)."""
    return (
        a["x"] < b["x"] + b["width"]
        and b["x"] < a["x"] + a["width"]
        and a["y"] < b["y"] + b["height"]
        and b["y"] < a["y"] + a["height"]
    )


#: The figures that draw reference curves or corruptions, by their image's alt text, and the
#: module whose ``png`` saves each.
NEW_FIGURES = {
    "sweep curves, identify": "plots",
    "Every corruption on the metre axis": "corruptions",
    "The limits of seeing": "references",
}


@pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="Debian's chromium is not installed at /usr/bin/chromium: run `make browser`",
)
def test_the_reference_and_corruption_figures_fit_a_screen(
    corrupted: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fig. 3 with its grey reference curves, the corruptions figure and the references'
    figure: drawn with no two tick labels overlapping, and each, scrolled to in headless
    Chromium at 1280x800 (a screenshot taken), whole on one screen at no less than half its
    drawn size."""
    from clearsight.sweep.page import corruptions, plots, references

    overlaps: dict[str, list[tuple[str, str]]] = {}
    for module in (plots, corruptions, references):
        monkeypatch.setattr(module, "png", _checked(module.png, module.__name__, overlaps))
    paths = build_report(corrupted, n_boot=100, thumbnails=False)
    assert set(overlaps) >= {f"clearsight.sweep.page.{m}" for m in NEW_FIGURES.values()}
    assert {name: pairs for name, pairs in overlaps.items() if pairs} == {}
    with _screen(paths.html) as page:
        shown = {alt: _scrolled_to(page, alt, tmp_path) for alt in NEW_FIGURES}
    for alt, (box, natural) in shown.items():
        assert box is not None, alt
        assert box["x"] >= 0, alt
        assert box["y"] >= 0, alt
        assert box["x"] + box["width"] <= SCREEN["width"], alt
        assert box["y"] + box["height"] <= SCREEN["height"], alt
        assert natural > 0, alt
        assert box["width"] >= natural / 2, alt
    for alt in NEW_FIGURES:
        assert Image.open(tmp_path / f"{alt}.png").size == (SCREEN["width"], SCREEN["height"])


def _checked(
    png: Callable[[Any], bytes], name: str, overlaps: dict[str, list[tuple[str, str]]]
) -> Callable[[Any], bytes]:
    """``png`` that also records, under ``name``, the tick labels of each saved figure's axes
    that overlap as it was drawn."""

    def saved(fig: Any) -> bytes:
        out = png(fig)  # saved and closed: drawn again, as saved, on a fresh canvas
        renderer = FigureCanvasAgg(fig).get_renderer()
        fig.draw_without_rendering()
        pairs = [p for ax in fig.axes if ax.get_visible() for p in overlapping_ticks(ax, renderer)]
        overlaps.setdefault(name, []).extend(pairs)
        return out

    return saved


def _scrolled_to(page: Any, alt: str, folder: Path) -> tuple[dict[str, float] | None, int]:
    """The bounding box of the figure ``alt`` in the viewport once scrolled to, and its drawn
    width in pixels; the viewport saved as ``folder/<alt>.png``."""
    figure = page.locator(f"img[alt='{alt}']").first
    figure.scroll_into_view_if_needed()
    page.screenshot(path=str(folder / f"{alt}.png"))
    return figure.bounding_box(), int(figure.evaluate("i => i.naturalWidth"))
