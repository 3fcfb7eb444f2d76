"""The sweep read as the paper reads it (issue 36): W against the main wording's accuracy, a
letter wording without the abstain option, Table VI on matched images, an independent ImageNet-C
plasma per scene and severity, per-model scene subsets, Fig. 9 for COCO scenes and clean
docstrings. Every number below is worked out by hand in its comment."""

from __future__ import annotations

import itertools
import math
import re
import warnings
from html import unescape
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from clearsight.pages.output import ReportPaths
from clearsight.physics import imagenet_c_fog
from clearsight.physics.equivalence import FogGainCurve
from clearsight.seeding import derive_seed
from clearsight.store import RunStore
from clearsight.sweep.config import SweepConfig
from clearsight.sweep.numbers.crossings import scene_bootstrap
from clearsight.sweep.plan import plan_sweep
from clearsight.sweep.protocol import run_sweep
from clearsight.sweep.results import RunData, load_run_data
from clearsight.validate import InputError
from fixtures.sweep_runs import toy_run

LEVELS = (100.0, 10.0, 1.0)


def _run_data(rows: list[dict[str, object]], manifest: dict[str, object] | None = None) -> RunData:
    """A RunData of synthetic records (one scene each its own cluster) on :data:`LEVELS`."""
    frame = pd.DataFrame(rows)
    frame["cluster"] = frame["scene"]
    frame["answered"] = 1.0 - frame["abstained"]
    return toy_run(frame, LEVELS, manifest)


def _row(wording: str, cond: str, level: float, **values: float) -> dict[str, object]:
    base: dict[str, object] = {
        "model": "m",
        "task": "identify",
        "wording": wording,
        "scene": "s",
        "scene.source": "test",
        "condition": cond,
        "level_m": level,
        "severity": math.nan,
        "abstained": 0.0,
        "internal_conf": math.nan,
        "verbal_conf": math.nan,
        "n_options": 4.0,
    }
    return base | values


# One scene, one item per cell: clean, then 100, 10, 1 m; no blank control, so the accuracy's
# floor is chance 1/4 and every floor below is 1/4 (confidences) or 1 (abstain rate).
CURVES = {
    # accuracy 1, 1, 1, 0: h = (1 + .25) / 2 = .625, first past at 1 m, t = (1 - .625) / 1
    # = .375 of the way from 10 to 1 m: log10 V*_acc = 1 - .375 = .625
    # internal confidence .9, .9, .9, .25: h = .575, t = .325 / .65 = .5: log10 V* = .5
    "mcq.reason": {"correct": [1, 1, 1, 0], "internal_conf": [0.9, 0.9, 0.9, 0.25]},
    # accuracy 1, 1, 0, 0: first past at 10 m, t = .375 from 100 m: log10 V*_acc = 1.625
    # abstain rate 0, 0, 0, 1: floor 1, h = .5, first past at 1 m, t = .5: log10 V* = .5
    "mcq.generic": {
        "correct": [1, 1, 0, 0],
        "internal_conf": [0.9, 0.9, 0.9, 0.9],
        "abstained": [0, 0, 0, 1],
    },
    # accuracy 1 everywhere: never crosses, censored below at 1 m (log10 V*_acc <= 0)
    # verbalized confidence .8, .8, .8, .2: h = .525, t = .275 / .6 = 11/24: log10 V* = 13/24
    "verbal.plain": {"correct": [1, 1, 1, 1], "verbal_conf": [0.8, 0.8, 0.8, 0.2]},
}


def _curve_rows() -> list[dict[str, object]]:
    cells = [("clean", math.nan), *(("fog", v) for v in LEVELS)]
    rows = []
    for wording, signals in CURVES.items():
        for k, (cond, level) in enumerate(cells):
            values = {name: float(series[k]) for name, series in signals.items()}
            rows.append(_row(wording, cond, level, **values))
    return rows


def _w(boot_crossings: pd.DataFrame, wording: str, signal: str) -> pd.Series:
    found = boot_crossings[
        (boot_crossings["wording"] == wording) & (boot_crossings["signal"] == signal)
    ]
    return found.iloc[0]


