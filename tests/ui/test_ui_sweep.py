"""Human sweep sessions (``clearsight serve RUN --sweep``): a person's items, order, records,
images and pages (over HTTP, and a short session in Chromium), and the report that draws them
beside the models.

The run is a real observer sweep on two photos that ship inside installed wheels (both arms at
three levels, the clean, blank and shuffled controls, a letter and a verbal wording); each test
answers into its own copy of it.
"""

from __future__ import annotations

import dataclasses
import io
import itertools
import re
import shutil
import struct
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image
from starlette.testclient import TestClient

from clearsight.faces import face_of
from clearsight.specs import Options
from clearsight.store import RunStore
from clearsight.sweep.config import SweepConfig
from clearsight.sweep.plan import plan_sweep
from clearsight.sweep.protocol import run_sweep
from clearsight.sweep.references.human import (
    human_items,
    human_readouts,
    human_wording,
    item_png,
    session_order,
)
from clearsight.sweep.references.sessions import HumanSweep
from clearsight.sweep.results import level_label, load_run_data
from clearsight.sweep.specs import SweepItem
from clearsight.sweep.unit import _Images, load_scene
from clearsight.ui import ServeSettings
from clearsight.ui.app import create_app
from clearsight.ui.pages import PASS_COOKIE
from clearsight.validate import InputError

BASE = "http://127.0.0.1"
SCENES = ("skimage-chelsea", "skimage-coffee")
LEVELS = (62.5, 3.90625, 0.5)
CONFIG = SweepConfig(
    scene_ids=SCENES,
    arms=("fog", "water"),
    levels_m=LEVELS,
    controls=("clean", "blank", "shuffled"),
    wordings=("mcq.reason", "verbal.plain"),
    tasks=("identify",),
)
SWEEP = ServeSettings(sweep=True)


@pytest.fixture(scope="module")
def sweep_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The observer's sweep of :data:`CONFIG` (copy it before answering into it)."""
    run = tmp_path_factory.mktemp("human-sweep") / "run"
    run_sweep(CONFIG, run, progress=False)
    return run


@pytest.fixture
def run(sweep_run: Path, tmp_path: Path) -> Path:
    """A writable copy of the module's sweep run."""
    return Path(shutil.copytree(sweep_run, tmp_path / "run"))


@pytest.fixture(scope="module")
def questions() -> list[SweepItem]:
    """The planned questions of :data:`CONFIG` (the observer's)."""
    return plan_sweep(CONFIG).questions


def _person(item: SweepItem) -> tuple[str, int]:
    """A scripted person: right where the box is clear (clean, or at 3.9 m or more), the
    abstain option elsewhere (0.5 m, blank, shuffled); 90 when answering, 10 when not."""
    q = item.question
    sees = item.condition == "clean" or (item.level_m is not None and item.level_m >= 3.9)
    assert q.abstain is not None
    return (q.correct, 90) if sees else (q.abstain, 10)


def _answer_all(sweep: HumanSweep, name: str, limit: int | None = None) -> list[SweepItem]:
    """Answer ``name``'s questions in order as :func:`_person` would (``limit`` of them)."""
    done = []
    for item in sweep.order(name)[:limit]:
        letter, conf = _person(item)
        assert sweep.answer(name, sweep.view(name).token, letter, str(conf))
        done.append(item)
    return done


# ------------------------------------------------------------------------------ items, order


def test_a_persons_items_are_the_models_questions_under_their_name(
    questions: list[SweepItem],
) -> None:
    items = human_items(questions, "ann", "mcq.reason")
    asked = [q for q in questions if q.wording == "mcq.reason"]
    assert len(items) == len(asked) == 27  # 3 targets x (clean + 2 arms x 3 levels + 2)
    as_ann = {
        q.key: dataclasses.replace(q, model="human:ann", model_options=Options({})) for q in asked
    }
    assert items == sorted(as_ann.values(), key=lambda i: i.key)  # the same specs, in key order
    assert all(i.model == "human:ann" and i.model_options == Options({}) for i in items)
    assert not {i.key for i in items} & set(as_ann)  # under keys of their own
    # a question planned for two models is one item of the person's
    assert human_items([*asked, *asked], "ann", "mcq.reason") == items
    assert {i.wording for i in human_items(questions, "ann", "verbal.plain")} == {"verbal.plain"}
    with pytest.raises(InputError, match="a name is"):
        human_items(questions, "../ann", "mcq.reason")


