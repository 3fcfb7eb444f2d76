"""The sweep report's headline: its numbers are the analysis' own (crossings, controls,
calibration and selective tables), its rows are the arms each model was shown, its sentences
read the table, and it leads both the page and summary.md."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from clearsight.metrics.crossing import W_READING
from clearsight.pages.output import markdown_section, md_text
from clearsight.report import build_report
from clearsight.sweep.analysis import SweepAnalysis, analyse_sweep
from clearsight.sweep.config import SweepConfig
from clearsight.sweep.numbers.headline import HEADLINE_SIGNALS
from clearsight.sweep.page.headline import (
    headline_block,
    sweep_caption,
    sweep_headline,
    sweep_lead,
    sweep_sentence,
)
from clearsight.sweep.protocol import run_sweep
from clearsight.sweep.signals import by_name

LEVELS = tuple(250.0 * 2.0**-k for k in range(11))  # 250 m ... 0.244 m: every crossing inside
N_BOOT = 300


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The observer on four scenes in fog (water is an arm of the run it is not shown), a letter
    wording with each abstain option and a verbalized one."""
    out = tmp_path_factory.mktemp("headline") / "run"
    config = SweepConfig(
        scene_ids=("skimage-chelsea", "skimage-coffee", "skimage-camera", "mpl-grace-hopper"),
        levels_m=LEVELS,
        controls=("clean", "blank"),
        model_conditions={"observer": ("clean", "fog", "blank")},
        wordings=("mcq.generic", "mcq.reason", "verbal.plain"),
        tasks=("identify",),
    )
    run_sweep(config, out, progress=False)
    return out


@pytest.fixture(scope="module")
def analysis(run: Path) -> SweepAnalysis:
    return analyse_sweep(run, n_boot=N_BOOT, seed=0)


def _one(frame: pd.DataFrame, **where: object) -> pd.Series:
    """The one row of ``frame`` where every column equals its value."""
    mask = pd.Series(True, index=frame.index)
    for column, value in where.items():
        mask &= frame[column] == value
    rows = frame[mask]
    assert len(rows) == 1, (where, len(rows))
    return rows.iloc[0]


def test_a_row_per_arm_shown_and_the_wordings_it_reads(analysis: SweepAnalysis) -> None:
    table = analysis.headline
    assert list(zip(table["model"], table["arm"], strict=True)) == [("observer", "fog")]
    row = table.iloc[0]
    # mcq.reason is read before mcq.generic whatever the configured order
    assert (row["letter"], row["verbal"]) == ("mcq.reason", "verbal.plain")


def test_the_numbers_are_the_analysis_own(analysis: SweepAnalysis) -> None:
    row = analysis.headline.iloc[0]
    key = {"model": "observer", "arm": "fog"}
    crossings, task = analysis.crossings, analysis.tasks["identify"]
    acc = _one(crossings, **key, wording="mcq.reason", signal="accuracy")
    assert row["v_acc_m"] == acc["v_star_m"]
    assert (row["v_acc_low_m"], row["v_acc_high_m"]) == (acc["v_low_m"], acc["v_high_m"])
    for signal in HEADLINE_SIGNALS:
        read = by_name(signal)
        kind = (
            ("verbal.plain",)
            if read.headline_wording == "verbal"
            else ("mcq.reason", "mcq.generic")
        )
        wording = next(w for w in kind if read.reads("observer", w))  # the first that reads it
        w = _one(crossings, **key, wording=wording, signal=signal)
        assert row[f"w_{signal}"] == w["w"]
        assert row[f"w_{signal}_bound"] == w["w_bound"]
        assert (row[f"w_{signal}_low"], row[f"w_{signal}_high"]) == (w["w_low"], w["w_high"])
    clean = _one(task.controls, model="observer", condition="clean", wording="mcq.reason")
    assert row["clean_acc"] == clean["accuracy"] == 1.0
    pooled = {"model": "observer", "arm": "fog", "level": "pooled"}
    internal = _one(task.calibration, **pooled, wording="mcq.reason", signal="internal_conf")
    verbal = _one(task.calibration, **pooled, wording="verbal.plain", signal="verbal_conf")
    aurc = _one(task.selective, **pooled, wording="mcq.reason", signal="internal_conf")
    assert (row["ece_internal"], row["ece_internal_low"]) == (internal["ece"], internal["ece_low"])
    assert (row["ece_verbal"], row["ece_verbal_high"]) == (verbal["ece"], verbal["ece_high"])
    assert (row["aurc"], row["aurc_low"], row["aurc_high"]) == (
        aurc["aurc"],
        aurc["aurc_low"],
        aurc["aurc_high"],
    )


