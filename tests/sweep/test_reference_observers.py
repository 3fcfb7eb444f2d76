"""The limits of seeing as reference curves (issue 45 item 4): ``observer:recognition`` (5 %
contrast), ``observer:human`` (Geirhos et al. 2017's contrast data, fitted), the Koschmieder
mapping by hand at one distance, the names refused, and the report's section."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from clearsight.models.registry import load_backend
from clearsight.physics import fog
from clearsight.scenes.bundled import load_bundled_scene
from clearsight.sweep.references.observer import retained_contrast
from clearsight.sweep.references.recognition import (
    RECOGNITION_THRESHOLD,
    human_data,
    human_fit,
    reference_observer,
)
from clearsight.validate import InputError

#: How close the fitted curve comes to each published point (absolute, share right): five
#: points, three parameters, and 1 % contrast's 5.5 % lies below the 1/16 guess rate.
FIT_TOLERANCE = 0.025


def test_the_fit_reproduces_the_published_points() -> None:
    data = human_data()
    assert "arXiv:1706.06969" in data["source"]
    assert data["n_classes"] == 16
    points = {p["contrast"]: p["accuracy"] for p in data["points"]}
    assert points == {1.0: 0.866, 0.1: 0.719, 0.05: 0.476, 0.03: 0.208, 0.01: 0.055}
    fit = human_fit()
    for contrast, accuracy in points.items():
        assert fit.accuracy(contrast) == pytest.approx(accuracy, abs=FIT_TOLERANCE)
    assert fit.chance == 1 / 16
    assert fit.accuracy(0.0) == fit.chance
    # half of the way from guessing to the top at the midpoint, rising with contrast
    top = 1.0 - fit.lapse
    assert fit.accuracy(fit.c50) == pytest.approx((fit.chance + top) / 2, rel=1e-12)
    assert fit.seen(fit.c50) == pytest.approx((top - fit.chance) / 2 / (1 - fit.chance))


def test_recognition_sees_half_the_time_at_five_percent() -> None:
    recognition, detection = load_backend("observer:recognition"), load_backend("observer")
    assert recognition.name == "observer:recognition"
    assert recognition.detect(RECOGNITION_THRESHOLD) == pytest.approx(0.5)
    assert detection.detect(0.02) == pytest.approx(0.5)
    # the same contrast is seen less often when recognition, not detection, is asked
    assert recognition.detect(0.03) < detection.detect(0.03)


def test_the_koschmieder_mapping_by_hand_at_ten_metres() -> None:
    """A target at z = 10 m in fog of V = 20 m keeps t = exp(-3.912 * 10 / 20) = exp(-1.956)
    = 0.14142 of its contrast; the human reference sees it with p = seen(0.14142)."""
    scene = load_bundled_scene("skimage-chelsea")
    depth = np.full(scene.image.shape[:2], 10.0, dtype=np.float32)
    shown = fog(scene.image, depth, 20.0)
    box = (100, 100, 300, 300)
    contrast = retained_contrast(shown, scene.image, box)
    assert math.exp(-1.956) == pytest.approx(0.14142, abs=1e-5)
    assert contrast == pytest.approx(0.14142, rel=0.02)  # 8-bit rounding of the fogged image
    human = load_backend("observer:human")
    assert human.name == "observer:human"
    assert human.detect(contrast) == pytest.approx(human_fit().seen(0.14142), abs=0.01)


@given(st.text(min_size=1, max_size=20).filter(lambda a: a not in ("recognition", "human")))
def test_any_other_reference_observer_is_refused(arg: str) -> None:
    with pytest.raises(InputError, match="unknown reference observer"):
        reference_observer(arg, {})


def test_the_human_reference_takes_no_options() -> None:
    with pytest.raises(InputError, match="takes no options"):
        load_backend("observer:human", {"slope": 2.0})
    assert load_backend("observer:recognition", {"slope": 2.0}).config.slope == 2.0


#: The reference observers of the report's run.
REFERENCES = ("observer", "observer:recognition", "observer:human")


@pytest.fixture(scope="module")
def references_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The three reference observers on one scene, fog at three levels, one wording."""
    from clearsight.sweep.config import SweepConfig
    from clearsight.sweep.protocol import run_sweep

    config = SweepConfig(
        scene_ids=("darknet-dog-truck",),
        models=REFERENCES,
        arms=("fog",),
        levels_m=(62.5, 15.625, 3.90625),
        controls=("clean", "blank"),
        tasks=("identify",),
        wordings=("mcq.reason",),
    )
    out = tmp_path_factory.mktemp("references") / "run"
    run_sweep(config, out, progress=False)
    return out


def test_the_report_draws_the_references_with_their_w(references_run: Path) -> None:
    from clearsight.report import build_report

    paths = build_report(references_run, n_boot=50)
    page = paths.html.read_text()
    section = page[page.index("id='limits'") :]
    for model in REFERENCES:
        assert f"<td class='t'>{model}</td>" in section
    assert "Geirhos" in section
    assert "data:image/png;base64," in section
    summary = paths.summary_csv.read_text()
    assert "observer:human" in summary  # V* and W computed like a model's


def test_fig_3_draws_the_other_references_as_grey_curves(
    references_run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each Fig. 3 panel carries the reference observers other than its own model, drawn
    thick in grey at the accuracy curve's values."""
    from clearsight.sweep.analysis import analyse_sweep
    from clearsight.sweep.page import plots

    drawn: list[Any] = []
    monkeypatch.setattr(plots, "png", lambda fig: drawn.append(fig) or b"png")
    analysis = analyse_sweep(references_run, n_boot=50)
    assert plots.curves_figure(analysis, analysis.tasks["identify"]) == b"png"
    curves = analysis.curves
    for ax in drawn[0].axes:
        model = ax.get_title().split(" — ")[0]
        grey = {line.get_label(): line for line in ax.get_lines() if line.get_linewidth() == 2.0}
        assert set(grey) == set(REFERENCES) - {model}, ax.get_title()
        for ref, line in grey.items():
            rows = plots.series(curves, ref, "identify", "mcq.reason", "accuracy", "fog")[0]
            assert list(line.get_ydata()) == list(rows["estimate"])
    legend = {text.get_text() for text in drawn[0].legends[0].get_texts()}
    assert set(REFERENCES) <= legend  # each named once, whichever panels draw it
