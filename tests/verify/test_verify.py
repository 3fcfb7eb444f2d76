"""Issue 34: ``clearsight verify`` re-asks a sample of a finished sweep and says how far the
answers moved; ``--readouts`` derives every record's read-outs again from its raw output;
``clearsight compare`` matches two runs of one design item by item."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from clearsight.cli import app
from clearsight.store import RunStore
from clearsight.sweep import SweepConfig, run_sweep
from clearsight.verify import DEFAULT_TOLERANCE, VerifyConfig, compare_runs, rederive, verify_run
from clearsight.verify.specs import VERIFY_KIND

runner = CliRunner()
SCENES = ("skimage-chelsea", "skimage-coffee")
PROBS = {"A": 0.05, "B": 0.1, "C": 0.6, "D": 0.15, "E": 0.1}
#: The questions about one target (its options start with "A. fork") get another answer.
OTHER = {"A": 0.1, "B": 0.6, "C": 0.05, "D": 0.15, "E": 0.1}
FORK = "A. fork"


def _config(model: str, wordings: tuple[str, ...], **kw: object) -> SweepConfig:
    args: dict[str, object] = {
        "scene_ids": SCENES,
        "arms": ("fog",),
        "levels_m": (250.0, 2.0),
        "controls": ("clean",),
        "tasks": ("identify",),
        "imagenet_c_severities": (),
        "wordings": wordings,
        "models": (model,),
    }
    return SweepConfig.model_validate({**args, **kw})


def _script(path: Path, entries: list[dict[str, object]]) -> str:
    path.write_text(yaml.safe_dump(entries))
    return f"scripted:{path}"


@pytest.fixture(scope="module")
def observer_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A deterministic run: the reference observer, a letter and a verbalized wording."""
    run = tmp_path_factory.mktemp("observer") / "run"
    run_sweep(_config("observer", ("mcq.reason", "verbal.plain")), run, progress=False)
    return run


@pytest.fixture(scope="module")
def scripted_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """A run of a scripted model, and the spec of a second one that answers the questions
    with FORK in their options differently (the rest alike)."""
    base = tmp_path_factory.mktemp("scripted")
    same = _script(base / "same.yaml", [{"match": "Which", "candidate_probs": PROBS}])
    other = [
        {"match": FORK, "candidate_probs": OTHER},
        {"match": "Which", "candidate_probs": PROBS},
    ]
    changed = _script(base / "other.yaml", other)
    run = base / "run"
    run_sweep(_config(same, ("mcq.reason",)), run, progress=False)
    return run, same, changed


def _copy(run: Path, to: Path) -> Path:
    shutil.copytree(run, to / "run")
    return to / "run"


def test_verify_of_a_deterministic_run_agrees_everywhere(
    observer_run: Path, tmp_path: Path
) -> None:
    run = _copy(observer_run, tmp_path)
    result = verify_run(VerifyConfig(run, sample=12, seed=3, batch_size=4))
    assert len(result.pairs) == 12
    table = result.table.set_index("readout")
    assert table.loc["answer", "agreement"] == 1.0
    assert set(table.index) == {
        "answer",
        "option probabilities",
        "internal confidence",
        "verbalized confidence",
    }
    deltas = table.drop(index="answer")
    assert (deltas["max_abs_delta"] == 0.0).all()
    assert (deltas["median_abs_delta"] == 0.0).all()
    assert result.differ.empty
    assert result.exit_code == 0
    # the re-asks are records of their own kind: the run's records are untouched
    with RunStore.open(run, read_only=True) as store:
        assert store.count_records(kind=VERIFY_KIND) == 12
        assert store.count_records(kind="sweep") == 18
    # the command line says so, exit 0; the same settings resume (nothing asked again)
    out = runner.invoke(
        app, ["verify", str(run), "--sample", "12", "--seed", "3", "--batch-size", "4"]
    )
    assert out.exit_code == 0, out.output
    assert "all 12 items agree within 0.0001" in out.output
    with RunStore.open(run, read_only=True) as store:
        assert store.count_records(kind=VERIFY_KIND) == 12
    report = runner.invoke(app, ["report", str(run), "--verbose"])
    assert report.exit_code == 0, report.output
    assert "## Reproducibility" in report.output
    assert "asked observer, batches of 4, seed 3: 12 items, 0 differ beyond 0.0001" in report.output
    assert "id='reproducibility'" in (run / "report.html").read_text()


