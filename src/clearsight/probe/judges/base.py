"""What every semantic-equivalence judge shares: the :class:`Judge` protocol (one batched
verdict per pair of replies), :func:`consistency` (the ``u`` of docs/methods.md §6 from a
judge's verdicts) and the simplest judge, :class:`ExactJudge` (equal after :func:`normalise`)."""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

__all__ = ["ExactJudge", "Judge", "Pair", "consistency", "normalise"]

#: Two replies to the same query.
Pair = tuple[str, str]


@runtime_checkable
class Judge(Protocol):
    """Decides whether two replies to the same query say the same thing."""

    @property
    def name(self) -> str:
        """The judge and its settings, e.g. ``embedding@0.712`` (stored with every u)."""
        ...

    def equivalent(self, pairs: Sequence[Pair], question: str = "") -> list[bool]:
        """One verdict per pair; ``question`` is the query the replies answer."""
        ...


def normalise(text: str) -> str:
    """Lower-case, punctuation dropped, whitespace collapsed."""
    table = str.maketrans("", "", string.punctuation)
    return " ".join(text.lower().translate(table).split())


def consistency(
    judge: Judge, reply: str, samples: Sequence[str], question: str = ""
) -> tuple[int, tuple[bool, ...]]:
    """``(u, flags)``: flags[i] says whether sample i is equivalent to ``reply``; u counts them.

    Samples identical to the reply are equivalent without asking the judge; the others go to
    the judge in one batch.
    """
    flags: list[bool | None] = [s == reply or None for s in samples]
    ask = [i for i, f in enumerate(flags) if f is None]
    if ask:
        verdicts = judge.equivalent([(samples[i], reply) for i in ask], question)
        for i, v in zip(ask, verdicts, strict=True):
            flags[i] = bool(v)
    out = tuple(bool(f) for f in flags)
    return sum(out), out


class ExactJudge:
    """Equal after :func:`normalise`."""

    name = "exact"

    def equivalent(self, pairs: Sequence[Pair], question: str = "") -> list[bool]:
        """Normalised string equality per pair."""
        return [normalise(a) == normalise(b) for a, b in pairs]