def test_w_uses_the_main_wordings_accuracy_crossing_by_default() -> None:
    data = _run_data(_curve_rows())
    boot = scene_bootstrap(data, n_boot=20)
    cr = boot.crossings
    # every W against mcq.reason's log10 V*_acc = .625
    generic_abstain = _w(cr, "mcq.generic", "abstain")
    assert generic_abstain["w"] == pytest.approx(0.625 - 0.5)  # own wording's: 1.125
    assert generic_abstain["w_accuracy"] == "mcq.reason"
    assert boot.w_pairing == "main"
    internal = _w(cr, "mcq.reason", "internal_conf")
    assert (internal["w"], internal["w_bound"]) == (pytest.approx(0.125), "exact")
    verbal = _w(cr, "verbal.plain", "verbal_conf")
    assert verbal["w"] == pytest.approx(0.625 - 13 / 24)
    assert (verbal["w_bound"], verbal["w_accuracy"]) == ("exact", "mcq.reason")
    assert set(cr.loc[cr["signal"] == "accuracy", "w_accuracy"]) == {""}


def test_the_own_wording_pairing_is_kept_as_an_option_the_manifest_names() -> None:
    data = _run_data(_curve_rows(), {"config": {"w_accuracy": "own"}})
    boot = scene_bootstrap(data, n_boot=20)
    assert boot.w_pairing == "own"
    cr = boot.crossings
    generic_abstain = _w(cr, "mcq.generic", "abstain")
    assert generic_abstain["w"] == pytest.approx(1.625 - 0.5)  # mcq.generic's own accuracy
    assert generic_abstain["w_accuracy"] == "mcq.generic"
    # the verbal replies' accuracy never crosses (censored below at 1 m): W <= 0 - 13/24
    verbal = _w(cr, "verbal.plain", "verbal_conf")
    assert verbal["w"] == pytest.approx(-13 / 24)
    assert (verbal["w_bound"], verbal["w_accuracy"]) == ("upper", "verbal.plain")
    # the caller's choice wins over the manifest's
    again = scene_bootstrap(data, n_boot=20, w_pairing="main")
    assert _w(again.crossings, "mcq.generic", "abstain")["w"] == pytest.approx(0.125)


def test_the_config_defaults_to_the_papers_pairing_and_plasma_and_records_them() -> None:
    config = SweepConfig()
    assert (config.w_accuracy, config.imagenet_c_plasma) == ("main", "independent")
    dumped = config.model_dump(mode="json")
    assert dumped["imagenet_c_plasma"] == "independent"  # the run shows ImageNet-C images
    # an analysis choice at its default, and the plasma of a run without ImageNet-C, stay out
    # of the stored config, so runs stored before them resume (the pairing is recorded beside)
    assert "w_accuracy" not in dumped
    assert SweepConfig(w_accuracy="own").model_dump(mode="json")["w_accuracy"] == "own"
    plain = SweepConfig(controls=("clean", "blank"), imagenet_c_plasma="common")
    assert "imagenet_c_plasma" not in plain.model_dump(mode="json")
    assert "mcq.none" not in config.wordings  # the paper's design: every letter prompt has E
    with pytest.raises(ValueError, match="w_accuracy"):
        SweepConfig(w_accuracy="best")  # type: ignore[arg-type]


# ------------------------------------------------------------------------------ mcq.none


def test_an_abstain_free_wording_asks_the_same_options_without_e(tmp_path: Path) -> None:
    config = SweepConfig(
        scene_ids=("skimage-chelsea",),
        arms=("fog",),
        levels_m=(62.5, 1.953125),
        controls=("clean",),
        tasks=("identify",),
        wordings=("mcq.reason", "mcq.none"),
    )
    questions = plan_sweep(config).questions
    by = {(i.condition, i.level_m, i.wording): i.question for i in questions}
    with_e, without = by[("clean", None, "mcq.reason")], by[("clean", None, "mcq.none")]
    assert without.abstain is None
    assert with_e.abstain == "E"
    assert without.letters == ("A", "B", "C", "D")
    assert without.options == with_e.options[:4]  # the same four options, in the same order
    assert without.correct == with_e.correct
    assert "E." not in without.prompt
    run_sweep(config, tmp_path / "run", progress=False)
    data = load_run_data(tmp_path / "run")
    mine = data.records[data.records["wording"] == "mcq.none"]
    assert len(mine) == 3
    assert mine["abstained"].eq(0.0).all()
    assert mine["internal_conf"].between(0.25, 1.0).all()  # over A-D: floor 1/4
    crossings = scene_bootstrap(data, n_boot=20).crossings
    signals = set(crossings.loc[crossings["wording"] == "mcq.none", "signal"])
    assert signals == {"accuracy", "internal_conf"}  # no abstain rate without the option
    with RunStore.open(tmp_path / "run", read_only=True) as store:
        manifest = store.manifest()
    assert manifest["w_accuracy"] == "main"  # the pairing, recorded beside the config
    assert "imagenet_c_plasma" not in manifest["config"]  # no ImageNet-C image in this run


