"""The populations of Table 8, Fig. 4 / Table 7 and the distillation set (issue 46 item 10):
seconds per conversation without model loading; the belief probe per reasoner, sensor and
signal (pooled as a second table); the distillation set without ablation-signal conversations,
from a held-out split of SeedBench, and Table 2 on the instances it did not train on."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from clearsight.probe.numbers.convergence import belief_curves, belief_table


def _belief_row(
    reasoner: str, sensor: str, signal: str, steps: int | None, right: bool
) -> dict[str, Any]:
    return {
        "reasoner": reasoner,
        "sensor": sensor,
        "signal": signal,
        "dataset": "seedbench",
        "correct": right,
        "reached": steps is not None,
        "steps_to_threshold": steps,
        "p_chosen": 0.9,
        "p_correct": [0.25, 0.5 if right else 0.1],
    }


def test_the_belief_probe_is_split_by_sensor_and_signal_and_pooled_apart() -> None:
    rows = pd.DataFrame(
        [
            _belief_row("r", "s1", "true", 2, True),
            _belief_row("r", "s1", "true", 4, True),
            _belief_row("r", "s1", "random", 1, True),  # the ablation: a population of its own
            _belief_row("r", "s2", "true", None, True),
        ]
    )
    table = belief_table(rows).set_index(["sensor", "signal"])
    assert table.loc[("s1", "true"), "steps"] == pytest.approx(3.0)
    assert table.loc[("s1", "true"), "conversations"] == 2
    assert table.loc[("s1", "random"), "steps"] == pytest.approx(1.0)
    assert table.loc[("s2", "true"), "reach"] == pytest.approx(0.0)
    (pooled,) = belief_table(rows, pooled=True).to_dict("records")
    assert pooled["conversations"] == 4
    assert pooled["steps"] == pytest.approx((2 + 4 + 1) / 3)
    assert pooled["reach"] == pytest.approx(75.0)
    curves = belief_curves(rows)
    assert sorted(curves.means) == [
        "r, sensor s1, signal random",
        "r, sensor s1, signal true",
        "r, sensor s2, signal true",
    ]
    assert curves.means["r, sensor s1, signal true"] == pytest.approx((0.25, 0.5))
    assert list(belief_curves(rows, pooled=True).means) == ["r"]


def test_the_pooled_table_7_is_shown_only_where_it_pools() -> None:
    from clearsight.probe.analysis import _pooled_convergence

    one = pd.DataFrame([_belief_row("r", "s1", "true", 2, True)])
    assert _pooled_convergence(one).empty
    two = pd.DataFrame(
        [_belief_row("r", "s1", "true", 2, True), _belief_row("r", "s1", "none", 3, True)]
    )
    assert len(_pooled_convergence(two)) == 1


def test_seconds_per_conversation_exclude_model_loading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Loading takes 0.6 s (each model, once per process); the conversations themselves are
    scripted and fast: no record's seconds may hold a load."""
    from clearsight.models import registry
    from clearsight.probe import unit
    from clearsight.probe.plan import plan_probe
    from fixtures.probe_runs import probe_config

    real = registry.load_backend
    loads: list[str] = []

    def slow(spec: str, options: Any = None) -> Any:
        loads.append(spec)
        time.sleep(0.6)
        return real(spec, options)

    monkeypatch.setattr(registry, "load_backend", slow)
    monkeypatch.setattr(registry, "_SHARED", {})
    monkeypatch.setattr(unit, "_SENSORS", {})
    specs = plan_probe(probe_config(tmp_path, runs=1))
    records = [r for spec in specs for r in unit.run_probe_unit(unit.ProbeUnit(spec))]
    assert len(loads) == 2  # the sensor and the reasoner, each once
    assert all(r.status == "ok" for r in records)
    assert max(r.elapsed_s for r in records) < 0.5


def _bp(iid: str, dataset: str, signal: str = "true", reasoner: str = "hf:base") -> Any:
    """A successful two-turn BP conversation on instance ``iid`` of ``dataset``."""
    from clearsight.probe.instances import Instance
    from clearsight.probe.transcript import Transcript, Turn

    inst = Instance(iid, "", "Which?", ("x", "y"), "A", dataset, "colour")
    t = Transcript.start(inst, reasoner=reasoner, strategy="bp", sensor="s", k=3, signal=signal)
    return t.with_turn(Turn(1, "The answer is: (A)", commit="A"))


