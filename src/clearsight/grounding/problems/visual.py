"""The bundled visual problems, which need a VLM: bar charts drawn with matplotlib and counts of
red boxes drawn around the annotated objects of one category in the bundled photos
(:mod:`clearsight.scenes.bundled`). A problem holds its picture as a ``chart:`` or ``scene:``
reference, resolved to pixels by :func:`clearsight.grounding.problems.images.render_image`."""

from __future__ import annotations

import json
from functools import lru_cache

import numpy as np

from clearsight.grounding.problems.families import BENCHMARK_OF, solution
from clearsight.grounding.problems.problem import Problem
from clearsight.validate import InputError

__all__ = ["chart_problem", "count_problem"]


def chart_problem(rng: np.random.Generator, pid: str) -> Problem:
    """A bar chart of four bars (drawn from its ``chart:`` reference): the value of one bar,
    or how much taller the tallest is than the shortest."""
    labels = [str(x) for x in rng.choice(list("PQRSTUVW"), size=4, replace=False)]
    values = [int(v) for v in rng.integers(1, 10, size=4)]
    while len(set(values)) < 4:
        values = [int(v) for v in rng.integers(1, 10, size=4)]
    i = int(rng.integers(0, 4))
    ref = "chart:" + json.dumps({"labels": labels, "values": values}, separators=(",", ":"))
    listing = ", ".join(f"{lab} = {v}" for lab, v in zip(labels, values, strict=True))
    if rng.random() < 0.5:
        ans = str(values[i])
        q = f"The bar chart shows four bars. What is the value of bar {labels[i]}?"
        reasoning = f"Bar {labels[i]} reaches the gridline at {ans}."
        alt = f"Reading the height of bar {labels[i]} against the axis gives {ans}."
    else:
        ans = str(max(values) - min(values))
        q = "The bar chart shows four bars. How much taller is the tallest bar than the shortest?"
        hi, lo = max(values), min(values)
        reasoning = f"The tallest is {hi} and the shortest {lo}: {hi} - {lo} = {ans}."
        alt = f"The difference between {max(values)} and {min(values)} is {ans}."
    sol = solution(
        f"The bars read {listing}.",
        reasoning,
        ans,
        f"From left to right the heights are {', '.join(map(str, values))}.",
        alt,
    )
    return Problem(pid, BENCHMARK_OF["chart"], q, ans, "number", image=ref, solution=sol)


@lru_cache(maxsize=1)
def _count_targets() -> list[tuple[str, str, int]]:
    """(scene id, category, count) for every category annotated in an available bundled scene."""
    from clearsight.scenes.bundled import bundled_specs, photo_missing

    out = []
    for spec in bundled_specs().values():
        if photo_missing(spec):
            continue
        cats: dict[str, int] = {}
        for t in spec.targets:
            cats[t.category] = cats.get(t.category, 0) + 1
        out += [(spec.id, c, n) for c, n in sorted(cats.items())]
    return out


def count_problem(rng: np.random.Generator, pid: str) -> Problem:
    """A bundled photo with red boxes around every annotated object of one category (drawn
    from its ``scene:`` reference): how many boxes there are. InputError without a photo."""
    targets = _count_targets()
    if not targets:
        raise InputError("no bundled scene photo is available for count problems (`make data`)")
    scene, category, n = targets[int(rng.integers(0, len(targets)))]
    ref = "scene:" + json.dumps({"scene": scene, "category": category}, separators=(",", ":"))
    q = f"How many red boxes are drawn in the picture? Each box marks one {category}."
    sol = solution(
        f"The picture shows {n} red box{'es' if n != 1 else ''} around {category} objects.",
        f"Counting the boxes one by one gives {n}.",
        str(n),
        f"There {'are' if n != 1 else 'is'} {n} boxed {category} object{'s' if n != 1 else ''}.",
        f"Each red box is one {category}; there are {n} of them.",
    )
    return Problem(
        pid,
        BENCHMARK_OF["count"],
        q,
        str(n),
        "number",
        image=ref,
        solution=sol,
        meta={"scene": scene, "category": category},
    )