# ------------------------------------------------------------------------------ Table VI


def test_table_vi_compares_the_verbal_wordings_on_the_same_scenes() -> None:
    # verbal.plain on scenes a, b, c; verbal.percent on a and b only (its first 2 scenes):
    # matched set {a, b}. Clean verbalized confidence: plain a .9, b .7, c .1; percent a .6, b .4
    conf = {
        "verbal.plain": {"a": 0.9, "b": 0.7, "c": 0.1},
        "verbal.percent": {"a": 0.6, "b": 0.4},
    }
    rows = []
    for wording, per_scene in conf.items():
        for scene, value in per_scene.items():
            correct = 1.0 if scene == "a" else 0.0
            row = _row(wording, "clean", math.nan, verbal_conf=value, correct=correct)
            rows.append(row | {"scene": scene})
    from clearsight.sweep.numbers.wordings import wording_table

    table = wording_table(_run_data(rows), "identify")
    clean = table[table["condition"] == "clean"].set_index("wording")
    assert clean.loc["verbal.plain", "n_scenes"] == 2
    # plain on {a, b}: (.9 + .7) / 2 = .8 (with c it would be .5667); percent (.6 + .4) / 2 = .5
    assert clean.loc["verbal.plain", "verbal_conf"] == pytest.approx(0.8)
    assert clean.loc["verbal.percent", "verbal_conf"] == pytest.approx(0.5)
    assert clean.loc["verbal.plain", "accuracy"] == pytest.approx(0.5)  # a right, b wrong
    assert clean.loc["verbal.plain", "n"] == 2


# ------------------------------------------------------------------------------ plasma


def _reference_corrupt():  # type: ignore[no-untyped-def]
    """The ``imagecorruptions`` package's corrupt() (it predates NumPy 2's float_)."""
    setattr(np, "float_", np.float64)  # noqa: B010 - the reference package predates NumPy 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from imagecorruptions import corrupt
    return corrupt


def _own_seed(scene: str, severity: int, seed: int) -> int:
    return derive_seed("imagenet_c_fog", scene, severity, seed)


def test_each_severity_draws_its_own_plasma_from_the_item() -> None:
    from clearsight.scenes.bundled import load_bundled_scene
    from clearsight.sweep.conditions import imagenet_c_stack

    corrupt = _reference_corrupt()
    scene = load_bundled_scene("skimage-coffee")
    stack = imagenet_c_stack(scene, (2, 5), seed=7)
    for got, severity in zip(stack, (2, 5), strict=True):
        np.random.seed(_own_seed(scene.id, severity, 7))  # noqa: NPY002 - the reference's RNG
        np.testing.assert_array_equal(got, corrupt(scene.image, severity, "fog"))
    common = imagenet_c_stack(scene, (2, 5), seed=7, plasma="common")
    for got, severity in zip(common, (2, 5), strict=True):
        np.random.seed(derive_seed("imagenet_c_fog", scene.id, 7))  # noqa: NPY002
        np.testing.assert_array_equal(got, corrupt(scene.image, severity, "fog"))
    assert not np.array_equal(stack[0], common[0])


def test_planned_imagenet_c_items_say_their_plasma_and_common_keeps_the_old_keys() -> None:
    base = {"scene_ids": ("skimage-chelsea",), "arms": ("fog",), "levels_m": (62.5,)}
    base |= {"controls": ("clean", "imagenet_c"), "imagenet_c_severities": (1, 2)}
    independent = plan_sweep(SweepConfig(**base))
    common = plan_sweep(SweepConfig(**base, imagenet_c_plasma="common"))
    nominal = [i for i in independent.questions if i.condition == "imagenet_c"]
    assert {i.plasma for i in nominal} == {"independent"}
    assert {i.plasma for i in independent.questions if i.condition != "imagenet_c"} == {None}
    assert {i.plasma for i in common.questions} == {None}
    assert "plasma" not in common.questions[0].to_json()  # left out of the key: as before
    keys = {i.key for i in independent.questions}
    old = {i.key for i in common.questions}
    assert len(keys & old) == len(keys) - len(nominal)  # only the ImageNet-C keys differ
    veq = [i for u in independent.veq_units for i in u.items]
    assert [i.plasma for i in veq] == ["independent", "independent"]


