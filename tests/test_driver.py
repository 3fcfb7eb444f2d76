"""The one run driver: checks before anything is created, the run directory's lock, exit codes
that tell the truth, clean stops on SIGTERM and after ``kill -9``, and reads that refuse a run
of another protocol or corrupted stored JSON."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clearsight.cli import app
from clearsight.driver import EXIT_FAILED_ITEMS, RunLocked, run_lock
from clearsight.store import RunStore, load_run
from clearsight.sweep.config import SweepConfig
from clearsight.sweep.protocol import run_sweep
from clearsight.validate import InputError

runner = CliRunner()
SCENE = "skimage-chelsea"


def _small(**kw: object) -> SweepConfig:
    args: dict[str, object] = {
        "scene_ids": (SCENE,),
        "arms": ("fog",),
        "tasks": ("identify",),
        "wordings": ("mcq.reason",),
        "controls": ("clean", "blank"),
    }
    args.update(kw)
    return SweepConfig(**args)  # type: ignore[arg-type]


def _scripted(path: Path, n: int) -> Path:
    """A scripted model with ``n`` ordered answers: the requests after them fail."""
    line = json.dumps({"texts": ["A"], "candidate_probs": {"A": 0.7, "B": 0.1, "C": 0.1}})
    path.write_text("\n".join([line] * n) + "\n")
    return path


# --------------------------------------------------------------------------------------------
# A model that cannot be used stops every run command before anything is created


@pytest.mark.parametrize(
    "command",
    [
        ["sweep", "--scene-ids", SCENE, "--arms", "fog", "--model", "hf:nonexistent/model"],
        ["grounding", "--model", "hf:/no/such/dir", "--n", "2", "--no-variation"],
        ["probe", "run", "--reasoner", "hf:/no/such/dir", "--strategies", "react", "--limit", "1"],
        ["probe", "run", "--sensor", "scripted:/no/such.jsonl", "--limit", "1"],
    ],
    ids=["sweep", "grounding", "probe-reasoner", "probe-sensor"],
)
def test_a_model_that_cannot_load_stops_before_the_run_exists(
    command: list[str], tmp_path: Path
) -> None:
    out = tmp_path / "run"
    result = runner.invoke(app, [*command, "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert "cannot be used" in result.output or "could not be loaded" in result.output
    assert not out.exists()


def test_a_model_lacking_a_needed_capability_is_named(tmp_path: Path) -> None:
    # the scripted backend fills in what it is given but has no attention-mask hook
    model = _scripted(tmp_path / "m.jsonl", 1)
    out = tmp_path / "run"
    result = runner.invoke(
        app, ["grounding", "--model", f"scripted:{model}", "--n", "2", "--out", str(out)]
    )
    assert result.exit_code == 2, result.output
    assert "lacks attention_mask" in result.output
    assert not out.exists()


# --------------------------------------------------------------------------------------------
# Exit codes


def test_a_run_with_failed_items_exits_with_the_documented_code(tmp_path: Path) -> None:
    # 10 answers: the first scene's unit (clean, 8 fog levels, blank) succeeds, the second fails
    model = _scripted(tmp_path / "few.jsonl", 10)
    cfg = _small(models=(f"scripted:{model}",), scene_ids=(SCENE, "skimage-coffee"))
    summary = run_sweep(cfg, tmp_path / "api", progress=False)
    assert summary.stages["sweep"].ok == 10
    assert summary.ok == 10 + 2  # and both scenes' model-free depth profiles
    assert summary.failed > 0
    assert summary.exit_code == EXIT_FAILED_ITEMS == 3
    assert "no scripted output left" in summary.reasons[0][0]

    out = tmp_path / "cli"
    args = ["sweep", "--scene-ids", f"{SCENE},skimage-coffee", "--arms", "fog"]
    args += ["--tasks", "identify", "--workers", "1"]
    args += ["--wordings", "mcq.reason", "--model", f"scripted:{model}", "--out", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == EXIT_FAILED_ITEMS, result.output
    assert "12 records written" in result.output
    assert "most common reasons" in result.output
    assert "no scripted output left" in result.output


def test_a_run_without_failures_exits_0(tmp_path: Path) -> None:
    summary = run_sweep(_small(), tmp_path / "r", progress=False)
    assert summary.failed == 0
    assert summary.exit_code == 0
    assert summary.ok > 0


# --------------------------------------------------------------------------------------------
# The run directory's lock


def _hold_lock(run: Path) -> subprocess.Popen[bytes]:
    """Another process holding the run's lock until killed."""
    code = textwrap.dedent(
        f"""
        import sys, time
        from pathlib import Path
        from clearsight.driver import run_lock
        with run_lock(Path({str(run)!r})):
            print("locked", flush=True)
            time.sleep(120)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == b"locked"
    return proc


def test_a_second_writer_is_refused_and_the_first_runs_records_are_intact(tmp_path: Path) -> None:
    run = tmp_path / "r"
    first = run_sweep(_small(), run, progress=False)
    before = load_run(run)
    holder = _hold_lock(run)
    try:
        with pytest.raises(RunLocked, match=rf"pid {holder.pid}"):
            run_sweep(_small(seed=1), run, fresh=True, progress=False)
        scenes = f"{SCENE},skimage-coffee"
        result = runner.invoke(
            app, ["sweep", "--scene-ids", scenes, "--fresh", "--seed", "1", "--out", str(run)]
        )
        assert result.exit_code == 2
        assert f"pid {holder.pid}" in result.output
    finally:
        holder.kill()
        holder.wait()
    after = load_run(run)
    assert len(after) == len(before) == first.ok
    assert after["key"].tolist() == before["key"].tolist()
    # the holder is dead: its lock went with it, and the next writer takes it over
    assert run_sweep(_small(), run, progress=False).units == 0


def test_the_lock_is_exclusive_within_a_process_too(tmp_path: Path) -> None:
    with run_lock(tmp_path), pytest.raises(RunLocked, match=str(os.getpid())):  # noqa: SIM117
        with run_lock(tmp_path):
            pass
    with run_lock(tmp_path):  # released
        pass


# --------------------------------------------------------------------------------------------
# Clean ends: SIGTERM and kill -9


def _children(pid: int) -> list[int]:
    """Direct child processes of ``pid`` (Linux /proc)."""
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        text = (task / "children").read_text() if (task / "children").exists() else ""
        out += [int(c) for c in text.split()]
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


def _sweep_process(run: Path) -> subprocess.Popen[bytes]:
    args = [str(Path(sys.executable).parent / "clearsight"), "sweep", "--out", str(run)]
    args += ["--workers", "2"]
    args += ["--scene-ids", "skimage-chelsea,skimage-coffee,mpl-grace-hopper,skimage-astronaut"]
    args += ["--tasks", "identify", "--wordings", "mcq.reason"]
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _wait_for_records(run: Path, proc: subprocess.Popen[bytes], timeout: float = 120) -> None:
    """Until the run has some records and two pool workers are up."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        db = run / "run.sqlite"
        if db.exists() and len(_children(proc.pid)) >= 2:
            try:
                with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
                    if conn.execute("SELECT count(*) FROM records").fetchone()[0] > 0:
                        return
            except sqlite3.OperationalError:
                pass
        time.sleep(0.2)
    pytest.fail("the sweep wrote no record in time")


def _wait_dead(pids: list[int], seconds: float) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.1)
    return [p for p in pids if _alive(p)]


