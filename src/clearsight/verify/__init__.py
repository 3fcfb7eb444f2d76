"""Reproducibility checks of finished runs: re-asks, read-outs derived again, two runs matched.

:mod:`~clearsight.verify.specs` (a re-ask as an item kind), :mod:`~clearsight.verify.reask`
(the sample and the protocol that asks it again), :mod:`~clearsight.verify.results` (a run's
re-asks beside its records), :mod:`~clearsight.verify.rederivation` (read-outs from raw outputs
again) and :mod:`~clearsight.verify.compare` (two runs of one design matched). What each
protocol knows — the kind it re-asks, how a kind's read-outs are derived, how two of its runs
are matched — is its face's (:mod:`clearsight.faces`); the measures and the side-by-side
read-outs every protocol's comparison uses are :mod:`clearsight.faces.pairs` and
:mod:`clearsight.faces.measures`. The report's section and the compare page render in
:mod:`clearsight.report.reproducibility`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from clearsight import lazy_face

if TYPE_CHECKING:
    from clearsight.faces.comparison import Comparison
    from clearsight.verify.compare import compare_runs
    from clearsight.verify.reask import VERIFY, VerifyConfig
    from clearsight.verify.rederivation import Rederived, rederive
    from clearsight.verify.results import VerifyResult, reproducibility, verify_run
    from clearsight.verify.specs import DEFAULT_TOLERANCE

_EXPORTS = {
    "DEFAULT_TOLERANCE": "clearsight.verify.specs:DEFAULT_TOLERANCE",
    "Comparison": "clearsight.faces.comparison:Comparison",
    "compare_runs": "clearsight.verify.compare:compare_runs",
    "VERIFY": "clearsight.verify.reask:VERIFY",
    "VerifyConfig": "clearsight.verify.reask:VerifyConfig",
    "Rederived": "clearsight.verify.rederivation:Rederived",
    "rederive": "clearsight.verify.rederivation:rederive",
    "VerifyResult": "clearsight.verify.results:VerifyResult",
    "reproducibility": "clearsight.verify.results:reproducibility",
    "verify_run": "clearsight.verify.results:verify_run",
}

__all__ = [
    "DEFAULT_TOLERANCE",
    "VERIFY",
    "Comparison",
    "Rederived",
    "VerifyConfig",
    "VerifyResult",
    "compare_runs",
    "rederive",
    "reproducibility",
    "verify_run",
]

__getattr__ = lazy_face(__name__, _EXPORTS)