def test_the_monotone_share_under_independent_plasma_matches_a_hand_count() -> None:
    """V_eq of three scenes at severities 1-5 recomputed from the reference ImageNet-C code
    with each severity's own seed; the share of scenes whose V_eq falls at every step counted
    by hand equals the one the sweep's model-free stage gives."""
    from clearsight.scenes.bundled import load_bundled_scene
    from clearsight.sweep.images.equivalence import monotone_veq_share
    from clearsight.sweep.model_free import run_veq_unit

    corrupt = _reference_corrupt()
    scenes = ("skimage-coffee", "skimage-chelsea", "mpl-grace-hopper")
    config = SweepConfig(scene_ids=scenes, arms=("fog",), levels_m=(62.5,), seed=3)
    falling = 0
    rows = []
    for unit in plan_sweep(config).veq_units:
        scene = load_bundled_scene(unit.scene.id)
        curve = FogGainCurve(scene.image, scene.depth_m)
        by_hand = []
        for severity in (1, 2, 3, 4, 5):
            np.random.seed(_own_seed(scene.id, severity, 3))  # noqa: NPY002
            by_hand.append(curve.equivalent(curve.gain_of(corrupt(scene.image, severity, "fog"))))
        falling += all(b < a for a, b in itertools.pairwise(by_hand))
        records = run_veq_unit(unit)
        got = [r.readouts["v_eq_m"] for r in records]
        assert got == pytest.approx(by_hand, rel=1e-12)
        rows += [
            {"scene": scene.id, "severity": s, "v_eq_m": v}
            for s, v in zip((1, 2, 3, 4, 5), got, strict=True)
        ]
    share = monotone_veq_share(pd.DataFrame(rows))
    assert (share.strict, share.n) == (pytest.approx(falling / 3), 3)


def test_imagenet_c_equivalents_take_one_seed_per_severity() -> None:
    from clearsight.physics import imagenet_c_equivalents

    image = np.full((64, 64, 3), 120, np.uint8)
    image[16:48, 16:48] = 220
    depth = np.full((64, 64), 10.0)
    curve = FogGainCurve(image, depth)
    found = imagenet_c_equivalents(image, depth, [11, 12], (1, 3))
    for eq, severity, seed in zip(found, (1, 3), (11, 12), strict=True):
        fogged = imagenet_c_fog(image, severity, np.random.RandomState(seed))
        assert eq.gain == pytest.approx(curve.gain_of(fogged), rel=1e-12)
    with pytest.raises(InputError, match="2 plasma seeds for 1 severities"):
        imagenet_c_equivalents(image, depth, [1, 2], (1,))


# ------------------------------------------------------------------------------ smaller


def test_a_model_can_be_asked_on_the_first_scenes_only() -> None:
    scenes = ("skimage-chelsea", "skimage-coffee", "mpl-grace-hopper")
    config = SweepConfig(
        scene_ids=scenes,
        models=("observer", "hf:org/costly"),
        model_scenes={"hf:org/costly": 2},
        arms=("fog",),
        levels_m=(62.5,),
        controls=("clean",),
    )
    plan = plan_sweep(config)
    seen = {m: {i.scene.id for i in plan.questions if i.model == m} for m in config.models}
    assert seen == {"observer": set(scenes), "hf:org/costly": set(scenes[:2])}
    assert {(u.model, u.scene.id) for u in plan.units} == {
        *(("observer", s) for s in scenes),
        *(("hf:org/costly", s) for s in scenes[:2]),
    }
    with pytest.raises(ValueError, match="model_scenes"):
        SweepConfig(models=("observer",), model_scenes={"hf:other/model": 3})


def test_physics_sources_hold_no_control_characters() -> None:
    import clearsight.physics as physics
    from clearsight.physics import turbid_coefficients

    doc = turbid_coefficients.__doc__ or ""
    assert r"\beta_k" in doc
    assert r"\frac{3.912}{V}" in doc
    for path in Path(physics.__file__).parent.glob("*.py"):
        text = path.read_text(encoding="utf-8")
        bad = [c for c in text if ord(c) < 32 and c not in "\n\t"]
        assert not bad, f"{path.name}: {sorted(set(map(repr, bad)))}"