def test_failed_reasks_are_counted_in_reproducibility_not_in_the_sweeps_failures(
    observer_run: Path, tmp_path: Path
) -> None:
    from clearsight.sweep.results import load_run_data

    run = _copy(observer_run, tmp_path)
    before = load_run_data(run)
    assert before.failures.empty
    nothing = _script(tmp_path / "none.yaml", [{"match": "no question says this"}])
    result = verify_run(VerifyConfig(run, sample=4, against=nothing, batch_size=2))
    assert (result.pairs["status"] == "failed").sum() == 4
    with RunStore.open(run, read_only=True) as store:
        assert store.count_records(status="failed", kind=VERIFY_KIND) == 4
    after = load_run_data(run)
    assert after.failures.empty  # the sweep's own records all finished
    assert after.counts == before.counts
    report = runner.invoke(app, ["report", str(run), "--verbose"])
    assert report.exit_code == 0, report.output
    assert "batches of 2, seed 0: 4 items, 4 differ beyond 0.0001 (4 re-asks failed; " in (
        report.output
    )
    assert "failed record(s) are left out" not in (run / "report.html").read_text()


def test_the_sample_is_stratified_and_seeded(observer_run: Path) -> None:
    from clearsight.verify.reask import plan_reasks

    a = plan_reasks(VerifyConfig(observer_run, sample=6, seed=1))
    b = plan_reasks(VerifyConfig(observer_run, sample=6, seed=1))
    c = plan_reasks(VerifyConfig(observer_run, sample=6, seed=2))
    keys = [s.of for s in a.specs]
    assert keys == [s.of for s in b.specs]
    assert keys != [s.of for s in c.specs]
    # 6 strata (clean, fog 250, fog 2) x (letter, verbal): one item from each
    cells = {(s.item.condition, s.item.level_m, s.item.wording) for s in a.specs}
    assert len(cells) == 6
    assert len({s.key for s in a.specs}) == 6
    assert not set(keys) & {s.key for s in a.specs}


def test_verify_against_another_model_lists_exactly_the_items_it_answers_differently(
    scripted_runs: tuple[Path, str, str], tmp_path: Path
) -> None:
    base, _, changed = scripted_runs
    run = _copy(base, tmp_path)
    with RunStore.open(run, read_only=True) as store:
        records = list(store.iter_records("ok", kind="sweep", raw=False))
    forked = {r.key for r in records if FORK in r.spec["question"]["prompt"]}
    assert 0 < len(forked) < len(records)
    result = verify_run(VerifyConfig(run, sample=100, against=changed, batch_size=3))
    assert len(result.pairs) == len(records)
    assert set(result.differ["of"]) == forked
    assert result.differ["answer_moved"].all()
    table = result.table.set_index("readout")
    assert table.loc["answer", "agreement"] == pytest.approx(1 - len(forked) / len(records))
    assert table.loc["option probabilities", "max_abs_delta"] == pytest.approx(0.55)
    assert table.loc["option probabilities", "median_abs_delta"] == 0.0
    assert result.exit_code == 3
    out = runner.invoke(
        app, ["verify", str(run), "--sample", "100", "--against", changed, "--batch-size", "3"]
    )
    assert out.exit_code == 3, out.output
    assert f"{len(forked)} of {len(records)} items differ beyond 0.0001; the worst:" in out.output
    assert sum(key[:12] in out.output for key in forked) == min(5, len(forked))


