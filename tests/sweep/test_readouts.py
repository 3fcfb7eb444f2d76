"""Read-outs with hand-computed values: top-k candidates, verbalized confidence, abstention,
the 11-way numeral distribution (docs/methods.md §3, §5)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from clearsight.grounding.confidence.numerals import NUMERALS, numeral_distribution
from clearsight.models.logprobs import candidate_probs_from_top_logprobs, token_text
from clearsight.sweep.readouts import (
    detect_abstention,
    letter_readout,
    parse_confidence,
    parse_verbalized,
)
from clearsight.validate import InputError

ln = math.log

# -- candidates from a top-k list ------------------------------------------------------------


def test_candidates_sum_variants_and_record_uncovered_mass():
    top = [
        ("A", ln(0.5)),
        (" A", ln(0.1)),  # byte-level BPE's "ĠA" decoded: counts for A
        ("B", ln(0.2)),
        ("a", ln(0.05)),  # the article, not option A: case is kept
        ("\u2581C", ln(0.05)),  # SentencePiece word marker left in a raw token
        ("\nD", ln(0.02)),
    ]
    probs, uncovered = candidate_probs_from_top_logprobs(top, ["A", "B", "C", "D", "E"])
    assert probs == pytest.approx({"A": 0.6, "B": 0.2, "C": 0.05, "D": 0.02, "E": 0.0})
    assert uncovered == pytest.approx(1 - 0.92)  # never spread over the candidates
    r = letter_readout(probs, "ABCD", "E")
    assert r.mass == pytest.approx(0.87)
    assert r.answer == "A"
    assert r.confidence == pytest.approx(0.6 / 0.87)


def test_candidates_edge_cases():
    assert candidate_probs_from_top_logprobs([], ["A"]) == ({"A": 0.0}, 1.0)
    # float noise a hair above 1 is clamped to zero uncovered mass
    probs, uncovered = candidate_probs_from_top_logprobs([("A", 0.0), ("B", -40.0)], ["A"])
    assert probs["A"] == pytest.approx(1.0)
    assert uncovered == 0.0
    with pytest.raises(InputError, match="sum to"):
        candidate_probs_from_top_logprobs([("A", ln(0.7)), ("B", ln(0.7))], ["A"])
    with pytest.raises(InputError, match="<= 0"):
        candidate_probs_from_top_logprobs([("A", 0.5)], ["A"])
    with pytest.raises(InputError, match="<= 0"):
        candidate_probs_from_top_logprobs([("A", math.nan)], ["A"])
    assert token_text(" \u0120B ") == "B"


# -- verbalized confidence -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "scale", "expected"),
    [
        ("Answer: B\nConfidence: 85", 100, 0.85),
        ("Confidence: 85%", 100, 0.85),
        ("Confidence: 85 %", 100, 0.85),
        ("confidence is 85 percent", 100, 0.85),
        ("Confidence: 85/100", 100, 0.85),
        ("Confidence: 85 out of 100", 100, 0.85),
        ("Confidence: 7/10", 100, 0.7),  # what the reply says wins over the prompt's scale
        ("Confidence: 7 / 10", 100, 0.7),
        ("Confidence: 7 out of 10", 100, 0.7),
        ("Confidence: 72.5", 100, 0.725),
        ("Confidence: 0.85", 100, 0.85),  # decimal in [0, 1] on 0-100: a probability
        ("Confidence: .9", 100, 0.9),
        ("Confidence: 1.0", 100, 1.0),
        ("Confidence: 1", 100, 0.01),  # no decimal point: 1 on the 0-100 scale
        ("Confidence: 0", 100, 0.0),
        ("Confidence: 0.5%", 100, 0.005),  # an explicit unit is never reinterpreted
        ("Confidence level: about 60", 100, 0.6),
        ("I am 90% confident it is C.", 100, 0.9),
        ("I'm 80 percent sure.", 100, 0.8),
        ("Confidence: 7", 10, 0.7),
        ("Confidence: 0.5", 10, 0.05),  # the decimal rule is for 0-100 prompts only
        ("Confidence: 0.7", 1, 0.7),
        ("Confidence: 70%", 1, 0.7),
        # unparsed: out of scale, words, nothing
        ("Confidence: 150", 100, None),
        ("Confidence: 12/10", 100, None),
        ("Confidence: 70", 1, None),
        ("Confidence: very high", 100, None),
        ("I think it is B.", 100, None),
        ("Answer: B\nConfidence:", 100, None),
    ],
)
def test_parse_confidence(text, scale, expected):
    got = parse_confidence(text, scale)
    assert got == (None if expected is None else pytest.approx(expected))


def test_parse_confidence_scale_is_checked():
    with pytest.raises(InputError, match="scale"):
        parse_confidence("Confidence: 5", 50)


def test_parse_verbalized_keeps_its_signature_and_takes_a_scale():
    assert parse_verbalized("Answer: C\nConfidence: 9", "ABCD") == ("C", pytest.approx(0.09))
    assert parse_verbalized("Answer: C\nConfidence: 9", "ABCD", scale=10) == (
        "C",
        pytest.approx(0.9),
    )
    assert parse_verbalized("(B) Confidence: 0.6", "ABCD") == ("B", pytest.approx(0.6))
    # a lower-case leading letter is a word ("a cat"), not an option
    assert parse_verbalized("a cat. Confidence: 60", "ABCD") == (None, pytest.approx(0.6))


# -- abstention from text --------------------------------------------------------------------

REASON = "The boxed object is not visible clearly enough to identify"


@pytest.mark.parametrize(
    ("text", "abstain_text", "expected"),
    [
        ("Answer: E\nConfidence: 30", None, True),
        ("Answer: B\nConfidence: 30", "I don't know", False),
        ("I don't know.", "I don't know", True),
        ("I don\u2019t know", "I don't know", True),  # curly apostrophe
        ("i dont KNOW!!", "I don't know", True),
        ("Honestly, I don't know what that is", "I don't know", True),
        ("Answer: B. I don't know for sure, though.", "I don't know", False),  # a letter wins
        ("I don't knowledge", "I don't know", False),  # whole words only
        (f"{REASON.lower()}.", REASON, True),
        ("It is too dark.", REASON, False),
        ("I don't know.", None, False),  # nothing to match without the option's text
    ],
)
def test_detect_abstention(text, abstain_text, expected):
    assert detect_abstention(text, "ABCDE", "E", abstain_text) is expected


def test_detect_abstention_without_abstain_option():
    assert detect_abstention("Answer: D", "ABCD", None) is False
    assert detect_abstention("I don't know", "ABCD", None, "I don't know") is True


# -- numerals 0..10 --------------------------------------------------------------------------


def test_numeral_distribution_scores_multi_token_numerals_as_sequences():
    # p("1") = .5, p("0" | "1") = .4 -> p("10") = .2; p(end | "1") = .6 -> p("1") = .3
    r = numeral_distribution({"1": 0.5, "10": 0.5 * 0.4, "9": 0.2}, {"1": 0.6})
    expected_raw = [0, 0.3, 0, 0, 0, 0, 0, 0, 0, 0.2, 0.2]
    assert r.raw == pytest.approx(expected_raw)
    assert r.mass == pytest.approx(0.7)
    assert r.probs == pytest.approx([p / 0.7 for p in expected_raw])
    assert r.expected == pytest.approx((0.3 * 0.1 + 0.2 * 0.9 + 0.2 * 1.0) / 0.7)  # 0.585714...
    assert r.expected == pytest.approx(0.5857142857)


def test_numeral_distribution_uniform_and_extremes():
    uniform = numeral_distribution(dict.fromkeys(NUMERALS, 1 / 11), {"1": 1.0})
    assert uniform.probs == pytest.approx([1 / 11] * 11)
    assert uniform.expected == pytest.approx(0.5)
    assert numeral_distribution({"10": 0.4}).expected == pytest.approx(1.0)
    assert numeral_distribution({"0": 0.4}).expected == pytest.approx(0.0)
    empty = numeral_distribution({"A": 0.9})  # other candidates are ignored
    assert (empty.mass, empty.probs, empty.expected) == (0.0, None, None)
    assert empty.raw == (0.0,) * 11


def test_numeral_distribution_applies_given_end_probabilities():
    # "7" may continue as "75": where an end probability is given it is applied too
    r = numeral_distribution({"7": 0.5, "8": 0.5}, {"7": 0.5})
    assert r.probs[7] == pytest.approx(0.25 / 0.75)
    assert r.expected == pytest.approx((0.25 * 0.7 + 0.5 * 0.8) / 0.75)


def test_numeral_distribution_needs_the_end_probability_of_a_prefix():
    with pytest.raises(InputError, match=r"'1' is a prefix of \['10'\].*end_probs"):
        numeral_distribution({"1": 0.3, "5": 0.2})
    # no mass on "1": nothing to split, nothing needed
    assert numeral_distribution({"1": 0.0, "5": 0.2}).expected == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("seq", "end", "match"),
    [
        ({"3": 1.5}, None, "probability in"),
        ({"3": -0.1}, None, "probability in"),
        ({"3": math.nan}, None, "probability in"),
        ({"3": "high"}, None, "must be a probability"),
        ({"3": 0.1}, {"11": 0.5}, "not numerals"),
        ({"1": 0.1}, {"1": 2.0}, "end probability"),
    ],
)
def test_numeral_distribution_checks_inputs(seq, end, match):
    with pytest.raises(InputError, match=match):
        numeral_distribution(seq, end)


def test_numeral_distribution_matches_an_array_formula():
    """Against an independent vectorised formula on random inputs."""
    rng = np.random.default_rng(0)
    for _ in range(20):
        seq = rng.dirichlet(np.ones(12))[:11]  # the 12th is mass off the numerals
        end1 = rng.uniform()
        r = numeral_distribution(dict(zip(NUMERALS, seq, strict=True)), {"1": end1})
        raw = seq * np.where(np.arange(11) == 1, end1, 1.0)
        probs = raw / raw.sum()
        np.testing.assert_allclose(r.probs, probs, rtol=1e-12)
        assert r.expected == pytest.approx(float(probs @ (np.arange(11) / 10)), rel=1e-12)
