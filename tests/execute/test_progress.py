"""Progress inside a unit: the bar counts a unit's items as its backend answers them, in this
process and from pool workers, settles on the stored records, and the run's processes use one
CPU thread unless told otherwise (recorded in the manifest)."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from clearsight import execute
from clearsight.execute import progress
from clearsight.execute.threads import THREAD_VARIABLES, run_threads, use_threads
from clearsight.store import RunStore
from fixtures.units import RecordingBar, reporting_run


@dataclass(frozen=True)
class _Unit:
    """A unit of ``size`` items (run by :func:`~fixtures.units.reporting_run`)."""

    keys: tuple[str, ...]
    model: str = ""

    @property
    def size(self) -> int:
        return len(self.keys)

    @property
    def cost(self) -> float:
        return float(self.size)


def _store_with(tmp_path: Path, n: int) -> tuple[RunStore, list[str]]:
    from clearsight.sweep.specs import SceneRef, VeqItem

    store = RunStore.open(tmp_path / "run")
    store.begin_run({"config": {}})
    scene = SceneRef("bundled", "s", ("dog",), ((0, 0, 1, 1),))
    items = [VeqItem(scene=scene, severity=1, seed=i) for i in range(n)]
    store.add_items(items)
    return store, [it.key for it in items]


@pytest.mark.parametrize(("executor", "workers"), [("serial", 1), ("process", 2)])
def test_the_bar_counts_a_units_items_before_the_unit_is_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, executor: str, workers: int
) -> None:
    bar = RecordingBar()
    monkeypatch.setattr(execute, "_progress", lambda total, desc, enabled: bar)
    store, keys = _store_with(tmp_path, 16)
    pause = 0.0 if executor == "serial" else 0.7  # the pool's parent drains twice a second
    units = [_Unit(tuple(keys[:8])), _Unit(tuple(keys[8:]))]
    with store:
        summary = execute.execute(
            units,
            functools.partial(reporting_run, pause),
            store,
            executor=executor,  # type: ignore[arg-type]
            workers=workers,
        )
    assert summary.ok == 16
    assert bar.n == 16
    partial = [n for n in bar.seen if n % 8]  # positions inside a unit
    assert partial, bar.seen  # 2 and 4 (a quarter, a half of 8) before the first commit
    assert bar.seen == sorted(bar.seen)  # never backwards
    if executor == "serial":
        assert bar.seen == [2, 4, 6, 8, 10, 12, 14, 16]


def test_a_unit_never_shows_its_last_item_before_it_is_stored() -> None:
    bar = RecordingBar()
    shown = progress.UnitProgress(bar.update, 300)  # whole items
    shown(0.002)  # 0.6 items: nothing moves
    shown(1.0)
    shown(0.5)  # a lower share does not move it back
    assert bar.seen == [299]
    shown.settle(300)
    assert bar.n == 300


def test_a_small_unit_moves_in_hundredths_and_never_shows_its_end() -> None:
    """A unit of fewer than a hundred items (a probe conversation is one) moves the bar in a
    hundredth of the unit at a time, up to the last hundredth before its end."""
    bar = RecordingBar()
    shown = progress.UnitProgress(bar.update, 3)
    shown(0.004)  # under a hundredth: nothing moves
    shown(0.25)
    shown(1.0)
    shown(0.5)
    assert bar.seen == pytest.approx([0.75, 2.97], abs=1e-12)
    shown.settle(3)
    assert bar.n == pytest.approx(3, abs=1e-12)


def test_an_inner_call_covers_its_share_of_the_outer_one() -> None:
    got: list[float] = []
    notes: list[str] = []
    with progress.reporting_to(got.append, notes.append):
        progress.report(1, 2)
        with progress.within(0.5, 1.0):
            progress.report(1, 4)
            progress.say("inner")
            progress.report(4, 4)
        with progress.within(0.5, 0.75, "turn 3 of 4"):  # says its note and its start
            progress.say("sensor: 1 of 2 samples")
            progress.report(1, 2)
    assert got == pytest.approx([0.5, 0.625, 1.0, 0.5, 0.625], abs=1e-12)
    assert notes == ["inner", "turn 3 of 4", "turn 3 of 4, sensor: 1 of 2 samples"]
    progress.report(1, 2)  # no sink: nothing happens, nothing raises
    progress.say("nobody listens")


def test_only_the_reports_that_change_the_bar_cross_to_the_writer() -> None:
    """A backend reports every generated token; a worker sends only a new position of its unit
    or a new note."""
    sent: list[tuple[float | None, str | None]] = []
    changes = progress.Changes(3, lambda share, note: sent.append((share, note)))
    with changes.reporting():
        for share in (0.0, 0.001, 0.004, 0.5, 0.5, 0.504):
            progress.report(share * 1000, 1000)
        progress.say("turn 1 of 4")
        progress.say("turn 1 of 4")
        progress.say("turn 2 of 4")
    assert sent == [
        (0.0, None),
        (0.5, None),
        (None, "turn 1 of 4"),
        (None, "turn 2 of 4"),
    ]


@pytest.mark.parametrize(("executor", "workers"), [("serial", 1), ("process", 2)])
def test_a_probe_conversation_says_its_turns_and_moves_the_bar_before_it_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, executor: str, workers: int
) -> None:
    """A probe unit is one conversation: each turn says "turn t of T" (and the sensor its
    samples as they are answered) beside the bar, in order, and the bar moves by the turns
    taken before the conversation's record is stored."""
    from clearsight.probe.protocol import run_probe
    from fixtures.probe_runs import IDS, probe_config

    bar = RecordingBar()
    monkeypatch.setattr(execute, "_progress", lambda total, desc, enabled: bar)
    config = probe_config(tmp_path, instance_ids=IDS[:1], strategies=("bp",), runs=1)
    summary = run_probe(config, tmp_path / "run", executor=executor, workers=workers)
    assert (summary.ok, summary.failed) == (1, 0)
    assert bar.notes == [
        (0, "turn 1 of 4"),
        (0, "turn 1 of 4, sensor: 5 of 5 samples"),
        (0, "turn 2 of 4"),
        (1, ""),  # stored: the count is the record, the note goes
    ]
    assert bar.seen == pytest.approx([0.25, 1.0], abs=1e-12)  # a turn of four, then the record


