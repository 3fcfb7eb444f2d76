"""The sweep report's section "Calibration under weather" (issue 45 item 3): temperature, Platt
and isotonic maps fitted on the clean images, their ECE at the clean images and at 3.9 m (each
arm's nearest level) before and after, W of the calibrated confidence, and where the clean
images' conformal guarantee stops holding. Rendering only: every number is the analysis's
(:mod:`clearsight.sweep.numbers.recalibrated`); the same tables go to report.html and
summary.md.
"""

from __future__ import annotations

import math

import pandas as pd

from clearsight.pages.html import Details, Frame, Part, esc, fmt_ci, fmt_num
from clearsight.pages.output import MarkdownBlock
from clearsight.sweep.analysis import SweepAnalysis
from clearsight.sweep.numbers.recalibrated import MAX_DRAWS, Recalibrated
from clearsight.sweep.page.labels import interval, interval_of, w_label

__all__ = ["MAP_LABELS", "recalibration_markdown", "recalibration_section"]

#: How the page names each map.
MAP_LABELS = {
    "none": "as read",
    "temperature": "temperature",
    "platt": "Platt",
    "isotonic": "isotonic",
}
_NAMES = ["model", "task", "wording"]


def _head(frame: pd.DataFrame, *columns: str) -> dict[str, pd.Series]:
    """The columns that name each row: model, task, wording and ``columns``."""
    return {c: frame[c] for c in (*_NAMES, *columns)}


def _method(numbers: Recalibrated) -> str:
    """What the section computes, in words."""
    return (
        "Each map of the confidence is fitted on the clean images' answered items and applied "
        "unchanged at every level of every arm (ImageNet-C corruptions at their equivalent "
        "visibility where they have one): temperature scaling of the letters' "
        "log-probabilities, Platt's logistic map of the confidence's logit, the isotonic step "
        "map. 'as read' is the confidence itself. The clean row is in-sample. A map changes no "
        "answer, so the accuracy's crossing stays where it was and only the confidence's can "
        "move W. The conformal threshold answers where the confidence is at least the "
        "threshold fitted on the clean answers for a target risk (answered and wrong) of "
        f"α = {fmt_num(numbers.alpha, 3)}; the guarantee holds for answers exchangeable with "
        "the clean ones. Brackets: 95 % photo-bootstrap intervals from "
        f"{numbers.draws} draws (at most {MAX_DRAWS}: each draw refits every map), every map "
        "and threshold fitted again in each draw."
    )


def _summary_frame(numbers: Recalibrated) -> pd.DataFrame:
    """ECE at the clean images and at each arm's level nearest 3.9 m, and W, per map."""
    s = numbers.summary
    labels = [w_label(w, b) for w, b in zip(s["w"], s["w_bound"], strict=True)]
    return pd.DataFrame(
        {
            **_head(s, "arm"),
            "map": s["map"].map(MAP_LABELS),
            "ECE clean [95% CI]": _cis(s, "ece_clean", 3),
            "at": s["at"],
            "ECE there [95% CI]": _cis(s, "ece_at", 3),
            "W": labels,
            "W 95% CI": [
                interval_of(label, interval(lo, hi))
                for label, lo, hi in zip(labels, s["w_low"], s["w_high"], strict=True)
            ],
        }
    )


def _cis(frame: pd.DataFrame, name: str, digits: int) -> list[str]:
    """Each row's ``name`` with its interval (:func:`fmt_ci`)."""
    columns = zip(frame[name], frame[f"{name}_low"], frame[f"{name}_high"], strict=True)
    return [fmt_ci(e, lo, hi, digits) for e, lo, hi in columns]


