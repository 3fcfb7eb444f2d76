"""The reference observer: contrast measurement, psychometrics and calibration by construction."""

from __future__ import annotations

import numpy as np
import pytest

from clearsight.models import Decoding, Message, Request, load_backend
from clearsight.physics import fog
from clearsight.sweep.readouts import letter_readout, parse_verbalized
from clearsight.sweep.references.observer import (
    ObserverConfig,
    ObserverReference,
    p_detect,
    retained_contrast,
)
from clearsight.validate import InputError


@pytest.fixture(scope="module")
def textured():
    rng = np.random.default_rng(0)
    return rng.integers(0, 256, (64, 80, 3), dtype=np.uint8)


def test_retained_contrast_is_the_transmission_for_a_uniform_depth(textured):
    z = np.full(textured.shape[:2], 5.0)
    box = (10, 10, 50, 40)
    for v in (250.0, 31.25, 7.8125):
        t = np.exp(-3.912 * 5.0 / v)
        c = retained_contrast(fog(textured, z, v), textured, box)
        # 8-bit quantisation of the fogged image perturbs the gain a little
        assert c == pytest.approx(t, abs=0.01)
    assert retained_contrast(textured, textured, box) == pytest.approx(1.0)
    # a flat shown image has no detail, but its zero comes out of a float32 BLAS product whose
    # kernel may treat a block of pixels and the tail differently (by CPU), leaving a float32
    # ulp (~1.5e-8 at this luma) in some; over the clean detail's rms (~0.2) that bounds the
    # gain by ~1e-7
    assert retained_contrast(np.full_like(textured, 128), textured, box) == pytest.approx(
        0.0, abs=1e-6
    )


def test_psychometric_function():
    cfg = ObserverConfig(threshold_contrast=0.02, slope=4.0)
    assert p_detect(0.02, cfg) == pytest.approx(0.5)
    assert p_detect(0.04, cfg) == pytest.approx(1 / (1 + 0.5**4))
    assert p_detect(0.0, cfg) == 0.0
    assert p_detect(1.0, cfg) > 0.999999


def _request(image, clean, seed, *, abstain="E", reason=True, generate=False):
    ref = ObserverReference(
        clean=clean,
        box=(10, 10, 50, 40),
        letters=("A", "B", "C", "D"),
        shown_letter="C",
        abstain_letter=abstain,
        abstain_names_reason=reason,
    )
    letters = ("A", "B", "C", "D", *((abstain,) if abstain else ()))
    return Request(
        (Message.user(image, "Which?"),),
        Decoding(seed=seed),
        candidates=letters,
        generate=generate,
        reference=ref,
    )


def test_observer_is_calibrated_by_construction(textured):
    obs = load_backend("observer", {"threshold_contrast": 0.02, "slope": 4.0})
    z = np.full(textured.shape[:2], 5.0)
    for v in (15.625, 5.0, 3.0):  # around the threshold: V = z gives P(detect) = 0.5
        image = fog(textured, z, v)
        responses = obs.complete([_request(image, textured, s, abstain=None) for s in range(2000)])
        p = responses[0].extra["p_detect"]
        reads = [letter_readout(r.candidate_probs, "ABCD") for r in responses]
        accuracy = np.mean([r.answer == "C" for r in reads])
        confidence = reads[0].confidence
        assert confidence == pytest.approx(p + (1 - p) / 4)
        assert accuracy == pytest.approx(confidence, abs=0.035)


def test_observer_abstains_only_under_the_reason_wording(textured):
    obs = load_backend("observer")
    blank = np.full_like(textured, 128)
    reason = letter_readout(
        obs.complete([_request(blank, textured, 1)])[0].candidate_probs, "ABCD", "E"
    )
    assert reason.answer == "E"
    assert reason.confidence == pytest.approx(0.25)
    generic = letter_readout(
        obs.complete([_request(blank, textured, 1, reason=False)])[0].candidate_probs, "ABCD", "E"
    )
    assert generic.answer in "ABCD"
    clear = letter_readout(
        obs.complete([_request(textured, textured, 1)])[0].candidate_probs, "ABCD", "E"
    )
    assert clear.answer == "C"
    assert clear.confidence > 0.99


def test_observer_verbalizes_its_confidence(textured):
    obs = load_backend("observer")
    [response] = obs.complete([_request(textured, textured, 3, generate=True)])
    letter, conf = parse_verbalized(response.texts[0], "ABCDE")
    assert letter == "C"
    assert conf == pytest.approx(1.0)


def test_observer_needs_its_reference(textured):
    obs = load_backend("observer")
    with pytest.raises(InputError, match="ObserverReference"):
        obs.complete([Request((Message.user(textured, "q"),), candidates=("A",), generate=False)])


def test_unknown_model_name():
    with pytest.raises(InputError, match=r"unknown model 'gpt:x'.*observer"):
        load_backend("gpt:x")


@pytest.mark.parametrize(
    ("text", "letter", "conf"),
    [
        ("Answer: B\nConfidence: 85", "B", 0.85),
        ("answer = (c)\nconfidence: 7/10", "C", 0.7),
        ("B. Confidence level: 90%", "B", 0.9),
        ("Answer: D\nConfidence: very high", "D", None),
        ("I cannot tell.", None, None),
        ("Answer: Z\nConfidence: 150", None, None),
    ],
)
def test_parse_verbalized(text, letter, conf):
    got_letter, got_conf = parse_verbalized(text, "ABCDE")
    assert got_letter == letter
    assert got_conf == (None if conf is None else pytest.approx(conf))


def test_letter_readout_renormalises_and_keeps_raw():
    r = letter_readout({"A": 0.1, "B": 0.3, "C": 0.05, "D": 0.05, "E": 0.2, "x": 0.3}, "ABCD", "E")
    assert r.mass == pytest.approx(0.7)
    assert r.answer == "B"
    assert r.confidence == pytest.approx(0.3 / 0.5)
    assert r.renormalised["E"] == pytest.approx(0.2 / 0.7)
    none = letter_readout(None, "ABCD")
    assert none.answer is None
    assert none.confidence is None


def test_the_observers_generic_abstention_w_carries_its_reason() -> None:
    """The reference observer never picks 'I don't know' (by design): its W there is shown
    with the reason; every other model, wording and signal gets none."""
    from clearsight.sweep.page.labels import observer_note

    assert "by design" in observer_note("observer", "mcq.generic", "abstain")
    assert observer_note("observer", "mcq.reason", "abstain") == ""
    assert observer_note("observer", "mcq.generic", "internal_conf") == ""
    assert observer_note("hf:some-vlm", "mcq.generic", "abstain") == ""
