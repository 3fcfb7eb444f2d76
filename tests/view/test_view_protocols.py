"""``clearsight view`` over a grounding run and a probe run (issue 43): each point lists exactly
the records the analysis counts in it, an item's page shows its trajectory spans or its
conversation's turns, bad input is one clear message.

The grounding run is a whole run on the scripted model of
:func:`fixtures.grounding_runs.masked_script` (confidence 9 with the rationale visible, 3 with
it hidden, 6 in between); the probe run is :func:`fixtures.probe_runs.probe_config`'s two
bundled questions, direct and BP, two runs each.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image
from starlette.testclient import TestClient
from typer.testing import CliRunner

from clearsight.cli import app as cli_app
from clearsight.faces.viewing import Query, RunView
from clearsight.grounding import GroundingConfig, run_grounding
from clearsight.grounding.results import load_grounding_results
from clearsight.grounding.specs import ELICIT
from clearsight.grounding.view import GroundingRunView, word_diff
from clearsight.probe.instances import Instance, instance_image
from clearsight.probe.protocol import run_probe
from clearsight.probe.results import load_probe_results
from clearsight.probe.view import ProbeRunView
from clearsight.store import RunStore
from clearsight.validate import InputError
from clearsight.view import open_views
from clearsight.view.app import create_view_app
from fixtures.grounding_runs import masked_script
from fixtures.probe_runs import probe_config

ALL = 10_000
#: Tolerance of a point's value (a mean over SQL sums) against the analysis frame's mean.
TOL = 1e-12


def _grounding_config(root: Path) -> GroundingConfig:
    """The grounding run's design, its scripted model's script written under ``root``."""
    return GroundingConfig(
        model=f"scripted:{masked_script(root)}",
        generator=None,
        n_problems=3,
        variation_mode="handwritten",
        n_boot=100,
    )


@pytest.fixture(scope="module")
def grounding_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A whole grounding run on three bundled problems (module docstring)."""
    root = tmp_path_factory.mktemp("grounding-view")
    run_grounding(_grounding_config(root), root / "run", progress=False)
    return root / "run"


