"""``clearsight compare``: two runs of one design matched item by item, by the protocol that
made them — its face's ``compare`` (:mod:`clearsight.faces`; the sweep's:
:func:`clearsight.sweep.comparison.matching.compare_sweeps`, trajectory grounding's:
:func:`clearsight.grounding.compare.compare_grounding`). Both runs must be of that protocol.
"""

from __future__ import annotations

from pathlib import Path

from clearsight.faces import face_of, registered
from clearsight.faces.comparison import Comparison
from clearsight.store import RunStore, run_protocol
from clearsight.validate import InputError

__all__ = ["compare_runs"]


def compare_runs(
    run_a: Path, run_b: Path, *, tolerance: float, n_boot: int = 2000, seed: int = 0
) -> Comparison:
    """Match ``run_a`` and ``run_b`` item by item as their protocol does (module docstring);
    InputError for a missing run, runs of two protocols, a protocol that compares no runs, or
    two designs."""
    made_by = run_protocol(run_a)
    face = face_of(made_by) if made_by in registered() else None
    if face is None or face.compare is None:
        known = ", ".join(n for n in registered() if face_of(n).compare is not None)
        raise InputError(f"{run_a} is a {made_by} run: compare matches two runs of {known}")
    run_protocol(run_b)  # a run there
    with RunStore.open(run_b, read_only=True) as store:
        store.expect_protocol(made_by)
    return face.compare(Path(run_a), Path(run_b), tolerance, n_boot, seed)