def test_the_fallen_level_is_the_first_below_half(analysis: SweepAnalysis) -> None:
    row = analysis.headline.iloc[0]
    sweep = analysis.tasks["identify"].sweep
    curve = sweep[(sweep["condition"] == "fog") & (sweep["wording"] == "mcq.reason")]
    curve = curve.sort_values("x", ascending=False)
    assert row["acc_falls"]
    assert row["acc_start"] > row["acc_half"]
    above = curve[curve["x"] > row["fallen_m"]]
    at = _one(curve, x=row["fallen_m"])
    assert (above["accuracy"] >= row["acc_half"]).all()
    assert at["accuracy"] < row["acc_half"]
    assert row["at_fallen_internal_conf"] == at["internal_conf"]
    assert row["at_fallen_abstain"] == at["abstain_rate"]
    # the observer fades with the contrast: it crosses where its accuracy halves, within a level
    assert row["v_acc_m"] >= row["fallen_m"]
    assert math.isfinite(row["w_internal_conf"])
    assert abs(row["w_internal_conf"]) < 0.5


def test_sweep_sentence_reads_each_arm() -> None:
    levels = {"fog": (62.5, 7.8125, 1.953125), "water": (62.5, 7.8125, 1.953125)}
    base = {
        "task": "identify",
        "model": "m",
        "acc_falls": True,
        "acc_start": 0.9,
        "acc_half": 0.575,
        "v_acc_censored": "",
        **{f"w_{s}": math.nan for s in HEADLINE_SIGNALS},
        **{f"w_{s}_bound": "undetermined" for s in HEADLINE_SIGNALS},
        **{f"w_{s}_low": math.nan for s in HEADLINE_SIGNALS},
        **{f"w_{s}_high": math.nan for s in HEADLINE_SIGNALS},
        **{f"at_fallen_{s}": math.nan for s in HEADLINE_SIGNALS},
    }
    fog = base | {
        "arm": "fog",
        "v_acc_m": 7.8125,
        "w_internal_conf": 1.23,
        "w_internal_conf_bound": "lower",
        "w_internal_conf_low": 0.9,
        "w_internal_conf_high": 1.4,
        "at_fallen_internal_conf": 0.82,
        "w_abstain": 0.3,  # narrower: not the one read
        "w_abstain_bound": "exact",
    }
    water = base | {"arm": "water", "v_acc_m": 1.953125, "v_acc_censored": "below"}
    sentence = sweep_sentence("m", pd.DataFrame([fog, water]), levels)
    assert sentence == (
        "m, identification (t2): accuracy is half-way to its floor at 7.81 m in fog while "
        "internal confidence stays at 0.82: W ≥ +1.23 [+0.90, +1.40]; in water its accuracy "
        "is not half-way to its floor down to 1.95 m."
    )
    blind = base | {"arm": "fog", "v_acc_m": 1.0, "acc_falls": False, "acc_start": 0.0}
    assert "it has no accuracy to lose" in sweep_sentence("b", pd.DataFrame([blind]), levels)
    flat = base | {"arm": "fog", "v_acc_m": 7.8125}
    assert sweep_sentence("f", pd.DataFrame([flat]), levels).endswith(
        "W undetermined on every awareness signal."
    )


def test_the_headline_leads_the_page_and_the_summary(run: Path, analysis: SweepAnalysis) -> None:
    paths = build_report(run, n_boot=N_BOOT, thumbnails=False)
    summary = paths.summary_md.read_text(encoding="utf-8")
    headings = [line for line in summary.splitlines() if line.startswith("## ")]
    assert headings[0] == "## Headline"
    frame, sentences = sweep_headline(analysis.headline, analysis.run.levels)
    section = markdown_section(summary, "Headline")
    assert len([ln for ln in section.splitlines() if ln.startswith("| observer |")]) == len(frame)
    assert f"- {sentences[0]}" in section
    assert list(frame.columns) == [
        "model",
        "arm",
        "clean accuracy",
        "V*_acc",
        *(f"W {by_name(s).label}" for s in HEADLINE_SIGNALS),
        "ECE internal",
        "ECE verbalized",
        "AURC",
    ]
    html = paths.html.read_text(encoding="utf-8")
    assert html.index("<section id='headline'>") < html.index("<table class='kv'>")
    assert sentences[0].split(":")[0] == "observer, identification (t2)"
    # the intervals say what they resample: source photos, a photo's scenes together
    photos = analysis.bootstrap.n_clusters
    assert "a bootstrap over source photos (a photo's scenes resampled together)" in section
    assert f"resamples of the {photos} source photos (a photo's scenes together)" in summary
    assert f"resamples of the {photos} source photos with replacement" in html
    assert "resamples of scenes" not in summary + html


