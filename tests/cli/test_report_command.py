"""``clearsight report RUN`` for every protocol: it writes the report the run's manifest calls
for (:func:`clearsight.report.build_report`) and prints its summary; a TGS-Bench build prints
its pool's retention; anything else is one error line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from clearsight.cli import app
from clearsight.report import build_report, run_protocol
from clearsight.store import RunStore
from clearsight.sweep import SweepConfig, run_sweep
from clearsight.validate import InputError
from fixtures.kept_runs import grounding_config
from fixtures.probe_runs import IDS, probe_config

runner = CliRunner()


def _manifest_only(run: Path, manifest: dict[str, Any]) -> Path:
    """A run directory whose store holds only ``manifest``."""
    with RunStore.open(run) as store:
        store.begin_run(manifest)
    return run


def test_a_sweep_run_gets_the_sweep_report(tmp_path: Path) -> None:
    run = tmp_path / "sweep"
    config = SweepConfig(
        scene_ids=("skimage-chelsea", "skimage-coffee"),
        arms=("fog",),
        levels_m=(250.0, 2.0),
        controls=("clean",),
        tasks=("identify",),
        wordings=("mcq.reason",),
    )
    run_sweep(config, run, progress=False)
    result = runner.invoke(app, ["report", str(run)])
    assert result.exit_code == 0, result.output
    assert "# clearsight sweep summary" in result.output
    assert f"report: {run / 'report.html'}" in result.output
    assert (run / "summary.csv").is_file()
    again = runner.invoke(app, ["report", str(run), str(run)])  # others: grounding's only
    assert again.exit_code == 2
    assert again.output.startswith("error: a sweep report shows one run; 1 others were given")


def test_a_probe_run_and_a_build_run_get_the_probe_report(tmp_path: Path) -> None:
    from clearsight.probe import run_probe

    run = tmp_path / "probe"
    run_probe(probe_config(tmp_path), run, progress=False)
    result = runner.invoke(app, ["report", str(run)])
    assert result.exit_code == 0, result.output
    assert "# Probe report" in result.output
    assert "Table 1" in result.output
    sensor = tmp_path / "sensor11.jsonl"
    sensor.write_text(json.dumps({"match": "Answer with the letter", "texts": ["B"] * 11}) + "\n")
    store, kept = tmp_path / "build", tmp_path / "kept.jsonl"
    args = ["probe", "build", "--out", str(kept), "--ids", ",".join(IDS), "--store", str(store)]
    built = runner.invoke(app, [*args, "--sensor", f"scripted:{sensor}"])
    assert built.exit_code == 0, built.output
    assert run_protocol(store) == "probe.build"
    reported = runner.invoke(app, ["report", str(store)])
    assert reported.exit_code == 0, reported.output
    assert "# Probe report" in reported.output
    assert (store / "report.html").is_file()


def test_a_grounding_run_gets_the_grounding_report(tmp_path: Path, tiny_llama_path: Path) -> None:
    """Four problems through the tiny Llama (model, generator and judge), as the kept run makes
    them; ``clearsight report`` writes the grounding report with the run's own bootstrap."""
    from clearsight.grounding import run_grounding

    run = tmp_path / "grounding"
    run_grounding(grounding_config(tiny_llama_path), run, progress=False)
    result = runner.invoke(app, ["report", str(run)])
    assert result.exit_code == 0, result.output
    assert f"report: {run / 'report.html'}" in result.output
    summary = (run / "summary.md").read_text()
    assert summary.strip() in result.output
    with (run / "summary.csv").open() as rows:
        assert len(rows.readlines()) > 1


def test_a_grounding_run_is_reported_with_its_own_bootstrap_and_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import clearsight.report.grounding as renderer

    calls: list[tuple[Path, list[Path], int, int]] = []

    def build_grounding_report(
        run: Path, n_boot: int = 5000, seed: int = 0, others: Any = ()
    ) -> tuple[Any, dict[str, Any]]:
        calls.append((run, list(others), n_boot, seed))
        for name in ("report.html", "summary.md", "summary.csv"):
            (run / name).write_text("# Trajectory grounding\n")
        from clearsight.report.output import ReportPaths

        paths = ReportPaths(run, run / "report.html", run / "summary.md", run / "summary.csv")
        return paths, {}

    monkeypatch.setattr(renderer, "build_grounding_report", build_grounding_report)
    run = _manifest_only(
        tmp_path / "g", {"protocol": "grounding", "config": {"n_boot": 300, "seed": 4}}
    )
    other = _manifest_only(tmp_path / "h", {"protocol": "grounding", "config": {}})
    result = runner.invoke(app, ["report", str(run), str(other)])
    assert result.exit_code == 0, result.output
    assert "# Trajectory grounding" in result.output
    assert calls == [(run, [other], 300, 4)]
    build_report(run, n_boot=100, seed=1)
    assert calls[-1] == (run, [], 100, 1)


def test_a_bench_build_prints_its_retention(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import clearsight.grounding.bench.results as build_pool
    from clearsight.grounding import BuildBenchConfig, TgsBench

    seen: list[Any] = []
    counts = {"attempted": 4, "good": 3, "vision": 2, "reasoning": 3}

    def read_bench(config: BuildBenchConfig, run_dir: Path) -> TgsBench:
        seen.append((config, run_dir))
        return TgsBench(items=(), manifest={"counts": {"all": counts}, "rejections": {"x": 1}})

    monkeypatch.setattr(build_pool, "read_bench", read_bench)
    config = BuildBenchConfig(n_problems=7, seed=2)
    run = _manifest_only(
        tmp_path / "b",
        {"protocol": "grounding.build-bench", "config": config.model_dump(mode="json")},
    )
    result = runner.invoke(app, ["report", str(run)])
    assert result.exit_code == 0, result.output
    assert seen == [(config, run)]
    assert "retention (kept / attempted):" in result.output
    assert "3 (0.750)" in result.output
    assert "rejections: x: 1" in result.output
    assert not (run / "report.html").exists()


@pytest.mark.parametrize(
    ("manifest", "says"),
    [
        (None, "holds no run (no run.sqlite): give a run directory"),
        ({"protocol": "sweep.veq", "config": {}}, "is a sweep.veq run: reports are of"),
    ],
)
def test_what_has_no_report_is_one_error_line(
    tmp_path: Path, manifest: dict[str, Any] | None, says: str
) -> None:
    run = tmp_path / "r"
    if manifest is not None:
        _manifest_only(run, manifest)
    result = runner.invoke(app, ["report", str(run)])
    assert result.exit_code == 2, result.output
    assert len(result.output.strip().splitlines()) == 1
    assert result.output.startswith("error: ")
    assert says in result.output
    with pytest.raises(InputError, match="written into its run directory"):
        build_report(
            _manifest_only(tmp_path / "p", {"protocol": "probe", "config": {}}), tmp_path / "else"
        )
