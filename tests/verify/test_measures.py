"""The agreement and |Δ| measures of ``clearsight verify`` and ``compare`` on hand-computed
cases, and the pairing of read-outs they read."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.spatial.distance import jensenshannon

from clearsight.faces.measures import agreement, delta_summary, letter_deltas, same_answer
from clearsight.faces.pairs import agreement_table, differing, paired_readouts
from clearsight.validate import InputError


def test_agreement_counts_equal_answers_and_no_answer_both_times() -> None:
    assert agreement(["A", "B", None, "C"], ["A", "C", None, None]) == 0.5
    assert math.isnan(agreement([], []))
    assert same_answer(None, float("nan"))
    assert not same_answer("A", None)
    with pytest.raises(InputError, match="paired"):
        agreement(["A"], [])


def test_delta_summary_over_the_items_with_both_values() -> None:
    got = delta_summary([0.1, 0.5, np.nan, 0.9], [0.2, 0.5, 0.3, 0.4])
    assert got.n == 3
    assert got.max == pytest.approx(0.5)
    assert got.median == pytest.approx(0.1)
    empty = delta_summary([np.nan], [1.0])
    assert empty.n == 0
    assert math.isnan(empty.max)


def test_letter_deltas_take_the_largest_change_a_missing_letter_counting_zero() -> None:
    got = letter_deltas(
        [{"A": 0.7, "B": 0.3}, None, {"A": 1.0}], [{"A": 0.6, "B": 0.4}, {}, {"B": 0.25}]
    )
    assert got[0] == pytest.approx(0.1)
    assert math.isnan(got[1])
    assert got[2] == pytest.approx(1.0)


def test_paired_elicitations_are_compared_by_jsd_and_expected_confidence() -> None:
    p = [0.0] * 11
    p[3] = 1.0
    q = [0.0] * 11
    q[3], q[4] = 0.5, 0.5
    a = [{"expected": 0.3, "probs": p}, {"expected": 0.3, "probs": p}]
    b = [{"expected": 0.3, "probs": p}, {"expected": 0.35, "probs": q}]
    pairs = paired_readouts(a, b)
    assert pairs["jsd"][0] == 0.0
    assert pairs["jsd"][1] == pytest.approx(jensenshannon(p, q, base=2) ** 2)
    table = agreement_table(pairs).set_index("readout")
    assert "answer" not in table.index
    assert table.loc["expected confidence", "max_abs_delta"] == pytest.approx(0.05)
    assert list(differing(pairs, 1e-4).index) == [1]
    assert differing(pairs, 0.5).empty


def test_a_failed_reask_differs_from_an_answered_record() -> None:
    a = [{"answer": "A", "internal_conf": 0.8, "letter_probs": {"A": 0.8, "B": 0.2}}]
    pairs = paired_readouts(a, [None])
    moved = differing(pairs, 1e-4)
    assert list(moved["answer_moved"]) == [True]
    assert moved["worst"].iloc[0] == math.inf


def test_labels_read_from_a_stored_spec_only_what_has_their_type() -> None:
    """A stored spec's labels: nested fields by name; a field the spec lacks, or holding a value
    of another type (a malformed or older spec), gives None rather than a wrong label."""
    from clearsight.faces.verifying import number_at, text_at

    spec = {"model": "m", "scene": {"id": "s1"}, "level_m": 2, "share": True, "wording": 3}
    assert text_at(spec, "model") == "m"
    assert text_at(spec, "scene", "id") == "s1"
    assert text_at(spec, "scene", "missing") is None
    assert text_at(spec, "model", "id") is None  # a text has no fields
    assert text_at(spec, "wording") is None  # a number is no text
    assert number_at(spec, "level_m") == 2
    assert number_at(spec, "share") is None  # a flag is no number
    assert number_at(spec, "absent") is None
