"""The sweep report as a reader sees it: the headline in the first screen of Debian's headless
Chromium (a screenshot taken), no panel for what did not run, no overlapping tick labels."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
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


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The observer and the detector perceiver (fog and the clean images only, one wording)."""
    out = tmp_path_factory.mktemp("figures") / "run"
    config = SweepConfig(
        scene_ids=("skimage-chelsea", "skimage-coffee", "skimage-camera"),
        models=("observer", "perceiver:detector"),
        model_wordings={"perceiver:detector": ("mcq.reason",)},
        model_conditions={"perceiver:detector": ("clean", "fog")},
        controls=("clean",),
        wordings=("mcq.reason", "verbal.plain"),
        tasks=("identify",),
    )
    run_sweep(config, out, progress=False)
    return out


@pytest.fixture(scope="module")
def eight_rows(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Eight headline rows: two reference observers, both tasks, both arms (a task column)."""
    out = tmp_path_factory.mktemp("eight") / "run"
    config = SweepConfig(
        scene_ids=("skimage-chelsea", "skimage-coffee", "skimage-camera"),
        models=("observer", "observer:recognition"),
        controls=("clean",),
        wordings=("mcq.reason", "verbal.plain"),
        tasks=("identify", "verify"),
    )
    run_sweep(config, out, progress=False)
    return out


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
    playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed")
    paths = build_report(request.getfixturevalue(which), n_boot=100, thumbnails=False)
    shot = tmp_path / "first-screen.png"
    with playwright_api.sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox"]
        )
        try:
            page = browser.new_page(viewport=SCREEN)
            page.goto(paths.html.as_uri())
            page.screenshot(path=str(shot))
            boxes = {name: page.locator(css).first.bounding_box() for name, css in FIRST.items()}
            shown = page.locator("#headline table tr").count()
            text = page.inner_text("#headline")
            curve = page.locator("#headline .beside img").evaluate("i => i.naturalWidth")
        finally:
            browser.close()
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