def test_the_wording_defaults_to_the_main_letter_one_and_must_be_asked() -> None:
    assert human_wording(CONFIG) == "mcq.reason"
    assert human_wording(CONFIG.model_copy(update={"wordings": ("verbal.plain",)})) == (
        "verbal.plain"
    )
    assert human_wording(CONFIG, "verbal.plain") == "verbal.plain"
    with pytest.raises(InputError, match=r"asks no 'mcq\.generic'"):
        human_wording(CONFIG, "mcq.generic")


def _runs(values: Iterable[object]) -> int:
    """How many runs of equal neighbours ``values`` has."""
    values = list(values)
    return 1 + sum(a != b for a, b in itertools.pairwise(values))


# derandomized: the interleaving bounds hold for all but a sliver of random permutations (seed
# 1883458 with name "is39r" gives 5 runs), so fixed examples keep them from failing by chance
@settings(max_examples=60, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**31), name=st.from_regex(r"[a-z][a-z0-9]{0,8}", fullmatch=True))
def test_the_order_is_a_seeded_interleaved_permutation(
    questions: list[SweepItem], seed: int, name: str
) -> None:
    items = human_items(questions, name, "mcq.reason")
    order = session_order(items, seed, name)
    assert sorted(i.key for i in order) == sorted(i.key for i in items)  # each item once
    assert session_order(items[::-1], seed, name) == order  # whatever order they come in
    assert session_order(items, seed, name) == order  # deterministic
    assert session_order(items, seed + 1, name) != order  # seeded
    assert session_order(items, seed, name + "x") != order  # one order per person
    # conditions and levels interleaved: far more runs than the 9 a blocked order has
    assert _runs((i.condition, i.level_m) for i in order) >= 15
    assert _runs(i.condition in ("fog", "water") for i in order) >= 6


def test_the_order_is_the_one_documented(questions: list[SweepItem]) -> None:
    """The permutation is numpy's from ``rng_for("sweep.human.order", seed, name)`` applied
    to the items in key order: changing it reorders every stored person's remaining items."""
    from clearsight.seeding import rng_for

    items = sorted(human_items(questions, "ann", "mcq.reason"), key=lambda i: i.key)
    perm = rng_for("sweep.human.order", 3, "ann").permutation(len(items))
    assert session_order(items, 3, "ann") == [items[int(i)] for i in perm]


# ------------------------------------------------------------------------------ records


def test_readouts_have_the_sweeps_columns_and_no_internal_confidence(
    questions: list[SweepItem],
) -> None:
    from clearsight.sweep.readouts import sweep_readouts

    q = questions[0].question
    assert q.abstain is not None
    wrong = next(x for x in q.answer_letters if x != q.correct)
    model_side = sweep_readouts(q, {"candidate_probs": {q.correct: 0.9}})
    right = human_readouts(q, q.correct, 0.8)
    assert set(right) - {"verbal_parsed"} == set(model_side) - {"letter_probs"}
    assert right["correct"] is True
    assert right["abstained"] is False
    assert right["internal_conf"] is None
    assert right["verbal_conf"] == pytest.approx(0.8)
    assert right["chance"] == pytest.approx(q.chance)
    assert right["n_options"] == len(q.answer_letters)
    assert human_readouts(q, wrong, 0.3)["correct"] is False
    abstained = human_readouts(q, q.abstain, 0.1)
    assert abstained["abstained"] is True
    assert abstained["correct"] is False
    with pytest.raises(InputError, match="answer one of"):
        human_readouts(q, "Z", 0.5)
    with pytest.raises(InputError, match=r"in \[0, 1\]"):
        human_readouts(q, q.correct, 1.5)