def _edit_readouts(run: Path, key: str, position: int, value: object) -> None:
    """Change one stored read-out of record ``key`` behind the store's back (packed JSON:
    ``[shape, v1, v2, ...]``)."""
    conn = sqlite3.connect(run / "run.sqlite")
    with conn:
        (readouts,) = conn.execute(
            "SELECT r.readouts FROM records r JOIN items i ON i.id = r.id WHERE i.key = ?",
            (bytes.fromhex(key),),
        ).fetchone()
        packed = json.loads(readouts)
        packed[position] = value
        conn.execute(
            "UPDATE records SET readouts = ? WHERE id = (SELECT id FROM items WHERE key = ?)",
            (json.dumps(packed), bytes.fromhex(key)),
        )
    conn.close()


def test_verify_readouts_finds_exactly_the_records_edited_by_hand(
    observer_run: Path, tmp_path: Path
) -> None:
    run = _copy(observer_run, tmp_path)
    assert rederive(run).differ == []
    assert rederive(run).checked == {"sweep": 18}
    with RunStore.open(run, read_only=True) as store:
        records = list(store.iter_records("ok", kind="sweep", raw=False))
    letter = next(r for r in records if r.spec["wording"] == "mcq.reason")
    verbal = next(r for r in records if r.spec["wording"] == "verbal.plain")
    # position 1 + index of the read-out in its stored object
    _edit_readouts(run, letter.key, 1 + list(letter.readouts).index("internal_conf"), 0.123)
    _edit_readouts(
        run, verbal.key, 1 + list(verbal.readouts).index("correct"), not verbal.readouts["correct"]
    )
    found = rederive(run)
    assert sorted(found.differ) == sorted(
        [(letter.key, "sweep", ("internal_conf",)), (verbal.key, "sweep", ("correct",))]
    )
    out = runner.invoke(app, ["verify", str(run), "--readouts"])
    assert out.exit_code == 3, out.output
    assert f"differs: {letter.key} (sweep): internal_conf" in out.output
    assert "2 records' stored read-outs differ" in out.output


def test_compare_of_a_run_with_itself_moves_nothing(observer_run: Path, tmp_path: Path) -> None:
    found = compare_runs(observer_run, observer_run, tolerance=DEFAULT_TOLERANCE, n_boot=200)
    assert len(found.pairs) == found.n_a == found.n_b == 18
    assert found.table.set_index("readout").loc["answer", "agreement"] == 1.0
    assert (found.table["max_abs_delta"].fillna(0.0) == 0.0).all()
    assert found.differ.empty
    figures = found.figures
    assert {"accuracy (clean)", "accuracy (fog 250 m)", "accuracy (fog 2 m)"} <= set(
        figures["figure"]
    )
    assert {"ECE internal (pooled)", "AURC internal (pooled)"} <= set(figures["figure"])
    crossing = {"log10 V*_acc (m)", "W internal confidence", "W verbalized confidence"}
    assert crossing <= set(figures["figure"])
    assert np.allclose(figures["a"], figures["b"], equal_nan=True)
    assert (figures[["difference", "low", "high"]].to_numpy() == 0.0).all()
    out = runner.invoke(
        app,
        [
            "compare",
            str(observer_run),
            str(observer_run),
            "--out",
            str(tmp_path / "c"),
            "--n-boot",
            "100",
        ],
    )
    assert out.exit_code == 0, out.output
    csv = (tmp_path / "c" / "compare.csv").read_text()
    assert csv.startswith("kind,readout,n,agreement")
    assert "<h2>Figures</h2>" in (tmp_path / "c" / "compare.html").read_text()