def test_the_held_out_split_is_a_seeded_share_of_instances() -> None:
    from clearsight.probe.distill.sft import in_held_out_split

    ids = [f"seedbench/{i}" for i in range(2000)]
    half = [i for i in ids if in_held_out_split(i, 0.5, 0)]
    assert 900 < len(half) < 1100  # binomial(2000, 0.5): 5 SD either side
    assert half == [i for i in reversed(ids) if in_held_out_split(i, 0.5, 0)][::-1]
    assert set(half) != {i for i in ids if in_held_out_split(i, 0.5, 1)}  # the seed matters
    quarter = {i for i in ids if in_held_out_split(i, 0.25, 0)}
    assert quarter < set(half)  # a smaller share is a subset: one draw per instance
    assert all(in_held_out_split(i, 1.0, 0) for i in ids)


def _rule(config: Any) -> Any:
    """The distillation set's rule of ``config``, as ``probe distill`` makes it."""
    from clearsight.probe.distill.sft import distillation_set

    return distillation_set(config.signal, config.datasets, config.held_out, config.seed)


def test_the_distillation_set_leaves_out_the_ablation_and_other_datasets(tmp_path: Path) -> None:
    from clearsight.probe.distill.sft import in_held_out_split, successful_trajectories
    from clearsight.probe.distill.train import DistillConfig
    from clearsight.probe.records import store_transcript
    from clearsight.store import RunStore
    from clearsight.validate import InputError

    ids = [f"seedbench/{i}" for i in range(12)]
    run = tmp_path / "run"
    with RunStore.open(run) as store:
        for iid in ids:
            store_transcript(store, _bp(iid, "seedbench"))
            store_transcript(store, _bp(iid, "seedbench", signal="random"))
        store_transcript(store, _bp("cvqa/1", "cvqa"))
    config = DistillConfig(reasoner="hf:base")
    _, chosen = successful_trajectories(run, "hf:base", "bp", *_rule(config))
    held = [i for i in ids if in_held_out_split(i, 0.5, 0)]
    assert 0 < len(held) < len(ids)
    assert [t.instance_id for _, t in chosen] == held
    assert {t.signal for _, t in chosen} == {"true"}
    everything = DistillConfig(datasets=("seedbench", "cvqa"), held_out=1.0)
    _, chosen = successful_trajectories(run, "hf:base", "bp", *_rule(everything))
    assert len(chosen) == len(ids) + 1
    none = DistillConfig(datasets=("mmstar",))
    with pytest.raises(InputError, match="with true u in the held-out split"):
        successful_trajectories(run, "hf:base", "bp", *_rule(none))


def test_table_2_compares_on_instances_no_adapter_trained_on() -> None:
    from clearsight.probe.distill.analysis import distill_table

    rows = [
        # trained on t/1: its conversations (right for the adapter) are left out
        ("hf:sft", "bp", "seedbench", "t/1", "true", True),
        ("hf:base", "bp", "seedbench", "t/1", "true", True),
        ("hf:sft", "bp", "seedbench", "t/2", "true", True),
        ("hf:base", "bp", "seedbench", "t/2", "true", False),
        ("hf:sft", "bp", "seedbench", "t/3", "true", False),
        ("hf:base", "bp", "seedbench", "t/3", "true", False),
        ("hf:sft", "bp", "seedbench", "t/2", "random", False),  # the ablation: not Table 2's
    ]
    columns = ["reasoner", "strategy", "dataset", "instance_id", "signal", "correct"]
    frame = pd.DataFrame(rows, columns=columns)
    table = distill_table(frame, {"hf:sft": "hf:base"}, frozenset({"t/1"})).set_index("reasoner")
    assert table.loc["hf:sft", "seedbench"] == pytest.approx(50.0)
    assert table.loc["hf:base", "seedbench"] == pytest.approx(0.0)
    assert table.loc["hf:sft", "conversations"] == 2