def test_answers_land_at_once_as_human_sweep_records(run: Path) -> None:
    sweep = HumanSweep(run, SWEEP)
    assert sweep.blocked_reason() is None
    with RunStore.open(run, read_only=True) as store:
        before = store.counts()
    done = _answer_all(sweep, "ann", limit=5)
    with RunStore.open(run, read_only=True) as store:
        after = store.counts()
        stored = [store.record(item.key) for item in done]
    assert after["items"] == before["items"] + 5
    assert after["ok"] == before["ok"] + 5
    assert after["pending"] == before["pending"] == 0  # an item comes with its answer
    for item, record in zip(done, stored, strict=True):
        assert record is not None
        assert record.protocol == "sweep"
        assert record.spec["model"] == "human:ann"
        assert record.spec["level_m"] == item.level_m
        letter, conf = _person(item)
        assert record.readouts["answer"] == letter
        assert record.readouts["correct"] is (letter == item.question.correct)
        assert record.readouts["abstained"] is (letter == item.question.abstain)
        assert record.readouts["verbal_conf"] == pytest.approx(conf / 100)
        assert record.readouts["internal_conf"] is None
        assert record.raw == {
            "source": "clearsight serve --sweep",
            "letter": letter,
            "confidence": pytest.approx(conf / 100),
        }
    frame = load_run_data(run).records
    mine = frame[frame["model"] == "human:ann"]
    assert len(mine) == 5
    assert mine["internal_conf"].isna().all()
    assert set(mine["verbal_conf"].round(2)) <= {0.9, 0.1}
    assert mine["correct"].isin([0.0, 1.0]).all()


def test_a_stale_or_bad_answer_stores_nothing(run: Path) -> None:
    sweep = HumanSweep(run, SWEEP)
    first = sweep.view("ann")
    item = sweep.order("ann")[0]
    assert sweep.answer("ann", first.token, item.question.correct, "70")
    # the same page posted again (a double click): nothing more is stored
    assert not sweep.answer("ann", first.token, item.question.correct, "70")
    assert not sweep.answer("ann", "0" * 32, item.question.correct, "70")
    token = sweep.view("ann").token
    for letter, conf, match in (
        ("Z", "50", "answer one of"),
        ("A", "101", "0-100"),
        ("A", "x", "whole number"),
    ):
        with pytest.raises(InputError, match=match):
            sweep.answer("ann", token, letter, conf)
    assert sweep.view("ann").answered == 1


def test_a_person_who_comes_back_continues_where_they_stopped(run: Path) -> None:
    done = _answer_all(HumanSweep(run, SWEEP), "ann", limit=4)
    again = HumanSweep(run, SWEEP)  # a restarted server: a new secret, the same store
    order = again.order("ann")
    assert order[:4] == done
    view = again.view("ann")
    assert (view.answered, view.total) == (4, 27)
    assert view.prompt == order[4].question.prompt
    assert again.view("bob").answered == 0  # another person starts at their beginning
    assert again.order("bob") != order


