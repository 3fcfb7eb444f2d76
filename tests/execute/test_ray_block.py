"""A local Ray instance started by a run's first stage serves every later stage of the run
(grounding's stages start Ray once) and is shut down when the run ends.

Its own module: ``tests/test_ray.py`` keeps one Ray instance up for all its tests.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

import fixtures.units
from clearsight.driver import Execution, Protocol, Stage, run
from clearsight.execute import execute
from clearsight.specs import Spec
from clearsight.store import Record, RunStore
from fixtures.units import Toy0, Toy1, Toy2, ToyItem, ToyUnit

pytestmark = pytest.mark.slow


STAGE_ITEMS: dict[int, type[ToyItem]] = {0: Toy0, 1: Toy1, 2: Toy2, 3: ToyItem}


def toy_unit(stage: int) -> ToyUnit:
    """Two items of no model."""
    return ToyUnit(tuple(STAGE_ITEMS[stage](f"{stage}-{i}", i) for i in range(2)))


def ok(unit: ToyUnit) -> list[Record]:
    return [Record(item.key, "ok", None, {"i": item.i}, {}, 0.0) for item in unit.items]


def _units(stage: int, pending: Sequence[Spec]) -> list[ToyUnit]:
    return [toy_unit(stage)] if pending else []


def _stages(config: dict[str, Any], plan: None, store: RunStore) -> Iterator[Stage[Any]]:
    ray = sys.modules["ray"]
    for stage in (0, 1, 2):
        if stage:
            assert ray.is_initialized()  # kept from the stage before
        yield Stage(f"toy.{stage}", toy_unit(stage).items, lambda p, s=stage: _units(s, p), ok)


TOY: Protocol[dict[str, Any], None] = Protocol(
    "toy", lambda c: [], lambda c: None, lambda c, p: {"config": c}, _stages
)


def test_one_local_instance_per_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ray = pytest.importorskip("ray")
    assert not ray.is_initialized()
    for module in (sys.modules[__name__], fixtures.units):  # workers can't import tests
        ray.cloudpickle.register_pickle_by_value(module)
    starts: list[Any] = []
    real_init = ray.init
    monkeypatch.setattr(ray, "init", lambda *a, **k: starts.append(k) or real_init(*a, **k))
    summary = run(TOY, {"n": 1}, tmp_path / "run", Execution("ray", progress=False))
    assert summary.ok == 6
    assert len(summary.stages) == 3
    assert not ray.is_initialized()  # the run's end shut it down
    assert len(starts) == 1
    # a bare execution starts and stops its own instance
    with RunStore.open(tmp_path / "run") as store:
        store.add_items((i.key, i.kind, i.to_json()) for i in toy_unit(3).items)
        assert execute([toy_unit(3)], ok, store, executor="ray", progress=False).ok == 2
        assert not ray.is_initialized()
        assert len(starts) == 2
        assert sum(r.status == "ok" for r in store.iter_records()) == 8
    for module in (sys.modules[__name__], fixtures.units):
        ray.cloudpickle.unregister_pickle_by_value(module)
