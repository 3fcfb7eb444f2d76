"""The ``guard:`` backend: abstains below its threshold without asking the inner model, passes
every other request through unchanged, and says why in ``extra``."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest
import skimage.data

from clearsight.guard.backend import CONTENT_MASS, GuardBackend, GuardOptions, make_guard
from clearsight.guard.estimate import estimate_visibility
from clearsight.models import (
    Capabilities,
    Decoding,
    Message,
    PartialBatchError,
    Request,
    RequestFailedError,
    Response,
    load_backend,
)
from clearsight.physics import fog
from clearsight.sweep.readouts import parse_verbalized, sweep_readouts
from clearsight.sweep.references.observer import ObserverReference
from clearsight.tasks import category_prior, identification_question, verbalized_question
from clearsight.validate import InputError

PHOTO = skimage.data.astronaut()
DEPTH = np.full(PHOTO.shape[:2], 10.0, np.float32)
CLEARISH = fog(PHOTO, DEPTH, 100.0)  # V_hat about 100 m
MURKY = fog(PHOTO, DEPTH, 12.0)  # V_hat about 12 m
PRIOR = category_prior(["person", "cat", "dog", "cup", "horse", "kite"])
QUESTION = identification_question(
    "person", PRIOR, np.random.default_rng(0), abstain="reason", scheme="exchangeable"
)
VERBAL = verbalized_question(QUESTION, "verbal.plain.v1")


class Recorder:
    """An inner backend that records what reaches it and answers A with letter mass."""

    name = "recorder"
    capabilities = Capabilities(images=True, generate=True, candidate_probs=True)

    def __init__(self, fail: bool = False) -> None:
        self.seen: list[Request] = []
        self.fail = fail

    def complete(self, requests: Sequence[Request]) -> list[Response]:
        self.seen.extend(requests)
        out = [
            Response(
                texts=("Answer: A\nConfidence: 90",) if r.generate else (),
                candidate_probs={c: 0.9 if c == "A" else 0.02 for c in r.candidates} or None,
                latency_s=0.5,
                extra={"inner": "yes"},
            )
            for r in requests
        ]
        if self.fail:
            results: list[Response | RequestFailedError] = list(out)
            results[0] = RequestFailedError("boom", 1)
            raise PartialBatchError(results)
        return out


def request(image, depth=DEPTH, question=QUESTION, abstain=True) -> Request:
    """A request as the sweep's ``_request`` builds it."""
    ref = ObserverReference(
        clean=PHOTO,
        box=(100, 100, 200, 200),
        letters=question.answer_letters,
        shown_letter=None,
        abstain_letter=question.abstain if abstain else None,
        abstain_names_reason=True,
        depth_m=depth,
    )
    messages = (Message.user(image, question.prompt),)
    if question.readout == "verbalized":
        return Request(messages, Decoding(max_new_tokens=24, seed=3), reference=ref)
    return Request(
        messages,
        Decoding(max_new_tokens=1, seed=3),
        candidates=question.letters,
        generate=False,
        reference=ref,
    )


def guard(inner, **options) -> GuardBackend:
    return GuardBackend(inner, GuardOptions(**options), "recorder")


def test_above_threshold_reaches_the_inner_model_unchanged():
    inner = Recorder()
    reqs = [request(CLEARISH), request(CLEARISH, question=VERBAL)]
    got = guard(inner, threshold_m=40.0).complete(reqs)
    assert len(inner.seen) == 2
    assert all(a is b for a, b in zip(inner.seen, reqs, strict=True))  # the very same objects
    direct = Recorder().complete(reqs)
    for g, d in zip(got, direct, strict=True):
        info = g.extra["guard"]
        assert info["decision"] == "pass"
        assert info["basis"] == "visibility_m"
        assert info["visibility_m"] == pytest.approx(100.0, rel=0.12)
        assert {k: v for k, v in g.extra.items() if k != "guard"} == d.extra
        gj, dj = g.to_json(), d.to_json()
        gj.pop("extra"), dj.pop("extra")
        assert gj == dj  # everything but the added estimate is the inner response