def test_the_report_draws_the_person_beside_the_observer(run: Path) -> None:
    from clearsight.report import build_report
    from clearsight.sweep.numbers.crossings import scene_bootstrap

    _answer_all(HumanSweep(run, SWEEP), "ann")
    data = load_run_data(run)
    assert data.models == ["observer", "human:ann"]
    analysis = scene_bootstrap(data, n_boot=50)
    curves = analysis.curves[analysis.curves["model"] == "human:ann"]
    for arm in ("fog", "water"):
        acc = curves[(curves["signal"] == "accuracy") & (curves["condition"] == arm)]
        by_level = dict(zip(acc["x"], acc["estimate"], strict=True))
        assert by_level == pytest.approx({62.5: 1.0, 3.90625: 1.0, 0.5: 0.0})
    crossings = analysis.crossings[analysis.crossings["model"] == "human:ann"]
    for arm in ("fog", "water"):
        row = crossings[(crossings["arm"] == arm) & (crossings["signal"] == "accuracy")].iloc[0]
        assert 0.5 < row["v_star_m"] < 3.90625  # the person fails between 3.9 and 0.5 m
        abstain = crossings[(crossings["arm"] == arm) & (crossings["signal"] == "abstain")]
        assert np.isfinite(abstain["w"].iloc[0])  # W of the abstain rate is defined
    paths = build_report(run, n_boot=50, thumbnails=False)
    html = paths.html.read_text(encoding="utf-8")
    assert "<h4>human:ann — fog</h4>" in html
    assert "<h4>human:ann — water</h4>" in html
    assert "human:ann" in paths.summary_md.read_text(encoding="utf-8")


def test_the_persons_stated_confidence_gets_its_curve_w_and_calibration(run: Path) -> None:
    """A person answering the letter wording states a confidence with the slider: it is read as
    their (verbalized) confidence beside their letter answers. By hand, per arm: accuracy 1 at
    clean, 62.5 and 3.9 m, 0 at 0.5 m and on blank images (the floor): h = .5, crossed half-way
    from 3.9 to 0.5 m in log V; stated confidence .9, .9, .9, .1 with floor 1/4: h = .575,
    crossed at t = (.9 - .575) / .8 = .40625 of that step; so W = (.5 - .40625) log10(.5 /
    3.90625). Every answered item is right at .9: ECE = .1 exactly."""
    from clearsight.report import build_report
    from clearsight.sweep.analysis import analyse_run
    from clearsight.sweep.page.headline import sweep_headline

    _answer_all(HumanSweep(run, SWEEP), "ann")
    analysis = analyse_run(load_run_data(run), n_boot=50)
    curves = analysis.curves
    stated = curves[
        (curves["model"] == "human:ann")
        & (curves["wording"] == "mcq.reason")
        & (curves["signal"] == "verbal_conf")
        & (curves["condition"] == "fog")
    ]
    assert dict(zip(stated["x"], stated["estimate"], strict=True)) == pytest.approx(
        {62.5: 0.9, 3.90625: 0.9, 0.5: 0.1}
    )
    w = 0.09375 * np.log10(0.5 / 3.90625)
    cr = analysis.crossings
    mine = cr[(cr["model"] == "human:ann") & (cr["signal"] == "verbal_conf")]
    assert set(mine["arm"]) == {"fog", "water"}
    assert mine["w"].to_list() == pytest.approx([w, w])
    assert set(mine["w_accuracy"]) == {"mcq.reason"}
    head = analysis.headline
    row = head[(head["model"] == "human:ann") & (head["arm"] == "fog")].iloc[0]
    assert row["verbal"] == "mcq.reason"
    assert row["w_verbal_conf"] == pytest.approx(w)
    assert row["ece_verbal"] == pytest.approx(0.1)
    assert np.isnan(row["ece_internal"])
    assert np.isnan(row["w_internal_conf"])
    calibration = analysis.tasks["identify"].calibration
    person = calibration[calibration["model"] == "human:ann"]
    assert set(person["signal"]) == {"verbal_conf"}
    frame, _ = sweep_headline(head, analysis.data.levels)
    cell = frame.loc[(frame["model"] == "human:ann") & (frame["arm"] == "fog")]
    assert cell["W verbalized confidence"].iloc[0].startswith(f"{w:+.2f}")  # beside the models
    md = build_report(run, n_boot=50, thumbnails=False).summary_md.read_text(encoding="utf-8")
    assert "the confidence they state with the slider" in md


