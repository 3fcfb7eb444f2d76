"""A local Ray instance started inside a ``ray_settings`` block serves every execution in it
(a protocol with several stages starts Ray once) and ends with the block.

Its own module: ``tests/test_ray.py`` keeps one Ray instance up for all its tests.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from clearsight.execute import execute, ray_settings
from clearsight.ray_executor import RayConfig
from clearsight.store import Record, RunStore

pytestmark = pytest.mark.slow


class Unit:
    """Two items of no model."""

    def __init__(self, stage: int) -> None:
        self.items = tuple((f"{stage}-{i}", {"i": i}) for i in range(2))

    @property
    def size(self) -> int:
        return len(self.items)


def ok(unit: Unit) -> list[Record]:
    return [Record(key, "ok", None, {"i": spec["i"]}, {}, 0.0) for key, spec in unit.items]


def test_one_local_instance_per_block(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ray = pytest.importorskip("ray")
    assert not ray.is_initialized()
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers can't import tests
    starts: list[Any] = []
    real_init = ray.init
    monkeypatch.setattr(ray, "init", lambda *a, **k: starts.append(k) or real_init(*a, **k))
    with RunStore.open(tmp_path / "run") as store:
        store.add_items((k, "toy", s) for stage in (0, 1, 2) for k, s in Unit(stage).items)
        with ray_settings(RayConfig()):
            for stage in (0, 1, 2):
                done = execute([Unit(stage)], ok, store, executor="ray", progress=False)
                assert done.ok == 2
                assert ray.is_initialized()  # kept for the next stage
        assert not ray.is_initialized()  # the block's end shut it down
        assert len(starts) == 1
        # outside a block, an execution starts and stops its own instance
        store.add_items((k, "toy", s) for k, s in Unit(3).items)
        assert execute([Unit(3)], ok, store, executor="ray", progress=False).ok == 2
        assert not ray.is_initialized()
        assert len(starts) == 2
        assert sum(r.status == "ok" for r in store.iter_records()) == 8
    ray.cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