def test_fig_9_shows_the_images_of_a_coco_scene(tmp_path: Path) -> None:
    from clearsight.pages.html import render
    from clearsight.sweep.images.examples import sweep_examples
    from clearsight.sweep.page.examples import examples_section
    from fixtures.coco import synthetic_coco

    annotations, images = synthetic_coco(tmp_path / "coco", 2)
    config = SweepConfig(
        scenes="coco",
        coco_annotations=annotations,
        coco_images=images,
        coco_n=2,
        coco_depth_model="assumed:40",
        arms=("fog",),
        levels_m=(62.5, 15.625, 1.953125),
        controls=("clean",),
        tasks=("identify",),
        wordings=("mcq.reason",),
    )
    run_sweep(config, tmp_path / "run", progress=False)
    data = load_run_data(tmp_path / "run")
    assert (data.records["scene.source"] == "coco").all()
    examples = sweep_examples(data, "identify", thumbnails=True)
    assert [label for label, _ in examples.thumbnails] == ["clean", "fog 15.6 m", "fog 1.95 m"]
    html = render(examples_section(examples))  # rendered from what the analysis drew
    assert html.count("class='thumb'") == 3  # clean, 15.6 m and 1.95 m
    assert "not rendered" not in html
    assert "COCO" in html  # the image's attribution


def test_fig_9_shows_the_target_its_stated_rule_chooses() -> None:
    """Issue 46 item 12: Fig. 9's example is the target whose answers lose the most from its
    clean image to the murkiest level (ties: the first in the run's order), not the first
    target. Scene a keeps its answer (loses 0), b and c lose theirs (1 each): b."""
    from clearsight.sweep.images.examples import _example_rows, example_target

    kept = {"a": [1, 1, 1, 1], "b": [1, 1, 1, 0], "c": [1, 1, 0, 0]}  # clean, 100, 10, 1 m
    cells = [("clean", math.nan), *(("fog", v) for v in LEVELS)]
    rows = [
        _row("mcq.reason", cond, level, scene=scene, target=0, correct=float(right[k]))
        for scene, right in kept.items()
        for k, (cond, level) in enumerate(cells)
    ]
    data = _run_data(rows)
    assert example_target(data.records, "fog", min(LEVELS)) == ("b", 0)
    shown, arm, picks = _example_rows(data, "identify")
    assert set(shown["scene"]) == {"b"}
    assert (arm, picks[-1]) == ("fog", ("fog", min(LEVELS)))
    assert len(shown) == 3  # clean, the middle and the murkiest level


@pytest.fixture(scope="module")
def table_vi(tmp_path_factory: pytest.TempPathFactory) -> ReportPaths:
    """The report of two verbal wordings, the second asked on the first scene only."""
    from clearsight.report import build_report

    config = SweepConfig(
        scene_ids=("skimage-chelsea", "mpl-grace-hopper"),
        arms=("fog",),
        levels_m=(62.5, 1.953125),
        controls=("clean",),
        tasks=("identify",),
        wordings=("verbal.plain", "verbal.percent"),
        wording_scenes={"verbal.percent": 1},
    )
    run = tmp_path_factory.mktemp("table-vi") / "run"
    run_sweep(config, run, progress=False)
    return build_report(run, n_boot=20, thumbnails=False)


def test_the_report_renders_table_vi_on_the_shared_scenes(table_vi: ReportPaths) -> None:
    html = table_vi.html.read_text("utf-8")
    section = html.split("Verbalized wordings on matched images (Table VI)")[1]
    # both wordings on the one scene they share: 1 scene, 1 item per cell
    assert section.count("<td>1</td><td>1</td>") >= 4


def test_summary_md_holds_table_vi_as_the_page_shows_it(table_vi: ReportPaths) -> None:
    """summary.md's Table VI has the page's rows, cell for cell (clean and the murkiest
    level: each model x wording)."""
    html = table_vi.html.read_text("utf-8")
    page = html.split("Verbalized wordings on matched images (Table VI)")[1].split("<details")[0]
    page_rows = [
        [unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", tr)]
        for tr in re.findall(r"<tr>(.*?)</tr>", page, flags=re.S)
        if "<td" in tr
    ]
    summary = table_vi.summary_md.read_text("utf-8")
    heading = "## Verbalized wordings on matched images (Table VI) — identification (t2)"
    assert heading in summary
    block = summary.split(heading)[1].split("\n## ")[0]
    lines = [line for line in block.splitlines() if line.startswith("| ")]
    md_rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines[1:]]
    assert lines[0].split("|")[1].strip() == "model"
    assert len(page_rows) == 2 * 2  # clean and 1.95 m, each wording
    assert md_rows == page_rows


