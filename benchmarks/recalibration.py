"""Calibration under weather (issue 45 item 3): what one photo-bootstrap draw costs.

A draw of :func:`clearsight.sweep.numbers.weather_draw.draw_numbers` refits temperature, Platt,
isotonic and the conformal threshold on the draw's clean answers and rescores every cell. The
group here is synthetic and of the paper's size: 36,000 items of one model x task x wording
from 1,000 photos (36 each: the clean image, fog and water at 8 levels, ImageNet-C fog at 5
severities and a blank, some questions twice), four content letters per question.

Prints ``name: value`` lines:

* ``recalibration_ms_per_draw_36k`` — best wall time of one draw (multinomial photo weights,
  seeded), in ms.
* ``recalibration_draws_per_s_36k`` — its inverse.

Run it on main and on a branch (``PYTHONPATH=src:tests``) to compare the two: the group is
built from the public :class:`~clearsight.sweep.numbers.weather_items.Group` only.
"""

from __future__ import annotations

import math

import numpy as np

from _timing import best_time, report
from clearsight.metrics import bootstrap_weights
from clearsight.sweep.numbers.weather_draw import draw_numbers
from clearsight.sweep.numbers.weather_items import Group, Items

N_PHOTOS = 1000
PER_PHOTO = 36
LEVELS = (250.0, 125.0, 62.5, 31.25, 15.625, 7.8125, 3.90625, 1.953125)


def synthetic_group(seed: int = 0) -> Group:
    """A paper-sized group: letters from random logits that fog flattens, the confidence the
    chosen letter's probability, right with a probability below it (overconfident)."""
    rng = np.random.default_rng(seed)
    cells: list[tuple[str, float]] = [("", math.inf)]
    arms: dict[str, list[int]] = {}
    for arm, levels in (("fog", LEVELS), ("water", LEVELS), ("imagenet_c fog", LEVELS[2:7])):
        arms[arm] = list(range(len(cells), len(cells) + len(levels)))
        cells += [(arm, v) for v in levels]
    n = N_PHOTOS * PER_PHOTO
    cell = rng.integers(0, len(cells) + 1, size=n)  # the last: blank
    visibility = np.array([v for _, v in cells] + [0.01])[cell]
    sharp = np.clip(np.log10(visibility) / 2.0, 0.05, 3.0)
    z = rng.normal(0.0, 1.0, size=(n, 4)) * sharp[:, None] * 2.0
    z -= np.log(np.exp(z).sum(axis=1, keepdims=True))
    conf = np.exp(z).max(axis=1)
    label = np.where(rng.uniform(size=n) < conf**1.5, z.argmax(axis=1), rng.integers(0, 4, n))
    correct = (label == z.argmax(axis=1)).astype(np.float64)
    items = Items(
        conf=conf,
        correct=correct,
        answered=rng.uniform(size=n) < 0.97,
        cluster=np.repeat(np.arange(N_PHOTOS), PER_PHOTO),
        cell=cell,
        z=z,
        label=label,
    )
    return Group("m", "identify", "mcq.reason", "internal_conf", 0.25, items, items, cells, arms)


def main() -> None:
    group = synthetic_group()
    weights = bootstrap_weights(N_PHOTOS, 8, seed=0).astype(np.float64)
    rows = iter(np.vstack([weights] * 10))
    seconds = best_time(lambda: draw_numbers(group, next(rows), 0.05), repeats=7, warmup=1)
    report("recalibration_ms_per_draw_36k", 1e3 * seconds, 2)
    report("recalibration_draws_per_s_36k", 1.0 / seconds, 1)


if __name__ == "__main__":
    main()