def _readouts(run: Path) -> dict[str, str]:
    with RunStore.open(run, read_only=True) as store:
        return {r.key: json.dumps(r.readouts, sort_keys=True) for r in store.iter_records("ok")}


@pytest.mark.slow
def test_sigterm_stops_workers_and_the_run_resumes_to_the_same_records(tmp_path: Path) -> None:
    run = tmp_path / "r"
    proc = _sweep_process(run)
    _wait_for_records(run, proc)
    workers = _children(proc.pid)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 143
    assert proc.stderr is not None
    assert b"terminated" in proc.stderr.read()
    assert _wait_dead(workers, 5) == []
    # resumed, the records are those of an uninterrupted run (the same code, the same executor)
    again = _sweep_process(run)
    assert again.wait(timeout=300) == 0
    whole = _sweep_process(tmp_path / "whole")
    assert whole.wait(timeout=300) == 0
    assert _readouts(run) == _readouts(tmp_path / "whole")


@pytest.mark.slow
def test_kill_9_of_the_driver_leaves_no_worker(tmp_path: Path) -> None:
    run = tmp_path / "r"
    proc = _sweep_process(run)
    _wait_for_records(run, proc)
    workers = _children(proc.pid)
    assert len(workers) >= 2
    proc.kill()
    proc.wait()
    assert _wait_dead(workers, 10) == []