def test_a_verbal_wording_gives_the_persons_confidence_its_curve(run: Path) -> None:
    from clearsight.sweep.numbers.crossings import scene_bootstrap

    sweep = HumanSweep(run, ServeSettings(sweep=True, wording="verbal.plain"))
    assert {i.wording for i in sweep.order("ann")} == {"verbal.plain"}
    _answer_all(sweep, "ann")
    analysis = scene_bootstrap(load_run_data(run), n_boot=20)
    conf = analysis.curves[
        (analysis.curves["model"] == "human:ann")
        & (analysis.curves["signal"] == "verbal_conf")
        & (analysis.curves["condition"] == "fog")
    ]
    assert dict(zip(conf["x"], conf["estimate"], strict=True)) == pytest.approx(
        {62.5: 0.9, 3.90625: 0.9, 0.5: 0.1}
    )


def test_a_rerun_of_the_sweep_keeps_the_persons_records(run: Path) -> None:
    _answer_all(HumanSweep(run, SWEEP), "ann", limit=3)
    summary = run_sweep(CONFIG, run, progress=False)
    assert sum(s.units for s in summary.stages.values()) == 0  # nothing to run again
    assert (load_run_data(run).records["model"] == "human:ann").sum() == 3


# ------------------------------------------------------------------------------ images


def _chunks(png: bytes) -> list[bytes]:
    """The chunk types of a PNG file."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    out, at = [], 8
    while at < len(png):
        (length,) = struct.unpack(">I", png[at : at + 4])
        out.append(png[at + 4 : at + 8])
        at += 12 + length
    return out


def test_the_image_is_the_models_pixels_and_nothing_else(questions: list[SweepItem]) -> None:
    items = human_items(questions, "ann", "mcq.reason")
    scene = load_scene(items[0].scene, CONFIG.coco_depth_model)
    of_scene = [q for q in questions if q.scene.id == scene.id]
    model_images = _Images(scene, of_scene)  # every level of the unit rendered together
    seen = set()
    for item in items:
        if item.scene.id != scene.id or item.condition in seen:
            continue
        seen.add(item.condition)
        png = item_png(item, CONFIG.coco_depth_model)
        chunks = _chunks(png)
        assert chunks[0] == b"IHDR"
        assert chunks[-1] == b"IEND"
        assert set(chunks) == {b"IHDR", b"IDAT", b"IEND"}  # pixels only: no text, no time
        shown = (
            None if item.shown is None else load_scene(item.shown.scene, CONFIG.coco_depth_model)
        )
        pixels = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))
        np.testing.assert_array_equal(pixels, model_images.get(item, shown))
    assert seen == {"clean", "fog", "water", "blank", "shuffled"}


# ------------------------------------------------------------------------------ pages


def _client(run: Path, settings: ServeSettings = SWEEP) -> tuple[TestClient, HumanSweep, str]:
    sweep = HumanSweep(run, settings)
    client = TestClient(create_app(run, settings, sweep), base_url=BASE, follow_redirects=False)
    page = client.get("/sweep")
    assert page.status_code == 200
    token = re.search(r'name="csrf-token" content="([^"]+)"', page.text)
    assert token is not None
    return client, sweep, token.group(1)


def _leaks(text: str, item: SweepItem) -> list[str]:
    """What of ``item``'s condition, level or scene ``text`` names, or a mark on an option
    (the right option's text is one of the options, so it must look like every other)."""
    found = []
    words = ("fog", "water", "clean", "blank", "shuffled", "imagenet", "level", "correct")
    for word in (*words, "checked", "selected", "gold", item.scene.id):
        if re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text, re.IGNORECASE):
            found.append(word)
    for level in LEVELS:
        for shown in {str(level), level_label(level), f"{level:g}"}:
            if re.search(rf"(?<![\w.]){re.escape(shown)}(?![\w.])", text):
                found.append(shown)
    return found