@pytest.fixture(scope="module")
def probe_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small probe run of :func:`fixtures.probe_runs.probe_config`."""
    root = tmp_path_factory.mktemp("probe-view")
    run_probe(probe_config(root), root / "run", progress=False)
    return root / "run"


def _client(run: Path) -> TestClient:
    return TestClient(create_view_app(open_views([run])), base_url="http://127.0.0.1")


def _keys(view: RunView, filters: dict[str, str]) -> set[str]:
    return {row.key for row in view.listing(Query(filters=filters, per_page=ALL)).rows}


def test_grounding_points_list_exactly_the_elicitations_the_analysis_counts(
    grounding_run: Path,
) -> None:
    view = GroundingRunView(grounding_run)
    elicitations = load_grounding_results(grounding_run).elicitations
    cells = elicitations.groupby(["benchmark", "variant"])["expected"]
    with RunStore.open(grounding_run, read_only=True) as store:
        stored = [(r.key, r.spec) for r in store.iter_records("ok", kind=ELICIT)]
    points = view.points()
    assert sum(p.n for p in points) == len(elicitations) == len(stored) > 0
    assert {(p.filters["benchmark"], p.filters["variant"]) for p in points} == set(cells.groups)
    for point in points:
        cell = cells.get_group((point.filters["benchmark"], point.filters["variant"]))
        assert point.n == len(cell)
        assert point.value == pytest.approx(float(cell.mean()), abs=TOL)
        behind = {
            key
            for key, spec in stored
            if spec["problem"]["benchmark"] == point.filters["benchmark"]
            and spec["variant"] == point.filters["variant"]
        }
        assert _keys(view, dict(point.filters)) == behind
    by_variant = {p.x_label: p.value for p in points if p.x_label.startswith("self/r")}
    assert by_variant["self/r0.00"] == pytest.approx(0.9, abs=TOL)
    assert by_variant["self/r1.00"] == pytest.approx(0.3, abs=TOL)


def _one(view: RunView, variant: str) -> str:
    rows = view.listing(Query(filters={"variant": variant}, per_page=1)).rows
    assert rows, variant
    return rows[0].key


def test_a_grounding_item_page_shows_its_spans_the_masked_rationale_and_the_edit(
    grounding_run: Path,
) -> None:
    view, client = GroundingRunView(grounding_run), _client(grounding_run)
    masked = client.get(f"/run/0/item/{_one(view, 'self/r1.00')}")
    assert masked.status_code == 200
    # the vision and reasoning spans are marked, the answer not
    assert masked.text.count('<mark class="masked" title="masked: 100% of its tokens hidden">') == 2
    assert "<b>answer:</b>" in masked.text
    assert "self/r0.00: expected 0.900" in masked.text  # the distribution with it visible
    assert 'id="image"' not in masked.text
    detail = view.detail(_one(view, "bench/vision/bad"))
    assert detail is not None
    assert not detail.image
    (edit,) = [s for s in detail.sections if s.title.startswith("The edit of the vision span")]
    assert {s.mark for s in edit.spans} == {"", "removed", "added"}
    edited = client.get(f"/run/0/item/{detail.key}").text
    assert '<mark class="removed"' in edited
    assert '<mark class="added"' in edited
    assert [c.title.split(":")[0] for c in detail.charts] == [
        "self/r0.00",
        "self/r1.00",
        "bench/good",
    ]
    assert client.get(f"/run/0/image/{detail.key}.png").status_code == 404


def test_probe_points_list_exactly_the_conversations_the_analysis_counts(
    probe_run: Path,
) -> None:
    view = ProbeRunView(probe_run)
    frame = load_probe_results(probe_run).transcripts
    setting = ["dataset", "reasoner", "strategy", "sensor", "k", "signal"]
    frame = frame.assign(k=frame["k"].astype(str))
    cells = frame.groupby(setting)["correct"]
    points = view.points()
    assert sum(p.n for p in points) == len(frame) > 0
    assert len(points) == cells.ngroups
    for point in points:
        cell = cells.get_group(tuple(point.filters[name] for name in setting))
        assert point.n == len(cell)
        assert point.value == pytest.approx(float(cell.astype(float).mean()), abs=TOL)
        listing = view.listing(Query(filters=dict(point.filters), per_page=ALL))
        assert listing.total == point.n == len(listing.rows)
        assert {r.labels["instance"] for r in listing.rows} == set(
            frame.loc[cell.index, "instance_id"]
        )


def test_a_probe_item_page_shows_the_turns_and_the_image(probe_run: Path) -> None:
    view, client = ProbeRunView(probe_run), _client(probe_run)
    key = _one_of(view, {"strategy": "bp"})
    page = client.get(f"/run/0/item/{key}")
    assert page.status_code == 200
    text = page.text
    assert "Turn 1" in text
    assert "Turn 2" in text
    assert "coffee | Coffee. | tea | coffee | a drink" in text  # the sensor's K=5 samples
    assert "the sensor&#39;s K=5 samples" in text
    assert "Belief: B=0.9" in text
    assert "(B) coffee (gold)" in text
    detail = view.detail(key)
    assert detail is not None
    stored = detail.labels["instance_id"]
    with RunStore.open(probe_run, read_only=True) as store:
        record = store.record(key)
    assert record is not None
    assert record.spec["instance"]["id"] == stored
    instance = record.spec["instance"]
    expected = instance_image(Instance(**{**instance, "options": tuple(instance["options"])}))
    png = client.get(f"/run/0/image/{key}.png")
    assert png.status_code == 200
    shown = np.asarray(Image.open(io.BytesIO(png.content)).convert("RGB"))
    assert np.array_equal(shown, expected)


def _one_of(view: RunView, filters: dict[str, str]) -> str:
    rows = view.listing(Query(filters=filters, per_page=1)).rows
    assert rows
    return rows[0].key


def test_bad_input_to_a_grounding_or_probe_view_is_one_clear_message(
    grounding_run: Path, probe_run: Path
) -> None:
    page = _client(grounding_run).get("/run/0/items?variant=self/r9")
    assert page.status_code == 400
    assert "variant &#39;self/r9&#39; does not exist in this run: it has &#39;self/r0.00&#39;" in (
        page.text
    )
    assert _client(probe_run).get("/run/0/items?strategy=nope").status_code == 400
    assert _client(probe_run).get("/run/0/item/" + "0" * 64).status_code == 404
    with pytest.raises(InputError, match="is a probe run, not a grounding run"):
        GroundingRunView(probe_run)
    with pytest.raises(InputError, match="is a grounding run, not a probe run"):
        ProbeRunView(grounding_run)
    # an elicitation states no outcome of its own: an outcome filter lists none
    assert GroundingRunView(grounding_run).listing(Query(outcome="correct")).total == 0


def test_the_command_line_opens_a_grounding_and_a_probe_run_or_says_why_not(
    grounding_run: Path, tmp_path: Path
) -> None:
    assert [v.title.split()[-1] for v in open_views([grounding_run])] == ["(grounding)"]
    result = CliRunner().invoke(cli_app, ["view", str(tmp_path / "nothing")])
    assert result.exit_code == 2
    assert result.output.startswith("error: ")
    assert result.output.count("\n") == 1


_WORDS = st.lists(st.sampled_from(["a", "b", "c", "2", "0", "x"]), max_size=12)


@given(_WORDS, _WORDS)
def test_a_word_diff_keeps_both_sides(before: list[str], after: list[str]) -> None:
    spans = word_diff(" ".join(before), " ".join(after))
    old = " ".join(s.text for s in spans if s.mark != "added" and s.text).split()
    new = " ".join(s.text for s in spans if s.mark != "removed" and s.text).split()
    assert (old, new) == (before, after)
    assert {s.mark for s in spans} <= {"", "removed", "added"}


def test_a_grounding_bundle_has_its_item_pages_and_no_image(
    grounding_run: Path, tmp_path: Path
) -> None:
    site = tmp_path / "site"
    result = CliRunner().invoke(cli_app, ["view", str(grounding_run), "--bundle", str(site)])
    assert result.exit_code == 0, result.output
    pages = sorted((site / "item").glob("*.html"))
    assert len(pages) == len(GroundingRunView(grounding_run).listing(Query()).rows) > 0
    assert not (site / "image").exists()
    masked = [p.read_text() for p in pages if "<td>self/r1.00</td>" in p.read_text()]
    assert masked
    assert all('<mark class="masked"' in text for text in masked)
    assert 'id="image"' not in pages[0].read_text()


def test_a_hesitation_cut_shows_the_sentence_after_the_cut(tmp_path: Path) -> None:
    """A trajectory whose reasoning hesitates ("Wait, ..."): the pre side's page shows the
    post side's distribution and the hesitating sentence as the words the cut adds."""
    from clearsight.grounding.problems.bundled import bundled_problems

    (problem,) = bundled_problems(1)
    solution = problem.solution or {}
    wait = "Wait, let me check the boxes again."
    text = f" {solution['observation']}\nReasoning: {wait} {solution['reasoning']}\nAnswer: 49"
    script = tmp_path / "model.jsonl"
    entries = [
        {"hidden": {"sequence_probs": {"7": 1.0}}},
        {"match": problem.question, "texts": [text]},
    ]
    script.write_text("\n".join(json.dumps(e) for e in entries) + "\n")
    config = GroundingConfig(
        model=f"scripted:{script}",
        generator=None,
        n_problems=1,
        mask_ratios=(0.0,),
        pairs=False,
        variation=False,
        n_boot=100,
    )
    run_grounding(config, tmp_path / "run", progress=False)
    view = GroundingRunView(tmp_path / "run")
    detail = view.detail(_one(view, "hesitation/pre"))
    assert detail is not None
    assert [c.title.split(":")[0] for c in detail.charts] == ["self/r0.00", "hesitation/post"]
    (cut,) = [s for s in detail.sections if s.title.startswith("The hesitation cut")]
    assert "'wait'" in cut.title
    assert " ".join(s.text for s in cut.spans if s.mark == "added").startswith(wait)
    assert not [s for s in cut.spans if s.mark == "removed"]


