"""Issue 34 for trajectory grounding: ``clearsight verify`` re-asks a sample of a grounding run's
elicitations (the 11-way confidence distributions) and compares them by the Jensen–Shannon
divergence and the |Δ| of the expected confidence."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clearsight.cli import app
from clearsight.grounding import GroundingConfig, run_grounding
from clearsight.grounding.problems.bundled import bundled_problems
from clearsight.store import RunStore
from clearsight.sweep import SweepConfig, run_sweep
from clearsight.verify import DEFAULT_TOLERANCE, VerifyConfig, compare_runs, rederive, verify_run
from clearsight.verify.kinds import elicit_of
from clearsight.verify.rederivation import DERIVED
from clearsight.verify.specs import VERIFY_KIND
from fixtures.store_edits import edit_readout

runner = CliRunner()


def _script(path: Path, hidden_all: str) -> str:
    """A scripted model: each bundled problem's canonical solution as its trajectory; the
    confidence 9 with nothing hidden, ``hidden_all`` with the whole rationale hidden, 6 with
    part of it."""
    entries: list[dict[str, object]] = [
        {"hidden": {"share": 1.0, "sequence_probs": {hidden_all: 1.0}}},
        {"hidden": {"share": 0.0, "sequence_probs": {"9": 1.0}}},
        {"hidden": {"sequence_probs": {"6": 1.0}}},
    ]
    for p in bundled_problems(2):
        s = p.solution or {}
        text = f" {s['observation']}\nReasoning: {s['reasoning']}\nAnswer: {s['answer']}"
        entries.append({"match": p.question, "texts": [text]})
    path.write_text("\n".join(json.dumps(e) for e in entries) + "\n")
    return f"scripted:{path}"


@pytest.fixture(scope="module")
def grounding_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    base = tmp_path_factory.mktemp("grounding")
    model = _script(base / "model.jsonl", "3")
    other = _script(base / "other.jsonl", "4")
    config = GroundingConfig(
        model=model, generator=None, n_problems=2, variation_mode="handwritten", n_boot=100
    )
    run_grounding(config, base / "run", progress=False)
    return base / "run", other


def test_an_elicitation_is_rebuilt_from_its_stored_form(grounding_run: tuple[Path, str]) -> None:
    run, _ = grounding_run
    with RunStore.open(run, read_only=True) as store:
        records = list(store.iter_records("ok", kind="grounding.elicit", raw=False))
    assert records
    assert all(elicit_of(r.spec).key == r.key for r in records)


def test_verify_of_a_grounding_run(grounding_run: tuple[Path, str]) -> None:
    run, other = grounding_run
    with RunStore.open(run, read_only=True) as store:
        records = list(store.iter_records("ok", kind="grounding.elicit", raw=False))
    same = verify_run(VerifyConfig(run, sample=200, batch_size=3))
    table = same.table.set_index("readout")
    assert len(same.pairs) == len(records)
    assert "answer" not in table.index  # an elicitation has a distribution, not an answer
    assert table.loc["11-way distribution (JSD, bits)", "max_abs_delta"] == 0.0
    assert table.loc["expected confidence", "max_abs_delta"] == 0.0
    assert same.exit_code == 0
    # another model: the whole rationale hidden gives 4 instead of 3
    hidden = {r.key for r in records if r.spec["share"] == 1.0}
    assert 0 < len(hidden) < len(records)
    moved = verify_run(VerifyConfig(run, sample=200, against=other, batch_size=4))
    assert set(moved.differ["of"]) == hidden
    table = moved.table.set_index("readout")
    assert table.loc["11-way distribution (JSD, bits)", "max_abs_delta"] == pytest.approx(1.0)
    assert table.loc["expected confidence", "max_abs_delta"] == pytest.approx(0.1)
    assert moved.exit_code == 3
    report = runner.invoke(app, ["report", str(run)])
    assert report.exit_code == 0, report.output
    text = (run / "summary.md").read_text()
    assert "## Reproducibility" in text
    assert f"batches of 4, seed 0: {len(records)} items, {len(hidden)} differ" in text


def test_verify_readouts_of_a_grounding_run_finds_exactly_the_records_edited_by_hand(
    grounding_run: tuple[Path, str], tmp_path: Path
) -> None:
    run = tmp_path / "run"
    shutil.copytree(grounding_run[0], run)
    with RunStore.open(run, read_only=True) as store:
        trajectories = list(store.iter_records("ok", kind="grounding.trajectory", raw=False))
        elicits = list(store.iter_records("ok", kind="grounding.elicit", raw=False))
    verify_run(VerifyConfig(run, sample=5, batch_size=5))  # re-asks are derived again too
    with RunStore.open(run, read_only=True) as store:
        reasks = store.count_records(status="ok", kind=VERIFY_KIND)
    untouched = rederive(run)
    assert untouched.differ == []
    assert untouched.exit_code == 0
    assert untouched.checked["grounding.trajectory"] == len(trajectories) == 2
    assert untouched.checked["grounding.elicit"] == len(elicits)
    assert untouched.checked[VERIFY_KIND] == reasks >= 5
    assert untouched.skipped["grounding.edit"] > 0  # an injected error is not a read-out
    edited_traj = trajectories[1]
    edit_readout(run, edited_traj.key, "correct", not edited_traj.readouts["correct"])
    expected, mass = elicits[0], elicits[-1]
    edit_readout(run, expected.key, "expected", expected.readouts["expected"] + 1e-9)
    edit_readout(run, mass.key, "mass", 0.5)
    found = rederive(run)
    assert sorted(found.differ) == sorted(
        [
            (edited_traj.key, "grounding.trajectory", ("correct",)),
            (expected.key, "grounding.elicit", ("expected",)),
            (mass.key, "grounding.elicit", ("mass",)),
        ]
    )
    out = runner.invoke(app, ["verify", str(run), "--readouts"])
    assert out.exit_code == 3, out.output
    assert f"differs: {expected.key} (grounding.elicit): expected" in out.output
    assert "3 records' stored read-outs differ" in out.output


def test_a_judgement_is_derived_again_from_the_judge_probabilities() -> None:
    """p_bad = p(bad side's number) / (p("1") + p("2")), here 0.3 / 0.4 and 0.1 / 0.4."""
    raw = {"candidate_probs": {"1": 0.3, "2": 0.1, "3": 0.5}}
    first = DERIVED["grounding.judge"]({"bad_first": True, "axis": "answer"}, raw, {})
    assert first == {"p_bad": pytest.approx(0.75), "picked_bad": True, "axis": "answer"}
    second = DERIVED["grounding.judge"]({"bad_first": False, "axis": "vision"}, raw, {})
    assert second == {"p_bad": pytest.approx(0.25), "picked_bad": False, "axis": "vision"}
    none = DERIVED["grounding.judge"]({"bad_first": True, "axis": "answer"}, {}, {})
    assert "unreadable" in none


def test_failed_reasks_stay_out_of_the_grounding_failures(
    grounding_run: tuple[Path, str], tmp_path: Path
) -> None:
    from clearsight.grounding.results import load_grounding_results

    run = tmp_path / "run"
    shutil.copytree(grounding_run[0], run)
    before = load_grounding_results(run).failures
    nothing = tmp_path / "none.jsonl"
    # masked scoring only for a share no elicitation hides: every re-ask fails
    nothing.write_text(json.dumps({"hidden": {"share": 0.37, "sequence_probs": {"1": 1.0}}}))
    result = verify_run(VerifyConfig(run, sample=3, against=f"scripted:{nothing}"))
    assert (result.pairs["status"] == "failed").sum() == 3
    assert load_grounding_results(run).failures == before


def test_compare_two_grounding_runs_of_one_design(
    grounding_run: tuple[Path, str], tmp_path: Path
) -> None:
    """Model B gives 4 instead of 3 with the whole rationale hidden: exactly the fully masked
    elicitations differ (JSD 1 bit, |Δ| E 0.1), the answers agree, and TGS-self moves by
    0.9 - 0.3 vs 0.9 - 0.4: A - B = 0.1 on every problem, so its paired interval is [0.1, 0.1];
    the TGS-pair figures do not move."""
    run_a, other = grounding_run
    config = GroundingConfig(
        model=other, generator=None, n_problems=2, variation_mode="handwritten", n_boot=100
    )
    run_b = tmp_path / "b"
    run_grounding(config, run_b, progress=False)
    found = compare_runs(run_a, run_b, tolerance=DEFAULT_TOLERANCE, n_boot=200)
    with RunStore.open(run_a, read_only=True) as store:
        elicits = list(store.iter_records("ok", kind="grounding.elicit", raw=False))
    hidden = {
        (r.spec["problem"]["id"], r.spec["variant"]) for r in elicits if r.spec["share"] == 1.0
    }
    assert set(zip(found.differ["scene"], found.differ["condition"], strict=True)) == hidden
    table = found.table.set_index("readout")
    assert table.loc["answer", "agreement"] == 1.0
    assert table.loc["answer", "n"] == 2
    assert table.loc["11-way distribution (JSD, bits)", "max_abs_delta"] == pytest.approx(1.0)
    assert table.loc["expected confidence", "max_abs_delta"] == pytest.approx(0.1)
    figures = found.figures.set_index("figure")
    tgs_self = figures.loc["TGS-self"]
    assert (tgs_self["a"], tgs_self["b"]) == (pytest.approx(0.6), pytest.approx(0.5))
    assert tgs_self["difference"] == pytest.approx(0.1)
    assert (tgs_self["low"], tgs_self["high"]) == (pytest.approx(0.1), pytest.approx(0.1))
    assert (figures.loc["TGS-pair", ["difference", "low", "high"]] == 0.0).all()
    same = compare_runs(run_a, run_a, tolerance=DEFAULT_TOLERANCE, n_boot=200)
    assert same.differ.empty
    assert (same.figures[["difference", "low", "high"]].to_numpy() == 0.0).all()
    out = runner.invoke(app, ["compare", str(run_a), str(run_b), "--out", str(tmp_path / "c")])
    assert out.exit_code == 0, out.output
    assert f"{len(hidden)} of {len(found.pairs)} items differ" in out.output
    assert "→" not in out.output  # an elicitation has no answer to show changing
    assert "TGS-self" in (tmp_path / "c" / "compare.html").read_text()
    assert "TGS-pair" in (tmp_path / "c" / "compare.csv").read_text()


def test_compare_refuses_a_grounding_run_of_another_design_or_protocol(
    grounding_run: tuple[Path, str], tmp_path: Path
) -> None:
    run_a, other = grounding_run
    fewer = tmp_path / "fewer"
    config = GroundingConfig(
        model=other, generator=None, n_problems=1, variation_mode="handwritten", n_boot=100
    )
    run_grounding(config, fewer, progress=False)
    sweep = tmp_path / "sweep"
    sweep_config = {
        "scene_ids": ("skimage-chelsea",),
        "controls": ("clean",),
        "tasks": ("identify",),
    }
    run_sweep(SweepConfig.model_validate({**sweep_config, "models": ("observer",)}), sweep)
    for b, said in ((fewer, "n_problems"), (sweep, "is a sweep run, not a grounding run")):
        out = runner.invoke(app, ["compare", str(run_a), str(b), "--out", str(tmp_path / "c")])
        assert out.exit_code == 2, out.output
        lines = [line for line in out.output.splitlines() if line.strip()]
        assert len(lines) == 1, out.output
        assert lines[0].startswith("error: ")
        assert said in lines[0]
        assert not (tmp_path / "c").exists()
