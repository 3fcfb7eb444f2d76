"""Issue 34 for the probe: ``clearsight verify`` re-asks a sample of a probe run's direct
answers (the sensor answering the question itself) and compares the committed options."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clearsight.cli import app
from clearsight.faces import face_of
from clearsight.probe.face import direct_of
from clearsight.probe.protocol import run_probe
from clearsight.store import RunStore
from clearsight.verify import VerifyConfig, rederive, verify_run
from fixtures.probe_runs import probe_config
from fixtures.store_edits import edit_readout

runner = CliRunner()


@pytest.fixture(scope="module")
def probe_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """Direct answers and BP conversations of a scripted sensor (it answers B), and a second
    sensor that answers the one question with ``mark`` in its text A instead."""
    base = tmp_path_factory.mktemp("probe")
    run = base / "run"
    run_probe(probe_config(base), run, progress=False)
    with RunStore.open(run, read_only=True) as store:
        direct = [
            r
            for r in store.iter_records("ok", kind="probe", raw=False)
            if r.spec["strategy"] == "direct"
        ]
    mark = direct[0].spec["instance"]["question"]
    other = base / "other.jsonl"
    lines = [{"match": mark, "texts": ["A"]}, {"match": "Answer with the letter", "texts": ["B"]}]
    other.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return run, f"scripted:{other}", mark


def test_direct_answers_are_rebuilt_and_asked_again(probe_run: tuple[Path, str, str]) -> None:
    run, other, mark = probe_run
    with RunStore.open(run, read_only=True) as store:
        records = list(store.iter_records("ok", kind="probe", raw=False))
    direct = [r for r in records if r.spec["strategy"] == "direct"]
    assert 0 < len(direct) < len(records)  # the conversations are not re-asked
    assert all(direct_of(r.spec).key == r.key for r in direct)
    same = verify_run(VerifyConfig(run, sample=50, batch_size=2))
    assert set(same.pairs["of"]) == {r.key for r in direct}
    assert same.table.set_index("readout").loc["answer", "agreement"] == 1.0
    assert same.exit_code == 0
    moved = verify_run(VerifyConfig(run, sample=50, against=other, batch_size=2))
    marked = {r.key for r in direct if r.spec["instance"]["question"] == mark}
    assert 0 < len(marked) < len(direct)
    assert set(moved.differ["of"]) == marked
    assert moved.exit_code == 3
    report = runner.invoke(app, ["report", str(run)])
    assert report.exit_code == 0, report.output
    assert "## Reproducibility" in (run / "summary.md").read_text()


def test_verify_readouts_of_a_probe_run_finds_exactly_the_records_edited_by_hand(
    probe_run: tuple[Path, str, str], tmp_path: Path
) -> None:
    run = tmp_path / "run"
    shutil.copytree(probe_run[0], run)
    with RunStore.open(run, read_only=True) as store:
        records = list(store.iter_records("ok", kind="probe", raw=False))
    direct = [r for r in records if r.spec["strategy"] == "direct"]
    talks = [r for r in records if r.spec["strategy"] != "direct"]
    assert direct
    assert talks
    assert {r.readouts["committed"] for r in records} == {"B"}
    untouched = rederive(run)
    assert untouched.differ == []
    assert untouched.exit_code == 0
    assert untouched.checked["probe"] == len(records)
    edit_readout(run, direct[0].key, "committed", "A")
    edit_readout(run, talks[0].key, "committed", "A")
    edit_readout(run, talks[-1].key, "mean_u", talks[-1].readouts["mean_u"] + 0.5)
    found = rederive(run)
    assert sorted(found.differ) == sorted(
        [
            (direct[0].key, "probe", ("committed",)),
            (talks[0].key, "probe", ("committed",)),
            (talks[-1].key, "probe", ("mean_u",)),
        ]
    )
    out = runner.invoke(app, ["verify", str(run), "--readouts"])
    assert out.exit_code == 3, out.output
    assert "3 records' stored read-outs differ" in out.output


def test_a_stored_answer_is_parsed_again_from_its_text(probe_run: tuple[Path, str, str]) -> None:
    """The letter of a direct answer and of a conversation's commit come from the stored text:
    another text there gives another letter (and correctness; a direct answer's stop)."""
    run = probe_run[0]
    with RunStore.open(run, read_only=True) as store:
        records = list(store.iter_records("ok", kind="probe"))
    derive = face_of("probe").derive["probe"]
    for rec in records:
        raw = json.loads(json.dumps(rec.raw))
        assert derive(rec.spec, raw, rec.readouts) == rec.readouts
        gold = rec.readouts["gold"]
        other = next(x for x in ("A", "B") if x != rec.readouts["committed"])
        direct = rec.spec["strategy"] == "direct"
        raw["turns"][-1]["raw"] = other if direct else f"The answer is: ({other})"
        derived = derive(rec.spec, raw, rec.readouts)
        assert derived["committed"] == other
        assert derived["correct"] is (other == gold)
        raw["turns"][-1]["raw"] = "I cannot tell."
        derived = derive(rec.spec, raw, rec.readouts)
        assert derived["committed"] is None
        assert derived["correct"] is False
        if direct:  # a conversation keeps its stored stop: how it would go on is not known
            assert derived["stop"] == "unparsed"