def test_compare_matches_two_seeds_by_what_the_items_ask(
    observer_run: Path, tmp_path: Path
) -> None:
    other = tmp_path / "seed1"
    run_sweep(_config("observer", ("mcq.reason", "verbal.plain"), seed=1), other, progress=False)
    found = compare_runs(observer_run, other, tolerance=DEFAULT_TOLERANCE, n_boot=100)
    assert len(found.pairs) == 18  # the same questions, their options in another order
    # the observer answers by what it sees: the same option text under both seeds
    assert found.table.set_index("readout").loc["answer", "agreement"] == 1.0


def _err(args: list[str]) -> str:
    out = runner.invoke(app, args)
    assert out.exit_code == 2, out.output
    lines = [line for line in out.output.splitlines() if line.strip()]
    assert len(lines) == 1, out.output
    assert lines[0].startswith("error: "), out.output
    return lines[0]


def test_bad_input_is_one_error_line_and_writes_nothing(
    observer_run: Path, scripted_runs: tuple[Path, str, str], tmp_path: Path
) -> None:
    run = _copy(observer_run, tmp_path)
    before = (run / "run.sqlite").read_bytes()
    assert "holds no run" in _err(["verify", str(tmp_path / "missing")])
    assert not (tmp_path / "missing").exists()
    assert "sample: Input should be greater than or equal to 1" in _err(
        ["verify", str(run), "--sample", "0"]
    )
    assert "nosuch" in _err(["verify", str(run), "--against", "nosuch:model"])
    other_design = tmp_path / "levels"
    run_sweep(
        _config("observer", ("mcq.reason",), levels_m=(250.0, 5.0)), other_design, progress=False
    )
    line = _err(["compare", str(run), str(other_design), "--out", str(tmp_path / "cmp")])
    assert "different designs" in line
    assert "levels_m" in line
    assert "wordings" in line
    assert not (tmp_path / "cmp").exists()
    with RunStore.open(run, read_only=True) as store:
        assert store.count_records(kind=VERIFY_KIND) == 0
    assert (run / "run.sqlite").read_bytes() == before


def test_a_verified_run_still_reruns_without_planning(
    observer_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The re-asks are items of a kind no stage plans: a rerun of the finished, verified run
    still sees it finished (no model checked, nothing planned)."""
    run = _copy(observer_run, tmp_path)
    verify_run(VerifyConfig(run, sample=4, seed=1, batch_size=2))
    import clearsight.driver as driver

    def no_planning(*args: object, **kwargs: object) -> None:
        raise AssertionError("the finished run was planned again")

    monkeypatch.setattr(driver, "check_models", no_planning)
    summary = run_sweep(_config("observer", ("mcq.reason", "verbal.plain")), run, progress=False)
    assert sum(s.ok for s in summary.stages.values()) == 0
    with RunStore.open(run, read_only=True) as store:
        assert store.count_records(kind=VERIFY_KIND) == 4


def test_the_compare_page_names_both_models_and_shows_the_figures_first(
    scripted_runs: tuple[Path, str, str], tmp_path: Path
) -> None:
    """Two runs of one design asked of two models: the page names each run's model, puts the
    paired figures before the items that differ, and says how many differ beside the worst."""
    from clearsight.report.reproducibility import SHOWN_DIFFER, compare_page

    run, same, changed = scripted_runs
    other = tmp_path / "other"
    run_sweep(_config(changed, ("mcq.reason",)), other, progress=False)
    found = compare_runs(run, other, tolerance=DEFAULT_TOLERANCE, n_boot=50)
    assert len(found.differ) > 0
    html = compare_page(found)
    assert f"<li>A: {run} — {same}</li>" in html
    assert f"<li>B: {other} — {changed}</li>" in html
    assert html.index("<h2>Figures</h2>") < html.index("<h2>Items that differ")
    assert f"<h2>Items that differ: {len(found.differ)}</h2>" in html
    worst = html.split("<h2>Items that differ", 1)[1]
    assert worst.count(f"<td class='t'>{same} / {changed}</td>") == min(
        len(found.differ), SHOWN_DIFFER
    )