def test_a_run_uses_one_thread_unless_told_otherwise(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.delenv("OMP_NUM_THREADS")  # unset now, and again after the test
    assert run_threads(None) == 1
    assert run_threads(3) == 3
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert run_threads(None) == 2
    for junk in ("", "0", "two", "-1"):
        monkeypatch.setenv("OMP_NUM_THREADS", junk)
        assert run_threads(None) == 1
    before = torch.get_num_threads()
    try:
        use_threads(1)
        assert torch.get_num_threads() == 1
        import os

        assert os.environ["OPENBLAS_NUM_THREADS"] == "1"
    finally:
        torch.set_num_threads(before)


def test_the_manifest_records_the_threads_and_the_run_says_what_it_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import torch

    from clearsight.sweep.config import SweepConfig
    from clearsight.sweep.protocol import run_sweep

    for name in THREAD_VARIABLES:  # as they were after the test (set, so that it is recorded)
        monkeypatch.setenv(name, "1")
        monkeypatch.delenv(name)
    threads_before = torch.get_num_threads()
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)  # a person at a terminal
    config = SweepConfig(
        scene_ids=("skimage-chelsea",), arms=("fog",), tasks=("identify",), controls=("clean",)
    )
    run_sweep(config, tmp_path / "a")
    said = capsys.readouterr().err
    assert "loading observer" in said
    assert "planning the sweep run" in said
    assert "storing" in said
    try:
        run_sweep(config, tmp_path / "b", threads=2, progress=False)
    finally:
        torch.set_num_threads(threads_before)
    assert capsys.readouterr().err == ""  # without progress the run says nothing
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)
    run_sweep(config, tmp_path / "c")
    assert "loading" not in capsys.readouterr().err  # a log or a pipe: no status lines
    for run, threads in (("a", 1), ("b", 2)):
        with RunStore.open(tmp_path / run, read_only=True) as store:
            assert store.manifest()["cpu_threads"] == threads


def test_an_hf_model_reports_its_rows_as_they_finish_generating(
    hf_models_dir: Path, smollm2_path: Path
) -> None:
    from clearsight.models import Decoding, Message, Request
    from clearsight.models.hf import make_hf
    from fixtures.hf_tiny import build_tiny

    path = hf_models_dir / "tiny-llama"
    if not (path / "config.json").is_file():
        build_tiny("llama", path, smollm2_path)
    backend = make_hf(str(path), {"batch_size": 2})
    requests = [  # one short and one long reply per chunk of two
        Request((Message.user(f"Say {k}."),), Decoding(max_new_tokens=1 + 7 * (k % 2)))
        for k in range(4)
    ]
    shares: list[float] = []
    with progress.reporting_to(shares.append):
        backend.complete(requests)
    assert shares[-1] == 1.0
    # inside the first chunk its short reply is done before its long one: a quarter of the call
    assert pytest.approx(0.25, abs=1e-12) in shares
    assert all(0.0 <= s <= 1.0 for s in shares)


def test_runs_of_other_thread_counts_in_one_process_leave_numba_compiling() -> None:
    """A process that ran with one thread count and then another still compiles numba
    functions: numba refuses to compile once ``NUMBA_NUM_THREADS`` no longer names the pool it
    launched, which ``use_threads`` used to rewrite (the physics tests after a two-run test
    all failed)."""
    script = (
        "import numba, numpy as np\n"
        "from clearsight.execute.threads import use_threads\n"
        "use_threads(1)\n"
        "@numba.njit(parallel=True)\n"
        "def twice(a):\n"
        "    out = np.empty_like(a)\n"
        "    for i in numba.prange(a.size):\n"
        "        out[i] = 2.0 * a[i]\n"
        "    return out\n"
        "assert twice(np.ones(8))[0] == 2.0\n"
        "use_threads(2)\n"
        "@numba.njit\n"
        "def thrice(x):\n"
        "    return 3.0 * x\n"
        "assert thrice(1.0) == 3.0\n"
        "print(numba.get_num_threads())\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() in {"1", "2"}
