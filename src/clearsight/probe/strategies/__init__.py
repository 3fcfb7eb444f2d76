"""The probe's strategies as values, by name.

A strategy (:class:`~clearsight.probe.strategies.base.Strategy`) is what a probe item names in
its ``strategy`` field: VLM Direct (:mod:`~clearsight.probe.strategies.direct`, no reasoner),
ReAct (:mod:`~clearsight.probe.strategies.react`), Uncertainty of Thoughts as a search and as a
prompt only (:mod:`~clearsight.probe.strategies.uot`) and belief-state prompting
(:mod:`~clearsight.probe.strategies.bp`). :data:`STRATEGIES` is the name table; the planner and
the loop look a strategy up here and ask it what they need (whether it has a reasoner, whether
it searches, its prompt hash, its turn), never testing its name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from clearsight.probe.strategies.base import Conversing, Strategy
from clearsight.probe.strategies.bp import BP
from clearsight.probe.strategies.direct import DIRECT
from clearsight.probe.strategies.react import REACT
from clearsight.probe.strategies.uot import UOT, UOT_PROMPT
from clearsight.validate import InputError

__all__ = ["STRATEGIES", "conversing", "prompt_hash", "strategy_named"]

#: Every strategy by name, in the order the documentation lists them.
STRATEGIES: Final[Mapping[str, Strategy]] = {
    s.name: s for s in (DIRECT, REACT, UOT, UOT_PROMPT, BP)
}


def strategy_named(name: str) -> Strategy:
    """The strategy called ``name``; InputError naming the strategies when there is none."""
    try:
        return STRATEGIES[name]
    except KeyError:
        raise InputError(f"unknown strategy {name!r}; one of {', '.join(STRATEGIES)}") from None


def conversing(name: str) -> Conversing:
    """The strategy called ``name`` whose reasoner converses with the sensor; InputError for
    an unknown name or a strategy without a reasoner (Direct)."""
    strategy = STRATEGIES.get(name)
    if not isinstance(strategy, Conversing):
        talk = ", ".join(s.name for s in STRATEGIES.values() if isinstance(s, Conversing))
        raise InputError(f"reasoner strategy must be one of {talk}, got {name!r}")
    return strategy


def prompt_hash(name: str) -> str:
    """Content hash of everything strategy ``name``'s model reads (its texts and the shared
    ones; for the UoT search, ``prompts/uot.yaml``), recorded in each item so an edited prompt
    makes new items."""
    return strategy_named(name).prompt_hash()