def test_below_threshold_abstains_without_the_inner_model():
    inner = Recorder()
    letter, verbal = guard(inner, threshold_m=40.0).complete(
        [request(MURKY), request(MURKY, question=VERBAL)]
    )
    assert inner.seen == []
    info = letter.extra["guard"]
    assert info["decision"] == "abstain"
    assert info["threshold_m"] == 40.0
    assert info["visibility_m"] == pytest.approx(12.0, rel=0.12)
    k = len(QUESTION.answer_letters)
    read = sweep_readouts(QUESTION, letter.to_json())
    assert read["abstained"] is True
    assert read["answer"] == QUESTION.abstain
    assert read["internal_conf"] == pytest.approx(1.0 / k)  # chance: the lowest there is
    assert sum(letter.candidate_probs.values()) == pytest.approx(1.0)
    assert letter.candidate_probs[QUESTION.abstain] == pytest.approx(1.0 - CONTENT_MASS)
    assert verbal.candidate_probs is None
    answer, conf = parse_verbalized(verbal.texts[0], VERBAL.letters)
    assert answer == VERBAL.abstain
    assert conf == pytest.approx(round(100 / k) / 100)
    assert sweep_readouts(VERBAL, verbal.to_json())["abstained"] is True


def test_without_depth_the_transmission_threshold_decides():
    inner = Recorder()
    t_murky = estimate_visibility(MURKY).transmission
    t_clear = estimate_visibility(CLEARISH).transmission
    mid = math.sqrt(t_murky * t_clear)
    g = guard(inner, threshold_m=40.0, threshold_t=mid)
    murky, clear = g.complete([request(MURKY, depth=None), request(CLEARISH, depth=None)])
    assert murky.extra["guard"]["decision"] == "abstain"
    assert murky.extra["guard"]["basis"] == "transmission"
    assert murky.extra["guard"]["visibility_m"] is None
    assert clear.extra["guard"]["decision"] == "pass"
    assert len(inner.seen) == 1
    # with only a metres threshold and no depth, nothing can be decided: it passes
    only_m = guard(Recorder(), threshold_m=40.0).complete([request(MURKY, depth=None)])[0]
    assert only_m.extra["guard"]["decision"] == "pass"
    assert only_m.extra["guard"]["reason"] == "no depth map for threshold_m"


def test_no_abstain_option_or_no_image_passes():
    inner = Recorder()
    g = guard(inner, threshold_m=40.0)
    no_option = g.complete([request(MURKY, abstain=False)])[0]
    assert no_option.extra["guard"]["reason"] == "no abstain option"
    text_only = Request((Message.user("What is it?"),))
    blind = g.complete([text_only])[0]
    assert blind.extra["guard"]["reason"] == "not exactly one image"
    assert inner.seen[1] is text_only


def test_partial_inner_failure_keeps_the_batch_order():
    g = guard(Recorder(fail=True), threshold_m=40.0)
    with pytest.raises(PartialBatchError) as err:
        g.complete([request(MURKY), request(CLEARISH), request(CLEARISH)])
    first, failed, ok = err.value.results
    assert isinstance(first, Response)
    assert first.extra["guard"]["decision"] == "abstain"
    assert isinstance(failed, RequestFailedError)
    assert isinstance(ok, Response)
    assert ok.extra["guard"]["decision"] == "pass"


def test_registered_prefix_wraps_any_backend():
    g = load_backend("guard:observer", {"threshold_m": 40.0})
    assert g.name == "guard:observer"
    assert g.capabilities == load_backend("observer").capabilities
    murky, clear = g.complete([request(MURKY), request(CLEARISH)])
    assert murky.extra["guard"]["decision"] == "abstain"
    assert clear.extra["guard"]["decision"] == "pass"
    assert "p_detect" in clear.extra


def test_the_observer_ignores_the_depth_map():
    obs = load_backend("observer")
    with_depth, without = obs.complete([request(CLEARISH), request(CLEARISH, depth=None)])
    assert with_depth.to_json() == without.to_json()


def test_bad_options():
    with pytest.raises(InputError, match="inner model"):
        make_guard("", {"threshold_m": 1.0})
    with pytest.raises(InputError, match="unknown model"):
        make_guard("nope", {"threshold_m": 1.0})
    with pytest.raises(InputError, match="needs a threshold"):
        make_guard("observer", {})
    with pytest.raises(InputError, match="thresold_m: unknown field"):
        make_guard("observer", {"thresold_m": 1.0})
    with pytest.raises(InputError, match="threshold_t"):
        make_guard("observer", {"threshold_t": 1.5})
    with pytest.raises(InputError, match="does not exist"):
        make_guard("observer", {"calibration": "/no/such/file.json"})