def test_a_clean_accuracy_below_its_floor_has_no_crossing_and_no_w() -> None:
    """Issue 46 item 14: accuracy 0 clean, rising in fog, under a chance floor of 1/4. The old
    rule crossed it the wrong way: h = .125, first past at 10 m, t = .125 from 100 m, log10
    V*_acc = 1.875 (75 m) and W = 1.875 - .5 = 1.375 against the internal confidence."""
    rows = [
        _row("mcq.reason", cond, level, correct=acc, internal_conf=conf)
        for (cond, level), acc, conf in zip(
            [("clean", math.nan), *(("fog", v) for v in LEVELS)],
            [0.0, 0.0, 1.0, 1.0],
            [0.9, 0.9, 0.9, 0.25],
            strict=True,
        )
    ]
    cr = scene_bootstrap(_run_data(rows), n_boot=20).crossings
    acc = _w(cr, "mcq.reason", "accuracy")
    assert (acc["clean"], acc["floor"]) == (0.0, 0.25)
    assert math.isnan(acc["v_star_m"])
    assert acc["censored"] == "undefined"
    assert acc["note"] == "clean value not above its floor: nothing to lose, no crossing"
    internal = _w(cr, "mcq.reason", "internal_conf")
    assert internal["v_star_m"] == pytest.approx(10**0.5)  # its own crossing is kept
    assert math.isnan(internal["w"])
    assert internal["w_bound"] == "undetermined"
    # the same curves with a clean accuracy of 1 (above the floor) keep both
    rows[0] = _row("mcq.reason", "clean", math.nan, correct=1.0, internal_conf=0.9)
    kept = scene_bootstrap(_run_data(rows), n_boot=20).crossings
    # h = .625, first past at 100 m (0 < .625) from clean: censored above at 100 m
    assert _w(kept, "mcq.reason", "accuracy")["censored"] == "above"
    assert _w(kept, "mcq.reason", "internal_conf")["w"] == pytest.approx(2 - 0.5)


def test_the_headline_sentence_says_there_is_no_accuracy_to_lose() -> None:
    from clearsight.sweep.page.headline import sweep_sentence

    row = {"task": "identify", "arm": "fog", "v_acc_m": math.nan, "v_acc_censored": "undefined"}
    row |= {"acc_start": 0.0, "acc_half": 0.1, "acc_falls": False}
    sentence = sweep_sentence("m", pd.DataFrame([row]), {"fog": LEVELS})
    assert sentence == (
        "m, identification (t2): in fog its clean accuracy 0.00 is not above the half point "
        "0.10 to its floor: it has no accuracy to lose."
    )


def test_the_main_wording_records_are_one_reply_per_item_and_model() -> None:
    from clearsight.sweep.images.equivalence import dynamic_ranges
    from clearsight.sweep.numbers.wordings import main_wording_records

    rows = []
    for model, wording, accs in [
        ("m", "mcq.reason", [1.0, 1.0, 0.0]),  # the main wording: range 100 pp
        ("m", "mcq.generic", [0.0, 0.0, 0.0]),
        ("v", "verbal.plain", [1.0, 0.0, 0.0]),  # a model asked only verbally: that one
        ("human:x", "mcq.reason", [1.0, 1.0, 1.0]),  # a person: left out
    ]:
        for level, acc in zip(LEVELS, accs, strict=True):
            rows.append(_row(wording, "fog", level, correct=acc) | {"model": model})
    frame = pd.DataFrame(rows)
    kept = main_wording_records(frame)
    assert sorted(set(zip(kept["model"], kept["wording"], strict=True))) == [
        ("m", "mcq.reason"),
        ("v", "verbal.plain"),
    ]
    # per level: 100 m (1 + 1) / 2 = 1, 10 m (1 + 0) / 2 = .5, 1 m 0: range 100 pp; pooled over
    # every record: 3/4, 2/4, 1/4, range 50 pp
    assert dynamic_ranges(kept).physical_pp == pytest.approx(100.0)
    assert dynamic_ranges(frame).physical_pp == pytest.approx(50.0)