def test_pages_reveal_nothing_but_the_question_and_its_pixels(run: Path) -> None:
    client, sweep, csrf = _client(run)
    probe = sweep.order("ann")[0]  # the check itself finds what it looks for
    assert _leaks("<p>water at 3.9 m</p><input checked>", probe) == ["water", "checked", "3.9"]
    started = client.post("/sweep", data={"csrf": csrf, "name": "ann"})
    assert started.status_code == 303
    assert started.headers["location"] == "/sweep/ann"
    cookie = started.headers["set-cookie"]
    assert "Path=/sweep/ann" in cookie
    assert "HttpOnly" in cookie
    assert "SameSite=strict" in cookie
    for item in sweep.order("ann")[:6]:
        page = client.get("/sweep/ann")
        assert page.status_code == 200
        # the question is shown as the model sees it, options in its order, none marked
        assert item.question.prompt.splitlines()[0] in page.text
        options = re.findall(
            r'<li><label><input type="radio" name="letter" value="([A-Z])" id="letter-\1" '
            r"required> \(\1\) ([^<]*)</label></li>",
            page.text,
        )
        q = item.question
        assert options == list(zip(q.letters, q.options, strict=True))  # alike, in order
        assert page.text.count("<li>") == len(q.letters)
        assert _leaks(page.text, item) == [], page.text
        src = re.search(r'<img src="([^"]+)" alt="([^"]+)"', page.text)
        assert src is not None
        assert re.fullmatch(r"/sweep/ann/image/[0-9a-f]{32}", src.group(1))
        assert _leaks(src.group(2), item) == []
        image = client.get(src.group(1))
        assert image.status_code == 200
        assert image.headers["content-type"] == "image/png"
        assert image.content == item_png(item, CONFIG.coco_depth_model)
        assert set(re.findall(r'<input [^>]*name="(\w+)"', page.text)) == {
            "csrf",
            "item",
            "letter",
            "confidence",
        }
        held = re.search(r'name="item" value="([0-9a-f]{32})"', page.text)
        assert held is not None
        assert held.group(1) == src.group(1).rsplit("/", 1)[1]
        for value in client.cookies.values():
            assert _leaks(value, item) == []
        letter, conf = _person(item)
        done = client.post(
            "/sweep/ann/answer",
            data={"csrf": csrf, "item": held.group(1), "letter": letter, "confidence": str(conf)},
        )
        assert done.status_code == 303
        assert done.headers["location"] == "/sweep/ann"
        assert client.get(src.group(1)).status_code == 404  # an answered item's image is gone
    assert "6 of 27 answered" in client.get("/sweep/ann").text
    # a player reaches no record, no file, no probe page
    for path in ("/records", "/files", "/files/run.sqlite", "/play", "/session/x"):
        assert client.get(path).status_code == 404, path


def test_a_persons_pages_need_the_browser_that_started_them(run: Path) -> None:
    client, sweep, csrf = _client(run)
    client.post("/sweep", data={"csrf": csrf, "name": "ann"})
    token = sweep.view("ann").token
    other = TestClient(client.app, base_url=BASE, follow_redirects=False)
    assert other.get("/sweep/ann").status_code == 404
    assert other.get(f"/sweep/ann/image/{token}").status_code == 404
    posted = other.post(
        "/sweep/ann/answer", data={"csrf": csrf, "item": token, "letter": "A", "confidence": "50"}
    )
    assert posted.status_code == 404
    # ann's pass opens nothing of bob's
    other.cookies.set(PASS_COOKIE, client.cookies[PASS_COOKIE], path="/sweep/bob")
    assert other.get("/sweep/bob").status_code == 404
    assert sweep.view("ann").answered == 0
    # the same name from a new browser resumes (and gets its own pass)
    other.post("/sweep", data={"csrf": csrf, "name": "ann"})
    assert other.get("/sweep/ann").status_code == 200
    bad = client.post("/sweep", data={"csrf": csrf, "name": "<b>x"})
    assert bad.status_code == 400
    assert "<b>x" not in bad.text


