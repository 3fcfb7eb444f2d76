"""The probe's headline says in its sentences what its table shows: a cross-run ECE that does
not exist (one run per instance) is '–' in the table and said so in words, never 'nan'."""

from __future__ import annotations

import math

import pandas as pd

from clearsight.probe.page.headline import probe_headline


def _domain(runs: int, ece: float) -> dict[str, object]:
    """A row of the probe's Table 1 (``ProbeAnalysis.domains``)."""
    return {
        "reasoner": "r",
        "strategy": "uot",
        "sensor": "s",
        "k": 2,
        "signal": "verbal",
        "domain": f"d{runs}",
        "acc": 61.25,
        "acc_std": 3.4 if runs > 1 else math.nan,
        "ece": ece,
        "runs": runs,
        "instances": 8,
    }


def test_a_missing_cross_run_ece_is_said_as_the_table_shows_it() -> None:
    frame, sentences = probe_headline(pd.DataFrame([_domain(1, math.nan), _domain(3, 0.1234)]))
    assert list(frame["cross-run ECE"]) == ["–", "0.123"]
    (sentence,) = sentences
    assert "nan" not in sentence
    assert "d1 right over 1 run(s), no cross-run ECE ('–': it needs two runs or more" in sentence
    assert "d3 right over 3 run(s), cross-run ECE 0.123." in sentence
    assert "61.2 ± 3.4 %" in sentence