def _fits_frame(numbers: Recalibrated) -> pd.DataFrame:
    """The maps and the threshold fitted on the run's clean answers."""
    f = numbers.fits
    return pd.DataFrame(
        {
            **_head(f),
            "clean answers": f["n_fit"].map(lambda v: fmt_num(v, 0)),
            "T": f["temperature"].map(lambda v: fmt_num(v, 3)),
            "Platt a": f["platt_a"].map(lambda v: fmt_num(v, 3)),
            "Platt b": f["platt_b"].map(lambda v: fmt_num(v, 3)),
            "isotonic steps": f["isotonic_steps"].map(lambda v: fmt_num(v, 0)),
            "threshold": f["threshold"].map(_threshold),
            "note": f["note"],
        }
    )


def _threshold(value: float) -> str:
    """A conformal threshold; infinite where no clean confidence keeps the risk at alpha."""
    return "∞ (never answers)" if value == math.inf else fmt_num(value, 4)


def _breaks_frame(numbers: Recalibrated) -> pd.DataFrame:
    """Per model, task, wording and arm the clearest level where the guarantee breaks."""
    b = numbers.breaks
    where = [
        f"{level} (risk interval above α)" if isinstance(level, str) and level else "holds"
        for level in b["level"]
    ]
    return pd.DataFrame({**_head(b, "arm"), "guarantee": where})


def _conformal_frame(numbers: Recalibrated) -> pd.DataFrame:
    """Coverage and realised risk of the clean threshold at every level."""
    c = numbers.conformal
    return pd.DataFrame(
        {
            **_head(c, "arm", "level"),
            "n scored": c["n_scored"].map(lambda v: fmt_num(v, 0)),
            "coverage [95% CI]": _cis(c, "coverage", 3),
            "risk [95% CI]": _cis(c, "risk", 3),
            "holds": c["holds"],
        }
    )


def _levels_frame(numbers: Recalibrated) -> pd.DataFrame:
    """ECE, Brier and AURC of every map at every level."""
    v = numbers.levels
    return pd.DataFrame(
        {
            **_head(v, "arm", "level"),
            "map": v["map"].map(MAP_LABELS),
            "n scored": v["n_scored"].map(lambda x: fmt_num(x, 0)),
            "ECE [95% CI]": _cis(v, "ece", 3),
            "Brier [95% CI]": _cis(v, "brier", 3),
            "AURC [95% CI]": _cis(v, "aurc", 3),
        }
    )


def _absent(numbers: Recalibrated) -> str | None:
    """Why the section has no numbers; None where it has."""
    if numbers.empty:
        return "No clean answers with a confidence in this run: nothing to fit a map on."
    return None


def recalibration_section(analysis: SweepAnalysis) -> list[Part]:
    """The section for report.html."""
    numbers = analysis.recalibrated
    parts: list[Part] = ["<h2 id='calibration-weather'>Calibration under weather</h2>"]
    why = _absent(numbers)
    if why is not None:
        return [*parts, f"<p class='note'>{esc(why)}</p>"]
    return [
        *parts,
        f"<p>{esc(_method(numbers))}</p>",
        Frame(_summary_frame(numbers), "ECE before and after each map, and W"),
        Frame(_breaks_frame(numbers), "Where the clean conformal guarantee stops holding"),
        Frame(_fits_frame(numbers), "The maps fitted on the clean answers"),
        Details("Conformal coverage and risk at every level", [Frame(_conformal_frame(numbers))]),
        Details("ECE, Brier and AURC of every map at every level", [Frame(_levels_frame(numbers))]),
    ]


def recalibration_markdown(analysis: SweepAnalysis) -> list[str | MarkdownBlock]:
    """The section for summary.md: the method, the ECE/W table, where the guarantee breaks
    and the fitted maps."""
    numbers = analysis.recalibrated
    head: list[str | MarkdownBlock] = ["## Calibration under weather", ""]
    why = _absent(numbers)
    if why is not None:
        return [*head, why, ""]
    alpha = numbers.alpha
    return [
        *head,
        _method(numbers),
        "",
        Frame(_summary_frame(numbers)),
        f"Conformal threshold at α = {fmt_num(alpha, 3)}: where it stops holding.",
        "",
        Frame(_breaks_frame(numbers)),
        Frame(_fits_frame(numbers)),
    ]
