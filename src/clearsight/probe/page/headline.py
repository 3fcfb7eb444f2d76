"""The probe's headline: its main table (Table 1), one row per setting and domain and one
sentence per reasoner (laid out by :mod:`clearsight.pages.headline`)."""

from __future__ import annotations

import math

import pandas as pd

__all__ = ["PROBE_CAPTION", "probe_headline"]


#: What the probe headline's columns read.
PROBE_CAPTION = (
    "The main table (Table 1): accuracy, mean ± SD over the runs (%), and the cross-run ECE "
    "(confidence: the share of runs agreeing with the most common answer), per setting and "
    "domain, each domain the macro-average of its datasets."
)


def probe_headline(domains: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The probe's headline from its Table 1 (``ProbeAnalysis.domains``): a display frame,
    one row per setting and domain, and one sentence per reasoner."""
    if domains.empty:
        return pd.DataFrame(), []
    frame = pd.DataFrame(
        {
            "reasoner": domains["reasoner"],
            "strategy": domains["strategy"],
            "sensor": domains["sensor"],
            "K": domains["k"],
            "signal": domains["signal"],
            "domain": domains["domain"],
            "accuracy (%)": [
                _pm(a, s) for a, s in zip(domains["acc"], domains["acc_std"], strict=True)
            ],
            "cross-run ECE": [_ece(e) for e in domains["ece"]],
            "runs": domains["runs"],
            "instances": domains["instances"],
        }
    )
    sentences = []
    for reasoner, rows in domains.groupby("reasoner", sort=False):
        columns = ("strategy", "sensor", "k", "signal", "domain", "runs", "acc", "acc_std", "ece")
        clauses = [
            f"{strategy} with the sensor {sensor} (K = {k}, {signal} u) answers {_pm(acc, sd)} % "
            f"of {domain} right over {runs} run(s), {_ece_clause(ece)}"
            for strategy, sensor, k, signal, domain, runs, acc, sd, ece in zip(
                *(rows[c] for c in columns), strict=True
            )
        ]
        sentences.append(f"{reasoner}: " + "; ".join(clauses) + ".")
    return frame, sentences


def _pm(mean: float, sd: float) -> str:
    """'61.2 ± 3.4' (the SD left out where there is none: one run)."""
    if not math.isfinite(mean):
        return "–"
    return f"{mean:.1f} ± {sd:.1f}" if math.isfinite(sd) else f"{mean:.1f}"


def _ece(ece: float) -> str:
    """A cross-run ECE as the table shows it: '0.123'; '–' where there is none."""
    return f"{ece:.3f}" if math.isfinite(ece) else "–"


def _ece_clause(ece: float) -> str:
    """A cross-run ECE in the sentence, said as the table shows it: 'cross-run ECE 0.123', or
    why the table says '–' (NaN: one run per instance, no agreement across runs to read)."""
    if math.isfinite(ece):
        return f"cross-run ECE {_ece(ece)}"
    return "no cross-run ECE ('–': it needs two runs or more of an instance)"