def test_sweep_mode_refuses_what_is_not_a_sweep_run(tmp_path: Path) -> None:
    missing = HumanSweep(tmp_path / "none", SWEEP)
    assert "holds no run" in str(missing.blocked_reason())
    probe = tmp_path / "probe"
    with RunStore.open(probe) as store:
        store.begin_run({"config": {}, "protocol": "probe"})
    client, _, csrf = _client(probe)
    assert "is not a sweep run" in client.get("/sweep").text
    assert client.post("/sweep", data={"csrf": csrf, "name": "ann"}).status_code == 400
    broken = tmp_path / "broken"
    with RunStore.open(broken) as store:
        store.begin_run({"config": {"levels_m": [1.0, 2.0]}, "protocol": "sweep"})
    reason = str(HumanSweep(broken, SWEEP).blocked_reason())
    assert "the run's stored sweep config" in reason
    assert "levels_m" in reason
    serve = face_of(SWEEP.hosted).serve  # what `clearsight serve --sweep` makes: refused at once
    assert serve is not None
    assert serve.sessions is not None
    with pytest.raises(InputError, match="is not a sweep run"):
        serve.sessions(probe, SWEEP)


def test_serving_holds_the_runs_writer_lock(run: Path) -> None:
    from clearsight.driver import RunLocked, run_lock

    sweep = HumanSweep(run, SWEEP)
    with sweep.writing():
        with pytest.raises(RunLocked), run_lock(run):
            pass
        with pytest.raises(RunLocked):
            run_sweep(CONFIG, run, progress=False)
    with run_lock(run):  # released when the server stops
        held = HumanSweep(run, SWEEP)
        with held.writing():
            assert "another clearsight process" in str(held.blocked_reason())
            with pytest.raises(InputError, match="another clearsight process"):
                held.start("ann")


