"""Bundled verifiable problems: arithmetic, geometry and logic word problems, charts and counts.

Every problem is a pure function of ``(family, index, seed)`` (numbers drawn from a generator
seeded by their content hash), has an exact gold answer, and carries a canonical *solution* — an
observation (the facts read from the problem or picture: the "vision" part of a trajectory), a
reasoning chain and the answer — written by rule. TGS-Bench uses it as the good trajectory, and
the ``*_alt`` variants (same facts or same answer, other words) feed content variation.

Text families run on any language model; the visual ones (``chart``: bar charts drawn with
matplotlib; ``count``: red boxes drawn around the annotated objects of one category in the bundled
photos, :mod:`clearsight.scenes.bundled`; both in :mod:`clearsight.grounding.problems.visual`)
need a VLM and are resolved to pixels by :func:`clearsight.grounding.problems.images.render_image`
from their ``chart:`` / ``scene:`` reference. The families' names and benchmarks:
:mod:`clearsight.grounding.problems.families`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import gcd

import numpy as np

from clearsight.grounding.problems.families import (
    BENCHMARK_OF,
    TEXT_FAMILIES,
    VISUAL_FAMILIES,
    solution,
)
from clearsight.grounding.problems.problem import LETTERS, Problem
from clearsight.grounding.problems.visual import chart_problem, count_problem
from clearsight.seeding import rng_for
from clearsight.validate import InputError

_NAMES = ("Ana", "Ben", "Chen", "Dara", "Eli", "Femi", "Gus", "Hana", "Ivo", "Jun")
_THINGS = ("apples", "pencils", "books", "stamps", "marbles", "cards", "shells", "coins")


def _shop(rng: np.random.Generator, pid: str) -> Problem:
    thing = str(rng.choice(_THINGS))
    a, b, c = int(rng.integers(12, 60)), int(rng.integers(2, 7)), int(rng.integers(3, 12))
    d = int(rng.integers(5, a))
    ans = a + b * c - d
    q = (
        f"A shop has {a} {thing}. It receives {b} boxes with {c} {thing} in each box and then "
        f"sells {d} {thing}. How many {thing} does the shop have now?"
    )
    sol = solution(
        f"The shop starts with {a} {thing}, receives {b} boxes of {c} {thing} and sells {d}.",
        f"The boxes hold {b} x {c} = {b * c} {thing}. Before selling it has {a} + {b * c} = "
        f"{a + b * c}. After selling it has {a + b * c} - {d} = {ans}.",
        str(ans),
        f"There are {a} {thing} at first; {b} boxes arrive, each with {c}; {d} are sold.",
        f"Selling first leaves {a} - {d} = {a - d}. The {b} boxes add {b} x {c} = {b * c}, so "
        f"the total is {a - d} + {b * c} = {ans}.",
    )
    return Problem(pid, BENCHMARK_OF["shop"], q, str(ans), "number", solution=sol)


def _travel(rng: np.random.Generator, pid: str) -> Problem:
    v, t, e = int(rng.integers(30, 90)), int(rng.integers(2, 6)), int(rng.integers(5, 40))
    ans = v * t + e
    q = (
        f"A train travels at {v} km per hour for {t} hours and then another {e} km. "
        "How many kilometres does it travel in total?"
    )
    sol = solution(
        f"The train goes {v} km per hour for {t} hours, then {e} km more.",
        f"In {t} hours it covers {v} x {t} = {v * t} km. Adding {e} km gives {v * t} + {e} = "
        f"{ans} km.",
        str(ans),
        f"Speed {v} km/h, time {t} h, and an extra stretch of {e} km.",
        f"Distance is speed times time: {t} x {v} = {v * t}. Total {e} + {v * t} = {ans}.",
    )
    return Problem(pid, BENCHMARK_OF["travel"], q, str(ans), "number", solution=sol)


def _rectangle(rng: np.random.Generator, pid: str) -> Problem:
    w, h = int(rng.integers(3, 20)), int(rng.integers(3, 20))
    if rng.random() < 0.5:
        ans = w * h
        q = f"A rectangle is {w} cm wide and {h} cm tall. What is its area in square centimetres?"
        reasoning = f"Area is width times height: {w} x {h} = {ans}."
        alt = f"Counting {h} rows of {w} unit squares gives {h} x {w} = {ans}."
    else:
        ans = 2 * (w + h)
        q = f"A rectangle is {w} cm wide and {h} cm tall. What is its perimeter in centimetres?"
        reasoning = f"Perimeter is 2 x ({w} + {h}) = 2 x {w + h} = {ans}."
        alt = f"Adding the four sides: {w} + {h} + {w} + {h} = {ans}."
    sol = solution(
        f"The rectangle has width {w} cm and height {h} cm.",
        reasoning,
        str(ans),
        f"Its sides measure {w} cm and {h} cm.",
        alt,
    )
    return Problem(pid, BENCHMARK_OF["rectangle"], q, str(ans), "number", solution=sol)


def _triangle(rng: np.random.Generator, pid: str) -> Problem:
    a = int(rng.integers(20, 100))
    b = int(rng.integers(20, 160 - a))
    ans = 180 - a - b
    q = (
        f"Two angles of a triangle measure {a} degrees and {b} degrees. "
        "How many degrees is the third angle?"
    )
    sol = solution(
        f"The triangle has angles of {a} and {b} degrees.",
        f"The angles of a triangle sum to 180. {a} + {b} = {a + b}, so the third angle is "
        f"180 - {a + b} = {ans}.",
        str(ans),
        f"Two of the angles are {a} degrees and {b} degrees.",
        f"Subtracting each known angle from 180: 180 - {a} = {180 - a}, then {180 - a} - {b} = "
        f"{ans}.",
    )
    return Problem(pid, BENCHMARK_OF["triangle"], q, str(ans), "number", solution=sol)


def _right_triangle(rng: np.random.Generator, pid: str) -> Problem:
    base = [(3, 4, 5), (5, 12, 13), (8, 15, 17), (7, 24, 25)][int(rng.integers(0, 4))]
    k = int(rng.integers(1, 4))
    a, b, c = (k * x for x in base)
    q = (
        f"A right triangle has legs of {a} cm and {b} cm. "
        "How long is its hypotenuse in centimetres?"
    )
    sol = solution(
        f"The legs of the right triangle are {a} cm and {b} cm.",
        f"By Pythagoras, {a}^2 + {b}^2 = {a * a} + {b * b} = {c * c}, and the square root of "
        f"{c * c} is {c}.",
        str(c),
        f"It is a right triangle whose two legs are {a} and {b} cm long.",
        f"The hypotenuse squared is {b * b} + {a * a} = {c * c}; {c} x {c} = {c * c}, so it "
        f"is {c}.",
    )
    return Problem(pid, BENCHMARK_OF["right_triangle"], q, str(c), "number", solution=sol)


def _fraction(rng: np.random.Generator, pid: str) -> Problem:
    thing = str(rng.choice(_THINGS))
    red = int(rng.integers(2, 12))
    blue = int(rng.integers(2, 12))
    total = red + blue
    g = gcd(red, total)
    ans = f"{red // g}/{total // g}"
    q = (
        f"A bag holds {red} red {thing} and {blue} blue {thing}. What fraction of the {thing} "
        "are red? Give the fraction in lowest terms."
    )
    sol = solution(
        f"There are {red} red and {blue} blue {thing} in the bag.",
        f"In total there are {red} + {blue} = {total}. The red share is {red}/{total} = {ans}.",
        ans,
        f"The bag contains {red} red {thing} and {blue} blue ones.",
        f"The fraction is {red} out of {total}; dividing both by {g} gives {ans}.",
    )
    return Problem(pid, BENCHMARK_OF["fraction"], q, ans, "number", solution=sol)


def _order(rng: np.random.Generator, pid: str) -> Problem:
    names = [str(n) for n in rng.choice(_NAMES, size=3, replace=False)]
    # names[0] > names[1] > names[2] in height; the clues are shuffled
    clues = [f"{names[0]} is taller than {names[1]}.", f"{names[1]} is taller than {names[2]}."]
    if rng.random() < 0.5:
        clues.reverse()
    ask_tallest = bool(rng.random() < 0.5)
    target = names[0] if ask_tallest else names[2]
    options = [str(n) for n in rng.permutation(names)]
    letter = LETTERS[options.index(target)]
    word = "tallest" if ask_tallest else "shortest"
    q = (
        " ".join(clues)
        + f" Who is the {word}?\n"
        + "\n".join(f"{LETTERS[i]}. {o}" for i, o in enumerate(options))
    )
    sol = solution(
        " ".join(clues),
        f"From the clues the order from tallest is {names[0]}, {names[1]}, {names[2]}, so the "
        f"{word} is {target}, option {letter}.",
        letter,
        f"We are told: {clues[1]} {clues[0]}",
        f"{names[2]} is below {names[1]}, who is below {names[0]}; the {word} is {target}, "
        f"which is option {letter}.",
    )
    return Problem(
        pid, BENCHMARK_OF["order"], q, letter, "letter", options=tuple(options), solution=sol
    )


_SETS = (
    ("cats", "mammals", "Tom"),
    ("roses", "flowers", "this plant"),
    ("squares", "rectangles", "shape S"),
    ("sparrows", "birds", "Pip"),
    ("oaks", "trees", "the old tree"),
)


def _syllogism(rng: np.random.Generator, pid: str) -> Problem:
    small, big, thing = _SETS[int(rng.integers(0, len(_SETS)))]
    member = bool(rng.random() < 0.5)
    fact = f"{thing} is one of the {small}" if member else f"{thing} is one of the {big}"
    ask = big if member else small
    ans = "yes" if member else "no"
    q = (
        f"All {small} are {big}. {fact[0].upper() + fact[1:]}. Must {thing} be one of the "
        f"{ask}? Answer yes or no."
    )
    if member:
        reasoning = (
            f"Every one of the {small} is among the {big}, so {thing} must be one of the {big}."
        )
        alt = f"{thing} belongs to the {small}, and the {small} are inside the {big}: yes."
    else:
        reasoning = (
            f"Being one of the {big} does not make something one of the {small}, so {thing} "
            f"need not be one of the {small}."
        )
        alt = f"The {big} include more than the {small}; {thing} could be outside the {small}."
    sol = solution(
        f"All {small} are {big}, and {fact}.",
        reasoning,
        ans,
        f"We know {fact} and that the {small} are all {big}.",
        alt,
    )
    return Problem(pid, BENCHMARK_OF["syllogism"], q, ans, "boolean", solution=sol)


_FAMILIES: dict[str, Callable[[np.random.Generator, str], Problem]] = {
    "shop": _shop,
    "travel": _travel,
    "rectangle": _rectangle,
    "triangle": _triangle,
    "right_triangle": _right_triangle,
    "fraction": _fraction,
    "order": _order,
    "syllogism": _syllogism,
    "chart": chart_problem,
    "count": count_problem,
}


def generate(family: str, index: int, seed: int = 0) -> Problem:
    """Problem ``index`` of ``family`` for ``seed``: a pure function of the three."""
    if family not in _FAMILIES:
        raise InputError(f"unknown problem family {family!r}; one of {', '.join(_FAMILIES)}")
    return _FAMILIES[family](
        rng_for("grounding.generator", family, index, seed), f"{family}/{seed}/{index}"
    )


def bundled_problems(
    n: int, families: Sequence[str] = TEXT_FAMILIES, seed: int = 0
) -> list[Problem]:
    """``n`` problems cycling through ``families`` (round robin, so every family is present)."""
    if n < 0:
        raise InputError(f"number of problems must be >= 0, got {n}")
    if not families:
        raise InputError("no problem families given")
    fams = list(families)
    return [generate(fams[i % len(fams)], i // len(fams), seed) for i in range(n)]


__all__ = [
    "BENCHMARK_OF",
    "TEXT_FAMILIES",
    "VISUAL_FAMILIES",
    "bundled_problems",
    "generate",
]
