"""Trajectory grounding's headline: the main read-out's overall scores of its analysis, one row
and one sentence (laid out by :mod:`clearsight.pages.headline`)."""

from __future__ import annotations

import math

import pandas as pd

from clearsight.grounding.analysis import GroundingAnalysis
from clearsight.grounding.page.tables import score_text
from clearsight.grounding.tgs import Score

__all__ = ["GROUNDING_CAPTION", "grounding_headline"]


#: The scores of the grounding headline, by the analysis' key.
GROUNDING_SCORES: dict[str, str] = {
    "ECE": "ECE",
    "AUROC": "AUROC",
    "AURC": "AURC",
    "tgs_self": "TGS-self",
    "tgs_pair": "TGS-pair",
}


GROUNDING_CAPTION = (
    "The main read-out's scores, each a mean over benchmarks with its 95 % two-stage bootstrap "
    "interval (AURC: pooled items, item bootstrap); TGS-self is the mean of the confidence with "
    "the rationale visible minus masked, TGS-pair the mean over the content axes."
)


def grounding_headline(analysis: GroundingAnalysis) -> tuple[pd.DataFrame, list[str]]:
    """The grounding headline from its analysis (the main read-out's ``overall`` scores,
    ``readout`` and ``accuracy``): one row, one sentence; nothing for a run without scores."""
    if not analysis.overall:
        return pd.DataFrame(), []
    accuracy = analysis.accuracy
    cells = {key: _score(key, analysis.overall.get(key)) for key in GROUNDING_SCORES}
    row = {
        "read-out": analysis.readout,
        "accuracy": f"{accuracy:.2f}" if accuracy is not None else "–",
        **{GROUNDING_SCORES[k]: v for k, v in cells.items()},
    }
    sentence = (
        f"The {row['read-out']} read-out: accuracy {row['accuracy']} on its own answers, ECE "
        f"{cells['ECE']}; with the rationale visible its confidence is {cells['tgs_self']} "
        f"above that with it masked (TGS-self), TGS-pair {cells['tgs_pair']}."
    )
    return pd.DataFrame([row]), [sentence]


def _score(key: str, score: Score | None) -> str:
    """The grounding score ``key`` with its interval (:func:`score_text`: a TGS signed,
    '+0.123 [+0.050, +0.200]'); '–' where missing or undefined."""
    if score is None or not math.isfinite(score.interval.estimate):
        return "–"
    return score_text(key, score.interval, 3)