def test_the_serve_command_checks_the_sweep_options(
    run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import uvicorn
    from typer.testing import CliRunner

    from clearsight.cli import app

    served: list[TestClient] = []
    monkeypatch.setattr(  # the server runs on the socket serve bound first
        uvicorn.Server,
        "run",
        lambda server, sockets=None: served.append(TestClient(server.config.app, base_url=BASE)),
    )
    runner = CliRunner()
    ok = runner.invoke(app, ["serve", str(run), "--sweep"])
    assert ok.exit_code == 0, ok.output
    assert "human sweep sessions" in ok.output
    (page,) = served
    assert page.get("/sweep").status_code == 200
    assert page.get("/play").status_code == 404
    both = runner.invoke(app, ["serve", str(run), "--sweep", "--operator"])
    assert both.exit_code == 2
    assert "choose one" in both.output
    stray = runner.invoke(app, ["serve", str(run), "--wording", "mcq.reason"])
    assert stray.exit_code == 2
    assert "sweep mode only" in stray.output
    missing = tmp_path / "missing"
    none = runner.invoke(app, ["serve", str(missing), "--sweep"])
    assert none.exit_code == 2
    assert "holds no run" in none.output
    assert not missing.exists()
    unasked = runner.invoke(app, ["serve", str(run), "--sweep", "--wording", "mcq.generic"])
    assert unasked.exit_code == 2
    assert "asks no 'mcq.generic'" in unasked.output


# ------------------------------------------------------------------------------ the browser

CHROMIUM = Path("/usr/bin/chromium")


@pytest.fixture
def served(run: Path) -> Iterator[tuple[str, HumanSweep]]:
    """A uvicorn server of ``run`` in sweep mode in a thread on a free loopback port."""
    from fixtures.live_server import live_server

    sweep = HumanSweep(run, SWEEP)
    with sweep.writing(), live_server(create_app(run, SWEEP, sweep)) as url:
        yield url, sweep


@dataclasses.dataclass
class _Seen:
    """What a browser met: each page's HTML with the item it showed, every address it asked
    for, and every script error or console error."""

    pages: list[tuple[str, SweepItem | None]] = dataclasses.field(default_factory=list)
    urls: list[str] = dataclasses.field(default_factory=list)
    problems: list[str] = dataclasses.field(default_factory=list)


def _visit(browser: Any, base: str, order: list[SweepItem], first: int, seen: _Seen) -> None:
    """A fresh browser context (no cookie) starts as ``tester`` and answers ``order[first]``
    and the next two as :func:`_person` would, reloading the page before the second answer."""
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(15_000)
    page.on("request", lambda request: seen.urls.append(request.url))
    page.on("pageerror", lambda exc: seen.problems.append(str(exc)))
    page.on("console", lambda msg: seen.problems.append(msg.text) if msg.type == "error" else None)
    page.goto(f"{base}/")
    seen.pages.append((page.content(), None))
    page.fill("#name", "tester")
    with page.expect_navigation():
        page.click("#start-button")
    assert page.url == f"{base}/sweep/tester"
    for i in range(first, first + 3):
        item = order[i]
        assert page.inner_text("#progress") == f"{i} of 27 answered"
        if i == first + 1:  # a reload shows the same question
            page.reload()
        assert page.evaluate("document.getElementById('photo').naturalWidth") > 0
        assert page.inner_text("#prompt") == item.question.prompt
        seen.pages.append((page.content(), item))
        letter, conf = _person(item)
        page.check(f"#letter-{letter}")
        page.eval_on_selector(
            "#confidence",
            f"el => {{ el.value = '{conf}'; el.dispatchEvent(new Event('input')); }}",
        )
        assert page.inner_text("#confidence-value") == str(conf)  # the script ran
        with page.expect_navigation():
            page.click("#answer-button")
    for cookie in context.cookies():
        assert cookie["httpOnly"]
        assert cookie["path"] == "/sweep/tester"
        assert _leaks(f"{cookie['name']}={cookie['value']}", order[0]) == []
    context.close()


@pytest.mark.skipif(not CHROMIUM.exists(), reason="no /usr/bin/chromium: run `make browser`")
def test_browser_a_person_answers_a_short_session(
    served: tuple[str, HumanSweep], run: Path
) -> None:
    """Chromium plays a person answering six questions (reloading, and coming back in a new
    browser half-way): the records land, the report shows the person, and no page, address or
    cookie of the session names a level, an arm or a marked answer."""
    playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed")
    from clearsight.report import build_report

    base, sweep = served
    order = sweep.order("tester")
    seen = _Seen()
    with playwright_api.sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox"]
        )
        try:
            _visit(browser, base, order, 0, seen)
            _visit(browser, base, order, 3, seen)  # comes back in another browser
        finally:
            browser.close()
    problems, pages, urls = seen.problems, seen.pages, seen.urls
    assert problems == []  # no script error, no CSP violation
    assert len(pages) == 8
    for html, item in pages:
        assert _leaks(html, item or order[0]) == [], html
    allowed = re.compile(
        r"/(|sweep|sweep/tester|sweep/tester/answer|sweep/tester/image/[0-9a-f]{32}|"
        r"static/app\.(css|js))"
    )
    for url in urls:
        assert allowed.fullmatch(url.removeprefix(base)), url
    with RunStore.open(run, read_only=True) as store:
        stored = [store.record(item.key) for item in order[:7]]
    for item, record in zip(order[:6], stored, strict=False):
        assert record is not None
        assert record.spec["model"] == "human:tester"
        letter, conf = _person(item)
        assert record.readouts["answer"] == letter
        assert record.readouts["verbal_conf"] == pytest.approx(conf / 100)
    assert stored[6] is None  # the seventh is still to come
    paths = build_report(run, n_boot=20, thumbnails=False)
    html = paths.html.read_text(encoding="utf-8")
    arms = {item.condition for item in order[:6]} & {"fog", "water"}
    assert arms
    for arm in arms:
        assert f"<h4>human:tester — {arm}</h4>" in html
