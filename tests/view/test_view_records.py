"""More record kinds as items of ``clearsight view``: a grounding run's own trajectories and
judge verdicts, a probe run's belief probes. Each has its page, holding what its record holds,
and is reached from the items it belongs to (an elicitation of its problem; its
conversation)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from clearsight.driver import Execution
from clearsight.faces.viewing import Query
from clearsight.grounding import GroundingConfig, run_grounding
from clearsight.grounding.face.sides import records_of
from clearsight.grounding.specs import ELICIT, JUDGE, TRAJECTORY
from clearsight.grounding.view import GroundingRunView
from clearsight.probe.posthoc.protocol import AnalysisConfig, run_probe_analysis
from clearsight.probe.protocol import run_probe
from clearsight.probe.specs import BELIEF_PROTOCOL
from clearsight.probe.view import ProbeRunView
from clearsight.store import RunStore
from clearsight.view import open_views
from clearsight.view.app import create_view_app
from fixtures.grounding_runs import masked_script, write_grounding_run
from fixtures.probe_runs import analysis_judge, probe_config

_COLUMN = re.compile(r'<section class="column" data-key="([0-9a-f]{64})">')


def _client(run: Path) -> TestClient:
    return TestClient(create_view_app(open_views([run])), base_url="http://127.0.0.1")


def test_an_elicitation_reaches_its_own_trajectory_which_has_its_page(tmp_path: Path) -> None:
    config = GroundingConfig(
        model=f"scripted:{masked_script(tmp_path)}", generator=None, n_problems=2, n_boot=100
    )
    run = tmp_path / "run"
    run_grounding(config, run, progress=False)
    with RunStore.open(run, read_only=True) as store:
        own = {r.spec["problem"]["id"]: r for r in store.iter_records("ok", kind=TRAJECTORY)}
        elicited = list(store.iter_records("ok", kind=ELICIT, raw=False))
    assert len(own) == 2
    view, client = GroundingRunView(run), _client(run)
    for elicitation in elicited[:: max(1, len(elicited) // 6)]:
        assert [g.name for g in view.groups(elicitation.key)] == ["variants", "records"]
        records = view.related(elicitation.key, "records")
        assert records is not None
        trajectory = own[elicitation.spec["problem"]["id"]]
        assert [(m.label, m.key) for m in records.members] == [
            (f"elicitation · {elicitation.spec['variant']}", elicitation.key),
            ("own trajectory", trajectory.key),
        ]
    trajectory = next(iter(own.values()))
    detail = view.detail(trajectory.key)
    assert detail is not None
    (spans,) = detail.sections
    assert {s.label: s.text for s in spans.spans} == trajectory.readouts["trajectory"]
    assert detail.values["correct"] == str(trajectory.readouts["correct"])
    page = client.get(f"/run/0/item/{trajectory.key}")
    assert page.status_code == 200
    assert 'href="../related/' in page.text  # its problem's records, reached back
    key = elicited[0].key
    side = client.get(f"/run/0/related/{key}/records")
    assert _COLUMN.findall(side.text) == [key, own[elicited[0].spec["problem"]["id"]].key]


def test_a_judge_verdict_has_its_page_and_is_among_its_problems_records(tmp_path: Path) -> None:
    row = {"problem": "p0", "benchmark": "b"}
    run = write_grounding_run(
        tmp_path / "run",
        [{**row, "variant": "self/r0.00", "expected": 0.9}],
        [{**row, "correct": True}],
        [{**row, "axis": "vision", "picked_bad": True}],
    )
    with RunStore.open(run, read_only=True) as store:
        (verdict,) = store.iter_records("ok", kind=JUDGE)
        (elicitation,) = store.iter_records("ok", kind=ELICIT, raw=False)
    detail = GroundingRunView(run).detail(verdict.key)
    assert detail is not None
    assert detail.labels["record"] == "judge verdict"
    bad = next(b for b in detail.bars if b.gold)
    good = next(b for b in detail.bars if not b.gold)
    assert bad.probability == pytest.approx(verdict.readouts["p_bad"])
    assert good.probability == pytest.approx(1 - verdict.readouts["p_bad"])
    assert bad.answered  # the judge picked the bad side
    assert detail.values["p_bad"] == f"{verdict.readouts['p_bad']:.3f}"
    group = records_of(run, elicitation.key)
    assert group is not None
    assert [m.label for m in group.members] == [
        "elicitation · self/r0.00",
        "own trajectory",
        "judge · vision",
    ]
    assert group.members[2].key == verdict.key


def test_a_conversation_reaches_its_belief_probes_which_have_their_pages(
    tmp_path: Path,
) -> None:
    run = tmp_path / "run"
    run_probe(probe_config(tmp_path), run, progress=False)
    analyses = AnalysisConfig(judge_model=analysis_judge(tmp_path))
    assert run_probe_analysis(run, analyses, Execution(progress=False)).exit_code == 0
    with RunStore.open(run, read_only=True) as store:
        beliefs = {r.key: r for r in store.iter_records("ok", kind=BELIEF_PROTOCOL)}
    assert beliefs
    view, client = ProbeRunView(run), _client(run)
    conversations = view.listing(Query(per_page=100)).rows
    probed = 0
    for row in conversations:
        expected = {k for k, r in beliefs.items() if r.spec["transcript"] == row.key}
        group = view.related(row.key, "beliefs")
        if not expected:  # a conversation without sensor replies is not replayed
            assert view.groups(row.key) == ()
            assert group is None
            continue
        assert [g.name for g in view.groups(row.key)] == ["beliefs"]
        assert group is not None
        assert group.members[0].key == row.key
        assert {m.key for m in group.members[1:]} == expected
        probed += 1
    assert probed == len({r.spec["transcript"] for r in beliefs.values()}) > 0
    key, record = next(iter(beliefs.items()))
    detail = view.detail(key)
    assert detail is not None
    assert len(detail.charts) == len(record.raw["beliefs"])
    last = record.raw["beliefs"][-1]
    assert [b.probability for b in detail.bars] == [
        pytest.approx(last[chr(ord("A") + i)]) for i in range(len(detail.bars))
    ]
    gold = store_gold(run, record.spec["transcript"])
    assert [b.gold for b in detail.bars] == [
        chr(ord("A") + i) == gold for i in range(len(detail.bars))
    ]
    page = client.get(f"/run/0/item/{key}")
    assert page.status_code == 200
    assert page.text.count("<h2>b_") == len(record.raw["beliefs"])
    side = client.get(f"/run/0/related/{record.spec['transcript']}/beliefs")
    assert _COLUMN.findall(side.text)[0] == record.spec["transcript"]


def store_gold(run: Path, key: str) -> str:
    """The gold option's letter of conversation ``key``, as the store holds it."""
    with RunStore.open(run, read_only=True) as store:
        found = store.record(key)
    assert found is not None
    return str(found.raw["gold"])
