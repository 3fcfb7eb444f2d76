"""Seeded draws of instances per (sensor, dataset): 100 per dataset as the paper's draws, and
its human baseline's "50 questions for each setting".

The paper evaluates "100 InternVL-uncertain instances per dataset" (its Table 4 pilot), 100 per
dataset with K = 11 (Table 6) and 100 SeedBench instances for latency (Table 8), and its human
baseline is "randomly sampling 50 questions for each setting"; it names no procedure for the
draws. clearsight's (:func:`draw_per_dataset`): every instance of a dataset gets a rank, the
content hash of the seed, the sensor whose benchmark the instances are (a stage-1 build's kept
file is one sensor's), the dataset and the instance id, and the ``per`` lowest ranks of each
dataset are drawn. A rank depends on nothing else — not the file's order, nor which other
instances it holds — so a draw is the same on every machine, and with the same seed a smaller
draw is the first part of a larger one: the 50-question human sample lies inside the 100.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from clearsight.probe.instances import Instance
from clearsight.seeding import content_hash
from clearsight.validate import InputError

__all__ = ["Drawn", "draw_per_dataset", "draw_rank"]


def draw_rank(instance: Instance, sensor: str, seed: int) -> str:
    """The instance's rank in a draw (lower is drawn first): the content hash of the seed, the
    sensor, the dataset and the id."""
    return content_hash(["probe draw", seed, sensor, instance.dataset, instance.id])


@dataclass(frozen=True)
class Drawn:
    """A draw: the instances drawn, dataset by dataset (names in order) and in rank order
    within each, and per dataset how many there were to draw from."""

    instances: tuple[Instance, ...]
    available: Mapping[str, int]

    def counts(self) -> dict[str, tuple[int, int]]:
        """Per dataset: (drawn, available)."""
        drawn: dict[str, int] = defaultdict(int)
        for inst in self.instances:
            drawn[inst.dataset] += 1
        return {name: (drawn[name], n) for name, n in self.available.items()}


def draw_per_dataset(instances: Iterable[Instance], per: int, sensor: str, seed: int) -> Drawn:
    """The ``per`` instances of lowest :func:`draw_rank` in each dataset (all of a dataset
    with fewer). InputError for ``per`` below 1 or two instances under one id."""
    if per < 1:
        raise InputError(f"--per {per}: draw at least one instance per dataset")
    by_dataset: dict[str, dict[str, Instance]] = defaultdict(dict)
    for inst in instances:
        if inst.id in by_dataset[inst.dataset]:
            raise InputError(f"instance {inst.id} appears twice: a draw needs unique ids")
        by_dataset[inst.dataset][inst.id] = inst
    drawn: list[Instance] = []
    for name in sorted(by_dataset):
        ranked = sorted(by_dataset[name].values(), key=lambda i: draw_rank(i, sensor, seed))
        drawn += ranked[:per]
    return Drawn(tuple(drawn), {name: len(by_dataset[name]) for name in sorted(by_dataset)})