def test_the_dynamic_range_reads_each_models_main_wording_only(analysis: SweepAnalysis) -> None:
    """Issue 46 item 7: the accuracy's range over the fog levels, 100 (max - min) of the
    per-level accuracy, counts each item once per model — its main wording's reply (mcq.reason
    here) — not once per wording asked."""
    rec = analysis.data.records
    fog = rec[rec["condition"] == "fog"]
    main = fog[fog["wording"] == "mcq.reason"].groupby("level_m")["correct"].mean()
    pooled = fog.groupby("level_m")["correct"].mean()
    assert analysis.ranges.physical_pp == pytest.approx(100 * (main.max() - main.min()))
    assert 100 * (pooled.max() - pooled.min()) != pytest.approx(analysis.ranges.physical_pp)


def _row(**values: object) -> dict[str, object]:
    """A headline table row (:func:`~clearsight.sweep.numbers.headline.headline_table`'s
    columns) of a model whose accuracy is half-way to its floor at 7.81 m in fog, every W
    undetermined with a finite interval, then ``values``."""
    numbers = ("clean_acc", "ece_internal", "ece_verbal", "aurc")
    row: dict[str, object] = {
        "task": "identify",
        "model": "m",
        "arm": "fog",
        **{f"{n}{end}": 0.5 for n in numbers for end in ("", "_low", "_high")},
        "v_acc_m": 7.8125,
        "v_acc_censored": "",
        "v_acc_low_m": 3.9,
        "v_acc_high_m": 15.6,
        "acc_falls": True,
        "acc_start": 0.9,
        "acc_half": 0.575,
        **{f"w_{s}": 0.0 for s in HEADLINE_SIGNALS},
        **{f"w_{s}_bound": "undetermined" for s in HEADLINE_SIGNALS},
        **{f"w_{s}_low": 0.0 for s in HEADLINE_SIGNALS},
        **{f"w_{s}_high": 0.1 for s in HEADLINE_SIGNALS},
        **{f"at_fallen_{s}": math.nan for s in HEADLINE_SIGNALS},
    }
    return row | values


def test_no_interval_beside_a_value_that_does_not_exist() -> None:
    levels = {"fog": (62.5, 7.8125, 1.953125)}
    undefined = _row(v_acc_m=math.nan, v_acc_censored="undefined", v_acc_low_m=1.95)
    undefined |= {"v_acc_high_m": 13.1}
    bound = _row(model="k", w_abstain=0.3, w_abstain_bound="lower", w_abstain_low=0.0)
    bound |= {"w_abstain_high": 0.45}
    frame, sentences = sweep_headline(pd.DataFrame([undefined, bound]), levels)
    internal, abstain = (f"W {by_name(s).label}" for s in ("internal_conf", "abstain"))
    assert list(frame["V*_acc"]) == ["n/a", "7.81 m [3.90, 15.6] m"]
    assert list(frame[internal]) == ["undetermined", "undetermined"]
    assert list(frame[abstain]) == ["undetermined", "≥ +0.30 [+0.00, +0.45]"]
    assert sentences == [
        "m, identification (t2): in fog its accuracy has no range to fall over.",
        "k, identification (t2): accuracy is half-way to its floor at 7.81 m in fog: W ≥ +0.30 "
        "[+0.00, +0.45].",
    ]


def test_a_sentence_per_model_and_task_naming_the_task() -> None:
    levels = {"fog": (62.5, 7.8125, 1.953125)}
    rows = [
        _row(task=task, model=model, w_abstain=w, w_abstain_bound="exact")
        for task in ("identify", "verify")
        for model, w in (("a", 0.25), ("b", -0.5))
    ]
    frame, sentences = sweep_headline(pd.DataFrame(rows), levels)
    assert list(frame["task"]) == ["identification (t2)"] * 2 + ["verification (t3)"] * 2
    assert [s.split(":")[0] for s in sentences] == [
        "a, identification (t2)",
        "b, identification (t2)",
        "a, verification (t3)",
        "b, verification (t3)",
    ]
    assert sentences[1].endswith("W -0.50 [+0.00, +0.10].")


def test_the_caption_names_a_person_slider_only_with_people(analysis: SweepAnalysis) -> None:
    assert "slider" not in sweep_caption("main", people=False)
    assert "slider" in sweep_caption("main", people=True)
    block = headline_block(analysis)
    assert not analysis.run.people
    assert "slider" not in block.caption
    assert block.lead == sweep_lead()
    assert W_READING in block.lead  # the card's words (its page prints the same constant)
    assert "V*: the visibility in metres" in block.lead


def test_the_lead_opens_the_summary_headline(run: Path) -> None:
    paths = build_report(run, n_boot=50, thumbnails=False)
    section = markdown_section(paths.summary_md.read_text(encoding="utf-8"), "Headline")
    lines = section.splitlines()
    assert lines[2] == md_text(sweep_lead())
    assert lines[4].startswith("| model |")
