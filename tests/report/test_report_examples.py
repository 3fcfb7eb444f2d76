"""The sweep report's examples say what a record holds: an answer the reply did not give is
'(not parsed)', never 'nan'; letter probabilities whose sum is far from 1 are shown as given,
with their sum, and renormalised, each labelled."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from clearsight.sweep.images.examples import letter_text
from clearsight.sweep.page.examples import answer_text


def test_an_unparsed_answer_is_said_so() -> None:
    assert [answer_text(a) for a in (math.nan, None, "", "B")] == [
        "(not parsed)",
        "(not parsed)",
        "(not parsed)",
        "B",
    ]


def test_a_tiny_letter_mass_is_shown_with_its_sum_and_renormalised() -> None:
    text = letter_text({"A": 0.00071, "B": 0.00029})
    assert text == (
        "letter probabilities as given: A 0.00071, B 0.00029 (sum 0.001); "
        "renormalised: A 0.710, B 0.290"
    )


def test_letter_probabilities_summing_to_one_are_shown_once() -> None:
    assert letter_text({"A": 0.25, "B": 0.75}) == (
        "letter probabilities as given: A 0.25, B 0.75 (sum 1)"
    )


@given(st.lists(st.floats(1e-9, 1.0), min_size=2, max_size=5))
def test_the_renormalised_values_sum_to_one(masses: list[float]) -> None:
    probs = {chr(65 + i): m for i, m in enumerate(masses)}
    text = letter_text(probs)
    if "renormalised: " not in text:
        assert sum(masses) == pytest.approx(1.0, rel=1e-3)
        return
    shown = [float(part.split()[1]) for part in text.split("renormalised: ")[1].split(", ")]
    assert len(shown) == len(masses)
    assert sum(shown) == pytest.approx(1.0, abs=0.0005 * len(masses))  # three decimals each
