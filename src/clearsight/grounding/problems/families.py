"""The bundled problem families: their names (text, or visual: needing a VLM), the benchmark
each is scored under, and the shape of the canonical solution every generator writes
(:mod:`clearsight.grounding.problems.bundled`, :mod:`clearsight.grounding.problems.visual`)."""

from __future__ import annotations

__all__ = ["BENCHMARK_OF", "TEXT_FAMILIES", "VISUAL_FAMILIES", "solution"]

TEXT_FAMILIES: tuple[str, ...] = (
    "shop",
    "travel",
    "rectangle",
    "triangle",
    "right_triangle",
    "fraction",
    "order",
    "syllogism",
)
VISUAL_FAMILIES: tuple[str, ...] = ("chart", "count")
BENCHMARK_OF: dict[str, str] = {
    "shop": "bundled-arithmetic",
    "travel": "bundled-arithmetic",
    "fraction": "bundled-arithmetic",
    "rectangle": "bundled-geometry",
    "triangle": "bundled-geometry",
    "right_triangle": "bundled-geometry",
    "order": "bundled-logic",
    "syllogism": "bundled-logic",
    "chart": "bundled-chart",
    "count": "bundled-count",
}


def solution(
    obs: str, reasoning: str, answer: str, obs_alt: str, reasoning_alt: str
) -> dict[str, str]:
    """A problem's canonical solution as written by rule: the ``observation`` (the facts read
    from the problem or picture), the ``reasoning`` and the ``answer``, and the ``*_alt``
    variants (same facts or same reasoning, other words) that content variation compares."""
    return {
        "observation": obs,
        "reasoning": reasoning,
        "answer": answer,
        "observation_alt": obs_alt,
        "reasoning_alt": reasoning_alt,
    }
