"""The Ray executor on a local two-CPU Ray instance: the same records as the serial executor,
a worker process killed mid-run, a unit that keeps failing, Ctrl-C and resume, missing Ray,
progress inside a unit and what a replica learned (auto's batch sizes) reaching the manifest.

Select these tests with ``pytest tests/test_ray.py`` (they are also marked ``slow``).
"""

from __future__ import annotations

import functools
import os
import signal
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import clearsight.execute
import fixtures.latency
import fixtures.units
from clearsight.execute import Interrupted, Summary, execute
from clearsight.execute.on_ray import RayConfig
from clearsight.store import Record, RunStore
from clearsight.sweep.config import SweepConfig
from clearsight.sweep.model_free import DepthUnit, VeqUnit, run_depth_unit, run_veq_unit
from clearsight.sweep.plan import plan_sweep
from clearsight.sweep.protocol import run_sweep
from clearsight.sweep.unit import SweepUnit, run_unit
from clearsight.validate import InputError
from conftest import EXECUTOR_ATOL, EXECUTOR_RTOL, VEQ_RTOL, assert_close
from fixtures.units import RecordingBar, ToyItem, ToyUnit, reporting_run

pytestmark = pytest.mark.slow

SCENES = ("skimage-chelsea", "skimage-coffee", "mpl-grace-hopper")


def small_config(**kw: Any) -> SweepConfig:
    """Three scenes, fog plus every control (one ImageNet-C severity: model-free units too)."""
    args: dict[str, Any] = {
        "scene_ids": SCENES,
        "arms": ("fog",),
        "tasks": ("identify",),
        "wordings": ("mcq.reason", "verbal.plain"),
        "controls": ("clean", "blank", "shuffled", "imagenet_c"),
        "imagenet_c_severities": (3,),
    }
    args.update(kw)
    return SweepConfig(**args)


@pytest.fixture(scope="module")
def ray_local() -> Iterator[Any]:
    """One local Ray instance with two CPUs (and one logical GPU, which Ray only counts) for the
    module; test helpers travel by value."""
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, num_gpus=1, include_dashboard=False, log_to_driver=False)
    for module in (sys.modules[__name__], fixtures.units, fixtures.latency):
        ray.cloudpickle.register_pickle_by_value(module)
    yield ray
    for module in (sys.modules[__name__], fixtures.units, fixtures.latency):
        ray.cloudpickle.unregister_pickle_by_value(module)
    ray.shutdown()


@pytest.fixture(scope="module")
def serial_records(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Any, ...]]:
    """The serial executor's records of :func:`small_config`, by key."""
    run = tmp_path_factory.mktemp("serial") / "run"
    summary = run_sweep(small_config(), run, executor="serial", progress=False)
    assert summary.failed == 0
    return records(run)


def records(run: Path) -> dict[str, tuple[Any, ...]]:
    """status, error, raw and read-outs of every record, by key (timing fields left out)."""
    with RunStore.open(run, read_only=True) as store:
        return {r.key: (r.status, r.error, r.raw, dict(r.readouts)) for r in store.iter_records()}


def assert_same_sweep_records(got: dict[str, Any], want: dict[str, Any]) -> None:
    """A Ray run's sweep records against the serial executor's: statuses, errors, texts,
    answers and every other non-float exactly; the floats to the tolerances across executors
    (conftest: Ray replicas run one numba/BLAS thread, the serial run the defaults)."""
    assert_close(got, want, rtol=EXECUTOR_RTOL, atol=EXECUTOR_ATOL, rtol_for={"v_eq_m": VEQ_RTOL})


def sweep_on_ray(
    cfg: SweepConfig,
    run: Path,
    fn: Callable[[Any], list[Record]],
    ray: RayConfig | None = None,
) -> Summary:
    """What :func:`run_sweep` does, with ``fn`` in place of the sweep's own ``run_unit``."""
    plan = plan_sweep(cfg)
    with RunStore.open(run) as store:
        store.begin_run({"config": cfg.model_dump(mode="json")})
        store.add_items((i.key, i.kind, i.to_json()) for i in plan.items)
        return execute(
            [*plan.units, *plan.veq_units, *plan.depth_units],
            fn,
            store,
            executor="ray",
            workers=2,
            progress=False,
            ray=ray,
        )


def unit_name(unit: SweepUnit | VeqUnit | DepthUnit) -> tuple[str, str]:
    return (unit.model, unit.scene.id)