# --------------------------------------------------------------------------------------------
# The README's snippet, saved as a script


def test_the_readme_snippet_runs_as_a_script(tmp_path: Path) -> None:
    readme = (Path(__file__).parents[1] / "README.md").read_text()
    start = readme.index("```python\nfrom clearsight import SweepConfig")
    snippet = readme[start + len("```python\n") : readme.index("```", start + 10)]
    assert 'if __name__ == "__main__":' in snippet
    snippet = snippet.replace('"runs/fog-only"', repr(str(tmp_path / "fog-only")))
    # the bundled scenes of the snippet, cut to two so the test takes seconds
    scenes = (SCENE, "skimage-coffee")
    snippet = snippet.replace("SweepConfig(", f"SweepConfig(scene_ids={scenes!r}, ", 1)
    script = tmp_path / "snippet.py"
    script.write_text(snippet)
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "fog-only" / "report.html").is_file()


# --------------------------------------------------------------------------------------------
# Reads: the wrong protocol, corrupted JSON


def test_a_protocols_report_refuses_a_run_of_another_protocol(tmp_path: Path) -> None:
    from clearsight.probe import build_probe_report
    from clearsight.sweep import build_sweep_report

    sweep = tmp_path / "sweep"
    run_sweep(_small(), sweep, progress=False)
    with pytest.raises(InputError, match="is a sweep run, not a probe run: use clearsight report"):
        build_probe_report(sweep)
    assert not (sweep / "report.html").exists()
    with RunStore.open(sweep) as store:  # pretend it is a probe run
        manifest = store.manifest()
        store.begin_run({**manifest_entries(manifest), "protocol": "probe"}, allow_mismatch=True)
    with pytest.raises(InputError, match="is a probe run, not a sweep run: use clearsight"):
        build_sweep_report(sweep, n_boot=100, seed=0)
    moved = runner.invoke(app, ["probe", "report", str(sweep)])  # one report command for all
    assert moved.exit_code == 2
    assert "is now `clearsight report RUN`" in moved.output


def manifest_entries(manifest: dict[str, object]) -> dict[str, object]:
    """A manifest's caller entries (without those the store writes itself)."""
    own = {"schema_version", "created_at", "config_hash", "starts", "history", "plan"}
    return {k: v for k, v in manifest.items() if k not in own}


def test_corrupted_stored_json_names_the_run_table_and_key(tmp_path: Path) -> None:
    run = tmp_path / "r"
    run_sweep(_small(), run, progress=False)
    with sqlite3.connect(run / "run.sqlite") as conn:
        stored, id_ = conn.execute(
            "SELECT i.key, r.id FROM records AS r JOIN items AS i ON i.id = r.id LIMIT 1"
        ).fetchone()
        key = stored.hex()
        conn.execute("UPDATE records SET readouts = '{broken' WHERE id = ?", (id_,))
    with pytest.raises(InputError, match=rf"table records, key {key}, column readouts"):
        load_run(run)
    with (
        RunStore.open(run, read_only=True) as store,
        pytest.raises(InputError, match=rf"corrupted JSON in the run {run}"),
    ):
        list(store.iter_records())
    result = runner.invoke(app, ["report", str(run)])
    assert result.exit_code == 2
    assert "corrupted JSON" in result.output
    with sqlite3.connect(run / "run.sqlite") as conn:
        conn.execute("UPDATE manifest SET value = 'nope' WHERE key = 'config'")
    with pytest.raises(InputError, match=r"table manifest, key config"):
        RunStore.open(run, read_only=True).manifest()


