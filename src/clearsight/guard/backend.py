"""The ``guard:<inner>`` backend: abstain when the image is too murky, else ask the inner model.

The visibility-sweep paper proposes "a separate image-quality or visibility estimate that
triggers abstention" and leaves testing it open (its §VI). This wrapper
is that guard around any backend (``guard:perceiver:llm``, ``guard:observer``,
``guard:hf:...``). For each request it estimates the image's visibility
(:func:`~clearsight.guard.estimate.estimate_visibility`: metres where the request's
:class:`~clearsight.sweep.references.observer.ObserverReference` carries the scene's depth map,
else the
depth-free median transmission) and compares it with its threshold:

* **below** (V_hat < ``threshold_m``; without depth, t < ``threshold_t``) and the question
  offers an abstain option: it answers without calling the inner model — candidate
  probabilities with mass 0.99 on the abstain letter and 0.01 shared by the content letters
  (so the internal confidence is chance, 1/k), and for a generating request the reply
  ``Answer: <abstain letter>`` / ``Confidence: <100/k>``, which the sweep's verbal parser reads;
* **otherwise** the request goes to the inner model unchanged (the same object) and the
  inner response comes back with the estimate added to ``extra``.

Every response's ``extra["guard"]`` records the decision, the estimate and the thresholds.
Options: ``threshold_m``, ``threshold_t``, ``calibration`` (a file of ``clearsight guard
calibrate``, whose thresholds fill those not given), ``estimator`` (``dark_channel``, the one
there is), ``patch_px``, ``airlight`` (the veil when it is known; by default it is
estimated from the image), and ``inner`` (the inner model's own options).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal, NotRequired, TypedDict

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from clearsight.guard.calibrate import load_calibration
from clearsight.guard.estimate import DEFAULT_PATCH_PX, VisibilityEstimate, estimate_visibility
from clearsight.models import (
    Backend,
    Capabilities,
    PartialBatchError,
    Request,
    RequestFailedError,
    Response,
    shared_backend,
    split_model_spec,
)
from clearsight.sweep.references.observer import ObserverReference
from clearsight.validate import InputError, invalid_options

#: Probability mass the abstaining guard leaves to the content letters, shared equally.
CONTENT_MASS: Final = 0.01


class GuardOptions(BaseModel):
    """Options of the ``guard:`` backend (module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    threshold_m: float | None = Field(None, gt=0, description="Abstain below this V_hat (m).")
    threshold_t: float | None = Field(
        None, gt=0, lt=1, description="Without depth: abstain below this median transmission."
    )
    calibration: str | None = Field(None, description="A `clearsight guard calibrate` file.")
    estimator: Literal["dark_channel"] = "dark_channel"
    patch_px: int = Field(DEFAULT_PATCH_PX, ge=1, description="Dark-channel patch side (px).")
    airlight: float | None = Field(
        None, gt=0, le=1, description="The veil's linear grey value if known (None: estimate)."
    )
    inner: dict[str, Any] = Field(default_factory=dict, description="The inner model's options.")


class GuardInfo(TypedDict):
    """A response's ``extra["guard"]``: the estimator and thresholds, the estimate (absent when
    the request had not exactly one image), the ``decision`` and its ``basis`` (the statistic
    compared) or the ``reason`` it passes without comparing. ``decision`` is set on every
    value :meth:`GuardBackend._decide` returns; the other keys follow the estimate's."""

    estimator: str
    threshold_m: float | None
    threshold_t: float | None
    visibility_m: NotRequired[float | None]
    transmission: NotRequired[float]
    usable_share: NotRequired[float | None]
    decision: NotRequired[Literal["abstain", "pass"]]
    basis: NotRequired[str]
    reason: NotRequired[str]


class GuardBackend:
    """An inner backend behind the visibility guard (module docstring)."""

    def __init__(self, inner: Backend, options: GuardOptions, inner_spec: str = "") -> None:
        self.inner = inner
        self.options = options
        self.name = f"guard:{inner_spec or inner.name}"
        self.capabilities = inner.capabilities
        self.threshold_m = options.threshold_m
        self.threshold_t = options.threshold_t
        if options.calibration is not None:
            cal = load_calibration(options.calibration)
            if inner_spec and cal.model != inner_spec:
                raise InputError(
                    f"guard calibration {options.calibration} was fitted for {cal.model!r}, "
                    f"not {inner_spec!r}"
                )
            self.threshold_m = self.threshold_m or cal.threshold_m
            self.threshold_t = self.threshold_t or cal.threshold_t
        if self.threshold_m is None and self.threshold_t is None:
            raise InputError(
                "the guard needs a threshold: threshold_m, threshold_t or a calibration file"
            )

    def preflight(self, needs: Capabilities) -> None:
        """The inner backend's preflight, where it has one (a server behind the guard)."""
        check = getattr(self.inner, "preflight", None)
        if check is not None:
            check(needs)

    def _estimate(self, request: Request) -> VisibilityEstimate | None:
        images = [im for m in request.messages for im in m.images]
        if len(images) != 1:
            return None
        ref = _reference(request)
        depth = None if ref is None else ref.depth_m
        if depth is not None and depth.shape != images[0].shape[:2]:
            depth = None  # a depth map of another image size says nothing about this one
        return estimate_visibility(
            images[0], depth, self.options.patch_px, known_airlight=self.options.airlight
        )

    def _decide(self, est: VisibilityEstimate | None, request: Request) -> GuardInfo:
        """``extra["guard"]``: the decision (abstain / pass), why, and the estimate."""
        info: GuardInfo = {
            "estimator": self.options.estimator,
            "threshold_m": self.threshold_m,
            "threshold_t": self.threshold_t,
        }
        if est is None:
            return info | {"decision": "pass", "reason": "not exactly one image"}
        info |= {
            "visibility_m": est.visibility_m,
            "transmission": est.transmission,
            "usable_share": est.usable_share,
        }
        if est.visibility_m is not None and self.threshold_m is not None:
            below, basis = est.visibility_m < self.threshold_m, "visibility_m"
        elif self.threshold_t is not None:
            below, basis = est.transmission < self.threshold_t, "transmission"
        else:
            return info | {"decision": "pass", "reason": "no depth map for threshold_m"}
        ref = _reference(request)
        if below and (ref is None or ref.abstain_letter is None):
            return info | {"decision": "pass", "basis": basis, "reason": "no abstain option"}
        return info | {"decision": "abstain" if below else "pass", "basis": basis}

    def complete(self, requests: Sequence[Request]) -> list[Response]:
        """Abstain on the requests whose image is below the threshold; send the others, in one
        batch and unchanged, to the inner model."""
        cache: dict[tuple[Any, ...], VisibilityEstimate | None] = {}
        decisions = []
        for r in requests:
            images = tuple(id(im) for m in r.messages for im in m.images)
            ref = _reference(r)
            key = (images, None if ref is None else id(ref.depth_m))
            if key not in cache:  # many questions share one shown image
                cache[key] = self._estimate(r)
            decisions.append(self._decide(cache[key], r))
        passed = [r for r, d in zip(requests, decisions, strict=True) if d["decision"] == "pass"]
        try:
            inner: list[Response | RequestFailedError] = list(
                self.inner.complete(passed) if passed else []
            )
        except PartialBatchError as exc:  # keep the inner successes, place them in this batch
            inner = exc.results
        answers = iter(inner)
        out: list[Response | RequestFailedError] = []
        for r, d in zip(requests, decisions, strict=True):
            if d["decision"] != "pass":
                out.append(abstention(r, d))
                continue
            resp = next(answers)
            if isinstance(resp, Response):
                resp = dataclasses.replace(resp, extra={**resp.extra, "guard": d})
            out.append(resp)
        if any(isinstance(o, RequestFailedError) for o in out):
            raise PartialBatchError(out)
        return [o for o in out if isinstance(o, Response)]


def abstention(request: Request, info: GuardInfo) -> Response:
    """The guard's own answer to ``request``: the abstain option at chance confidence (module
    docstring), with ``info`` as ``extra["guard"]``."""
    ref = _reference(request)
    if ref is None or ref.abstain_letter is None:
        raise InputError("the guard abstains only on a request that offers an abstain option")
    k = max(len(ref.letters), 1)
    probs = {letter: CONTENT_MASS / k for letter in ref.letters}
    probs[ref.abstain_letter] = 1.0 - CONTENT_MASS
    reply = f"Answer: {ref.abstain_letter}\nConfidence: {round(100 / k)}"
    return Response(
        texts=(reply,) * request.n if request.generate else (),
        candidate_probs=(
            {c.strip(): probs.get(c.strip(), 0.0) for c in request.candidates}
            if request.candidates
            else None
        ),
        extra={"guard": dict(info)},
    )


def _reference(request: Request) -> ObserverReference | None:
    """What the sweep tells a reference backend about ``request``'s item (its depth map, its
    options); None for a request of another protocol, which the guard passes on."""
    ref = request.reference
    return ref if isinstance(ref, ObserverReference) else None


def parse_guard_options(options: Mapping[str, JsonValue]) -> GuardOptions:
    """Validate the guard's options; an unknown or bad one is an InputError naming it."""
    try:
        return GuardOptions(**dict(options))
    except ValidationError as exc:
        raise invalid_options(exc, "guard options") from exc


def make_guard(arg: str, options: Mapping[str, JsonValue]) -> GuardBackend:
    """``guard:<inner spec>``: the inner backend (shared within the process, so a sweep of the
    bare and the guarded model loads it once) behind the guard."""
    if not arg:
        raise InputError("guard needs an inner model: guard:<model>, e.g. guard:perceiver:llm")
    split_model_spec(arg)
    opts = parse_guard_options(options)
    return GuardBackend(shared_backend(arg, opts.inner), opts, arg)