def test_long_axis_labels_are_ticked_by_number_so_none_overlap(grounding_run: Path) -> None:
    """A grounding curve's variants (``bench/reasoning/bad``...) are wider than a point's
    place: its axis is ticked 1, 2, ... and the table names each number's variant."""
    page = _client(grounding_run).get("/run/0/").text
    view = GroundingRunView(grounding_run)
    curve = view.points()[0].curve
    labels = [p.x_label for p in view.points() if p.curve == curve]
    ticks = re.findall(r'class="tick">([^<]*)</text>', page)
    assert ticks[: len(labels)] == [str(i) for i in range(1, len(labels) + 1)]
    for number, label in enumerate(labels, start=1):
        assert f"<tr><td>{number} · {label}</td>" in page


def test_an_elicitation_is_seen_beside_its_variants_and_matched_across_runs(
    grounding_run: Path, tmp_path: Path
) -> None:
    from clearsight.grounding.compare import compare_grounding

    view = GroundingRunView(grounding_run)
    with RunStore.open(grounding_run, read_only=True) as store:
        specs = {r.key: r.spec for r in store.iter_records("ok", kind=ELICIT, raw=False)}
    key = _one(view, "bench/vision/bad")
    problem = specs[key]["problem"]["id"]
    assert [g.name for g in view.groups(key)] == ["variants", "records"]
    variants = view.related(key, "variants")
    assert variants is not None
    same = {k for k, spec in specs.items() if spec["problem"]["id"] == problem}
    assert {m.key for m in variants.members} == same
    labels = [m.label for m in variants.members]
    assert labels == [specs[m.key]["variant"] for m in variants.members]
    benchmark = specs[key]["problem"]["benchmark"]
    curve = [p.x_label for p in view.points() if p.filters["benchmark"] == benchmark]
    assert labels == [x for x in curve if x in labels]  # in the curves' order
    page = _client(grounding_run).get(f"/run/0/related/{key}/variants")
    assert page.status_code == 200
    assert re.findall(r'data-key="([0-9a-f]{64})"', page.text) == [m.key for m in variants.members]
    # the same design, another model (its script elsewhere): other keys, the same items
    run_grounding(_grounding_config(tmp_path), tmp_path / "other", progress=False)
    other = GroundingRunView(tmp_path / "other")
    pairs = compare_grounding(grounding_run, tmp_path / "other", tolerance=0.5, n_boot=10).pairs
    matched = dict(zip(pairs["key_a"], pairs["key_b"], strict=True))
    assert len(matched) > 0
    assert not set(matched) & set(matched.values())
    for each in specs:
        identity = view.identity(each)
        assert identity is not None
        assert other.find(identity) == matched.get(each)
    both = TestClient(
        create_view_app(open_views([grounding_run, tmp_path / "other"])),
        base_url="http://127.0.0.1",
    )
    across = both.get(f"/run/0/across/{key}")
    assert re.findall(r'data-key="([0-9a-f]{64})"', across.text) == [key, matched[key]]