def dispatch_order(cfg: SweepConfig) -> list[SweepUnit | VeqUnit | DepthUnit]:
    """Units in the order executors start them: costliest first (a stable sort)."""
    plan = plan_sweep(cfg)
    return sorted([*plan.units, *plan.veq_units, *plan.depth_units], key=lambda u: -u.cost)


def run_any(unit: SweepUnit | VeqUnit | DepthUnit) -> list[Record]:
    """The sweep's own run function of ``unit``'s kind (questions, ImageNet-C equivalents or
    depth profiles)."""
    if isinstance(unit, DepthUnit):
        return run_depth_unit(unit)
    return run_veq_unit(unit) if isinstance(unit, VeqUnit) else run_unit(unit)


def kill_once(
    marker: Path, victim: tuple[str, str], run: Callable[[Any], list[Record]], unit: Any
) -> list[Record]:
    """Run ``unit``, except that the first attempt at ``victim`` SIGKILLs its own process."""
    if unit_name(unit) == victim:
        try:
            marker.unlink()  # claimed by exactly one attempt
        except FileNotFoundError:
            pass
        else:
            os.kill(os.getpid(), signal.SIGKILL)
    return run(unit)


def poisoned(
    log: Path,
    raises: tuple[str, str],
    kills: tuple[str, str],
    run: Callable[[Any], list[Record]],
    unit: Any,
) -> list[Record]:
    """Every attempt at ``raises`` raises, every attempt at ``kills`` kills its process."""
    name = unit_name(unit)
    if name in (raises, kills):
        with log.open("a") as f:
            f.write(f"{name[1]}\n")
    if name == raises:
        raise RuntimeError(f"poisoned scene {name[1]}")
    if name == kills:
        os.kill(os.getpid(), signal.SIGKILL)
    return run(unit)


def where_it_ran(rendezvous: Path, unit: ToyUnit) -> list[Record]:
    """Records saying which process and GPU ran ``unit``, once two replicas are up at the same
    time (each waits in ``rendezvous`` for the other, so one replica alone would time out)."""
    import ray

    rendezvous.joinpath(str(os.getpid())).touch()
    deadline = time.monotonic() + 60
    while len(list(rendezvous.iterdir())) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    raw = {
        "pid": os.getpid(),
        "peers": len(list(rendezvous.iterdir())),
        "gpu_ids": [str(g) for g in ray.get_gpu_ids()],
        "cuda_visible": os.environ.get("CUDA_VISIBLE_DEVICES"),
    }
    return [Record(key, "ok", None, raw, {}, 0.0) for key in unit.keys]


def test_units_run_on_their_models_replicas_sharing_a_gpu(ray_local: Any, tmp_path: Path) -> None:
    units = [
        ToyUnit(tuple(ToyItem(f"{model}-{u}", i) for i in range(3)), model)
        for model in ("model-a", "model-b")
        for u in range(3)
    ]
    model_of = {key: u.model for u in units for key in u.keys}
    rendezvous = tmp_path / "rendezvous"
    rendezvous.mkdir()
    with RunStore.open(tmp_path / "run") as store:
        store.add_items((i.key, i.kind, i.to_json()) for u in units for i in u.items)
        summary = execute(
            units,
            functools.partial(where_it_ran, rendezvous),
            store,
            executor="ray",
            workers=2,
            progress=False,
            ray=RayConfig(replicas=1, num_gpus=0.5),
        )
        raw = {r.key: r.raw for r in store.iter_records()}
    assert (summary.units, summary.ok) == (6, 18)
    pids = {m: {raw[k]["pid"] for k in raw if model_of[k] == m} for m in ("model-a", "model-b")}
    assert all(len(p) == 1 for p in pids.values())  # one replica per model ...
    assert pids["model-a"] != pids["model-b"]  # ... of its own
    assert all(r["peers"] == 2 for r in raw.values())  # both up at once on one GPU
    assert all(r["gpu_ids"] == ["0"] and r["cuda_visible"] == "0" for r in raw.values())


