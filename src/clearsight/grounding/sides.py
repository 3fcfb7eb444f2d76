"""A grounding run's elicitations side by side in ``clearsight view``: the same model's
elicitations of one problem, every variant (:func:`variants_of`), and an elicitation matched in
another grounding run as ``clearsight compare`` matches two runs' elicitations
(:func:`~clearsight.grounding.compare.elicitation_identity`: problem, variant, read-out;
:func:`identity_of`, :func:`find_in`).

An elicitation of another run is found through the view's own listing of its variant (one
query of the side index), narrowed to its problem, each candidate read by key and kept where
its identity matches.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from clearsight.faces.viewing import Identity, Member, Query, Related, RunView
from clearsight.grounding.compare import elicitation_identity
from clearsight.grounding.specs import ELICIT
from clearsight.view.index import record_of

__all__ = ["find_in", "identity_of", "variants_of"]

#: Most rows of one variant's listing read to find a problem in it.
_CELL = 10**6


def _spec(run_dir: Path, key: str) -> Mapping[str, Any] | None:
    found = record_of(run_dir, key, ELICIT)
    return None if found is None or found.status != "ok" else found.spec


def variants_of(
    run_dir: Path,
    key: str,
    siblings: Callable[[str, str], Mapping[str, str]],
    order: Callable[[str], Any],
) -> tuple[Related, ...]:
    """The same model's elicitations of the problem of ``key`` (``siblings(model, problem)``:
    variant -> key), in the curves' ``order``; none where the problem has one."""
    spec = _spec(run_dir, key)
    if spec is None:
        return ()
    problem = str(spec["problem"]["id"])
    found = siblings(str(spec["model"]), problem)
    if len(found) < 2:
        return ()
    members = tuple(Member(variant, found[variant]) for variant in sorted(found, key=order))
    return (Related("variants", f"Every variant of problem {problem}", members),)


def identity_of(run_dir: Path, key: str) -> Identity | None:
    """The problem, variant and read-out of elicitation ``key`` (compare's matching)."""
    spec = _spec(run_dir, key)
    return None if spec is None else elicitation_identity(spec)


def find_in(view: RunView, run_dir: Path, identity: Identity) -> str | None:
    """This run's elicitation of another grounding run's ``identity``: among the
    elicitations of its variant, the one of its problem and read-out; None where none."""
    variant = identity[1] if len(identity) == 3 else None
    if variant not in view.filters()["variant"]:
        return None
    for row in view.listing(Query(filters={"variant": str(variant)}, per_page=_CELL)).rows:
        if row.labels["problem"] == str(identity[0]):
            spec = _spec(run_dir, row.key)
            if spec is not None and elicitation_identity(spec) == identity:
                return row.key
    return None