def test_a_run_named_by_its_database_file_locks_its_directory(tmp_path: Path) -> None:
    run_sweep(_small(), tmp_path / "r" / "run.sqlite", progress=False)
    assert (tmp_path / "r" / "run.sqlite").is_file()
    assert (tmp_path / "r" / ".clearsight.lock").is_file()


@pytest.mark.slow
def test_a_pool_run_checks_its_models_in_a_process_of_their_own() -> None:
    """With a process pool the driver checks the models in a spawned process, so it never
    holds a model (nor torch, nor a GPU context) that each worker loads again; a model that
    cannot be used is still one clear error."""
    code = (
        "import sys\n"
        "from clearsight.driver import Execution, ModelNeed, check_models\n"
        "from clearsight.validate import InputError\n"
        "if __name__ == '__main__':\n"
        "    check_models([ModelNeed('hf:smollm2-135m')], Execution('process', 2))\n"
        "    print('pool', 'torch' in sys.modules)\n"
        "    try:\n"
        "        check_models([ModelNeed('hf:/nonexistent/model')], Execution('process', 2))\n"
        "    except InputError as exc:\n"
        "        print('error', exc)\n"
        "    check_models([ModelNeed('hf:smollm2-135m')], Execution('serial', 1))\n"
        "    print('serial', 'torch' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True
    ).stdout.splitlines()
    assert out[0] == "pool False"
    assert out[1].startswith("error model 'hf:/nonexistent/model' cannot be used:")
    assert out[2] == "serial True"


def test_chosen_batch_sizes_join_the_manifest_once_each_and_old_entries_stay_readable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The driver writes what ``batch_size: auto`` chose into the manifest's ``loaded_models``
    entry of each model this start loaded: an entry written before batch sizes were recorded
    (no ``batch_sizes``) gains them, the first choice per image size is kept, a choice already
    written costs no write, and a model the start did not load is left out."""
    from clearsight.driver import _ChosenSizes

    old = {"device": "cpu", "dtype": "float32"}  # a loaded_models entry of an older run
    first = {"rows": 8, "how": "cpu: device memory not measured; 8 rows"}
    with RunStore.open(tmp_path / "r") as store:
        store.begin_run({"config": {"n": 1}, "loaded_models": {"hf:m": old, "observer": {}}})
        writes: list[str] = []
        update = store.update_entry
        monkeypatch.setattr(store, "update_entry", lambda k, v: (writes.append(k), update(k, v)))
        chosen = _ChosenSizes(store, ["hf:m", "observer"])
        chosen.record({"hf:m": {"40x30": first}, "hf:elsewhere": {"40x30": first}})
        chosen.record({"hf:m": {"40x30": {"rows": 2, "how": "another worker"}}})
        chosen.record({"hf:m": {"40x30": first, "text": {"rows": 3, "how": "later"}}})
        loaded = store.manifest()["loaded_models"]
        with pytest.raises(InputError, match="written by the store itself"):
            update("plan", {})
    assert writes == ["loaded_models", "loaded_models"]
    want = {"40x30": first, "text": {"rows": 3, "how": "later"}}
    assert loaded == {"hf:m": {**old, "batch_sizes": want}, "observer": {}}


def test_a_start_that_loaded_no_model_records_no_batch_size(tmp_path: Path) -> None:
    """A run that adds to another's (or ran on Ray, where no model loads in the driver) keeps
    the stored ``loaded_models`` as they are."""
    from clearsight.driver import _ChosenSizes

    with RunStore.open(tmp_path / "r") as store:
        store.begin_run({"config": {"n": 1}})
        _ChosenSizes(store, ()).record({"hf:m": {"text": {"rows": 8, "how": "cpu"}}})
        assert "loaded_models" not in store.manifest()