def test_the_bar_counts_a_units_items_as_a_replica_answers_them(
    ray_local: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A replica sends how far its unit has got and what it says while the unit runs: the bar
    moves inside each unit before its records are stored, never backwards, with the unit's
    notes beside it in order (a report every 0.7 s; the driver hears them twice a second). A
    stored unit's note is cleared unless the next unit has said something already: its first
    report may reach the writer before the previous unit's records do."""
    bar = RecordingBar()
    monkeypatch.setattr(clearsight.execute, "_progress", lambda total, desc, enabled: bar)
    units = [ToyUnit(tuple(ToyItem(f"u{u}", i) for i in range(8))) for u in range(2)]
    with RunStore.open(tmp_path / "run") as store:
        store.add_items((i.key, i.kind, i.to_json()) for u in units for i in u.items)
        summary = execute(
            units,
            functools.partial(reporting_run, 0.7),
            store,
            executor="ray",
            workers=2,
            ray=RayConfig(replicas=1),  # one unit after the other
        )
    assert (summary.units, summary.ok) == (2, 16)
    assert bar.n == 16
    assert bar.seen == [2, 4, 6, 8, 10, 12, 14, 16]  # quarters of 8, then the stored records
    said = [text for _, text in bar.notes]
    assert [text for text in said if text] == ["quarter 1", "quarter 2", "quarter 3"] * 2
    assert said[-1] == ""  # the last unit stored: nothing beside the bar


def test_a_ray_runs_manifest_holds_the_batch_sizes_auto_chose(
    ray_local: Any, tiny_idefics3_path: Path, tmp_path: Path
) -> None:
    """The replicas send what ``batch_size: auto`` chose back with their units' records, so a
    Ray run's manifest holds the same choices as the serial executor's (its entry holds only
    them: the models loaded on the replicas, not in the driver)."""
    from clearsight.store import run_manifest
    from fixtures.sweep_runs import auto_sized_sweep

    model = f"hf:{tiny_idefics3_path}"
    config = auto_sized_sweep(model)
    chosen = {}
    for executor in ("serial", "ray"):
        summary = run_sweep(config, tmp_path / executor, executor=executor, progress=False)
        assert (summary.failed, summary.ok > 0) == (0, True)
        chosen[executor] = run_manifest(tmp_path / executor)["loaded_models"][model]
    assert chosen["ray"] == {"batch_sizes": chosen["serial"]["batch_sizes"]}
    assert chosen["serial"]["batch_sizes"]  # the serial run chose one


@pytest.mark.parametrize(("replicas", "at_least"), [(2, 1.6), (4, 2.8)])
def test_replicas_of_a_latency_bound_model_run_at_once(
    ray_local: Any, tmp_path: Path, replicas: int, at_least: float
) -> None:
    """A model whose calls take 0.2 s without CPU: n replicas finish the units about n times
    faster than one call after the other would (start-up left out by the rendezvous). The
    latency is long beside the driver's few milliseconds a unit, so a loaded machine (a CI
    runner, other jobs) does not eat the speed-up being measured."""
    latency, per_replica = 0.2, 6
    units = fixtures.latency.latency_units(
        fixtures.latency.script(tmp_path), per_replica * replicas, 5
    )
    rendezvous = tmp_path / "rendezvous"
    rendezvous.mkdir()
    with RunStore.open(tmp_path / "run") as store:
        store.add_items((i.key, i.kind, i.to_json()) for u in units for i in u.items)
        summary = execute(
            units,
            functools.partial(fixtures.latency.ask, rendezvous, replicas, latency),
            store,
            executor="ray",
            workers=2,
            progress=False,
            ray=RayConfig(replicas=replicas, num_cpus=2 / replicas),
        )
        raws = [r.raw for r in store.iter_records()]
    assert (summary.units, summary.ok) == (len(units), 5 * len(units))
    assert {r["text"] for r in raws} == {"yes"}
    assert len({r["pid"] for r in raws}) == replicas
    calls = {(r["start"], r["end"]) for r in raws}
    assert len(calls) == len(units)
    assert all(end - start >= latency for start, end in calls)  # each call slept its latency
    speedup = len(units) * latency / fixtures.latency.busy_span(raws)
    assert at_least <= speedup <= replicas * 1.0001


def test_ray_records_equal_the_serial_executors(
    ray_local: Any, serial_records: dict[str, tuple[Any, ...]], tmp_path: Path
) -> None:
    cfg = small_config()
    summary = run_sweep(
        cfg, tmp_path / "ray", executor="ray", workers=2, progress=False, ray=RayConfig(replicas=2)
    )
    assert summary.ok == len(plan_sweep(cfg).items) == len(serial_records)
    assert summary.failed == 0
    got = records(tmp_path / "ray")
    assert got.keys() == serial_records.keys()
    assert_same_sweep_records(got, serial_records)
    assert any(r[3].get("v_eq_m") for r in got.values())  # the model-free units ran too
    rerun = run_sweep(cfg, tmp_path / "ray", executor="ray", workers=2, progress=False)
    assert (rerun.units, rerun.ok, rerun.failed) == (0, 0, 0)


def test_worker_killed_mid_run_every_record_exactly_once(
    ray_local: Any,
    serial_records: dict[str, tuple[Any, ...]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cfg = small_config()
    order = dispatch_order(cfg)
    victim = unit_name(order[-1])  # started last: 2 replicas x 2 in flight run before it
    assert len(order) > 4
    marker = tmp_path / "kill-once"
    marker.touch()
    written: list[str] = []
    original = RunStore.write_records

    def spy(store: RunStore, recs: list[Record]) -> int:
        written.extend(r.key for r in recs)
        return original(store, recs)

    monkeypatch.setattr(RunStore, "write_records", spy)
    summary = sweep_on_ray(
        cfg, tmp_path / "ray", functools.partial(kill_once, marker, victim, run_any)
    )
    assert not marker.exists(), "the victim unit never ran, so no worker was killed"
    assert (summary.ok, summary.failed) == (len(serial_records), 0)
    assert Counter(written) == Counter(serial_records.keys())  # delivered exactly once each
    assert_same_sweep_records(records(tmp_path / "ray"), serial_records)


def test_unit_that_keeps_failing_is_recorded_with_its_reason(
    ray_local: Any, tmp_path: Path
) -> None:
    cfg = small_config(controls=("clean",), wordings=("mcq.reason",))
    names = [unit_name(u) for u in plan_sweep(cfg).units]
    raises, kills = names[0], names[1]
    log = tmp_path / "attempts.log"
    fn = functools.partial(poisoned, log, raises, kills, run_any)
    summary = sweep_on_ray(cfg, tmp_path / "ray", fn, RayConfig(max_attempts=2))
    assert Counter(log.read_text().split()) == {raises[1]: 2, kills[1]: 2}
    plan = plan_sweep(cfg)
    by_scene = {u.scene.id: set(u.keys) for u in plan.units}
    with RunStore.open(tmp_path / "ray", read_only=True) as store:
        failed = {r.key: r.error for r in store.iter_records(status="failed")}
        ok = {r.key for r in store.iter_records(status="ok")}
    assert set(failed) == by_scene[raises[1]] | by_scene[kills[1]]
    assert ok == {i.key for i in plan.items} - set(failed)
    assert (summary.ok, summary.failed) == (len(ok), len(failed))
    for key in by_scene[raises[1]]:
        assert failed[key] == (
            f"failed 2 attempts on Ray; last: RuntimeError: poisoned scene {raises[1]}"
        )
    for key in by_scene[kills[1]]:
        assert failed[key] is not None
        assert failed[key].startswith("failed 2 attempts on Ray; last: ActorDiedError")


def test_ctrl_c_interrupts_and_a_ray_rerun_resumes(
    ray_local: Any,
    serial_records: dict[str, tuple[Any, ...]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cfg = small_config()
    original = RunStore.write_records
    calls = 0

    def interrupt_third(store: RunStore, recs: list[Record]) -> int:
        nonlocal calls
        calls += 1
        if calls == 3:
            raise KeyboardInterrupt
        return original(store, recs)

    monkeypatch.setattr(RunStore, "write_records", interrupt_third)
    with pytest.raises(Interrupted) as info:
        run_sweep(cfg, tmp_path / "ray", executor="ray", workers=2, progress=False)
    assert info.value.summary.units == 2
    partial = info.value.summary.ok
    assert 0 < partial < len(serial_records)
    monkeypatch.setattr(RunStore, "write_records", original)
    assert ray_local.is_initialized()  # the caller's instance is left running
    resumed = run_sweep(cfg, tmp_path / "ray", executor="ray", workers=2, progress=False)
    assert resumed.ok == len(serial_records) - partial
    assert_same_sweep_records(records(tmp_path / "ray"), serial_records)


def test_without_ray_the_error_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    with (
        RunStore.open(tmp_path / "run") as store,
        pytest.raises(InputError, match=r"pip install 'clearsight\[ray\]'"),
    ):
        execute([], run_unit, store, executor="ray", progress=False)


@pytest.mark.parametrize(
    "command",
    [
        ["sweep", "--scene-ids", ",".join(SCENES[:2])],
        ["probe", "run", "--ids", "bundled/coffee-drink", "--judge", "exact"],
        ["grounding", "--n", "2", "--no-variation"],
    ],
    ids=["sweep", "probe", "grounding"],
)
def test_every_run_command_passes_its_replica_options_to_ray(
    ray_local: Any, tmp_path: Path, command: list[str]
) -> None:
    from typer.testing import CliRunner

    from clearsight.cli import app

    args = [*command, "--out", str(tmp_path / "run"), "--executor", "ray", "--replicas", "1"]
    result = CliRunner().invoke(
        app, [*args, "--gpus-per-replica", "1.5", "--cpus-per-replica", "2"]
    )
    assert result.exit_code == 2, result.output
    assert "no Ray node can hold a replica (2 CPU and 1.5 GPU per replica)" in result.output


def test_probe_on_ray_equals_serial(ray_local: Any, tmp_path: Path) -> None:
    """Conversations with scripted reasoner and sensor: the same transcripts either way."""
    from clearsight.probe.protocol import run_probe
    from fixtures.probe_runs import probe_config

    cfg = probe_config(tmp_path)
    serial = run_probe(cfg, tmp_path / "serial", progress=False)
    want = records(tmp_path / "serial")
    for workers in (2, 1):  # one replica too: never the in-process runner that holds the store
        run = tmp_path / f"ray-{workers}"
        on_ray = run_probe(cfg, run, executor="ray", workers=workers, progress=False)
        assert (on_ray.ok, on_ray.failed) == (serial.ok, serial.failed) == (8, 0)
        got = records(run)
        # exact: scripted reasoner and sensor, exact judge; past the latencies the only float
        # is mean_u, a mean of integer counts, the same arithmetic on the same integers
        assert untimed(got) == untimed(want)
        assert untimed(got) != got  # the sensor's latencies were there to leave out


def untimed(value: Any) -> Any:
    """``value`` without its ``latency_s`` fields (wall times differ from run to run)."""
    if isinstance(value, dict):
        return {k: untimed(v) for k, v in value.items() if k != "latency_s"}
    if isinstance(value, list | tuple):
        return type(value)(untimed(v) for v in value)
    return value


def test_grounding_on_ray_equals_serial(
    ray_local: Any, tiny_llama_path: Path, tmp_path: Path
) -> None:
    """Every stage of a small grounding run (trajectories, edits, elicitations) on Ray replicas
    of a tiny Llama: the same records as the serial executor."""
    from clearsight.grounding import GroundingConfig, run_grounding

    model = f"hf:{tiny_llama_path}"
    cfg = GroundingConfig(
        model=model, generator=model, n_problems=4, max_new_tokens=6, unit_size=8, variation=False
    )
    serial = run_grounding(cfg, tmp_path / "serial", progress=False)
    on_ray = run_grounding(
        cfg, tmp_path / "ray", executor="ray", workers=2, progress=False, ray=RayConfig(replicas=2)
    )
    assert {k: (v.ok, v.failed) for k, v in on_ray.stages.items()} == {
        k: (v.ok, v.failed) for k, v in serial.stages.items()
    }
    assert on_ray.ok > 4 * 3
    # texts and choices equal; probabilities equal up to the order of float sums (the serial
    # run uses torch's default threads, a replica one): float32 logits and softmax sums, so
    # 1e-5 relative (~100 float32 ulps), plus 1e-9 absolute for probabilities near zero
    assert_close(
        untimed(records(tmp_path / "ray")),
        untimed(records(tmp_path / "serial")),
        rtol=1e-5,
        atol=1e-9,
    )


def test_unknown_executor_and_a_replica_no_node_can_hold(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    cfg = small_config(scene_ids=SCENES[:1], controls=("clean",), wordings=("mcq.reason",))
    with pytest.raises(InputError, match="serial, process, ray"):
        run_sweep(cfg, tmp_path / "a", executor="threads", progress=False)  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"no Ray node can hold a replica \(1 CPU and 2 GPU"):
        run_sweep(
            cfg,
            tmp_path / "b",
            executor="ray",
            workers=1,
            progress=False,
            ray=RayConfig(num_gpus=2),
        )
