"""The reference observer: an ideal observer limited by contrast, with no weights.

It measures the target's retained luminance contrast — the gain of the target's linear-light
luminance detail in the shown image over the clean one, ``c = <D', D> / <D, D>`` inside the box,
which equals the transmission ``t`` for a target at one depth — and detects it with probability

    P(detect) = 1 / (1 + (c_thr / c) ** slope)

a log-logistic psychometric function with ``P = 0.5`` at the threshold contrast ``c_thr = 0.02``
that defines meteorological visibility: a target at distance ``z`` is seen half the time at
``V = z``. When it detects the object it names it; otherwise it guesses uniformly among the ``k``
options. It reports ``P + (1 - P) / k`` as its confidence — exactly its probability of being
right — so it is calibrated by construction and its blind-spot width W is about 0: the physical
reference every model is compared with. Under the reason-naming abstain wording it abstains when
``P < 0.5``; under the generic wording it never does: its abstention names a cause it measured
(too little contrast), and "I don't know" names none. Its W on the generic wording's abstain
rate is therefore censored by design, and every report says so beside the number
(:func:`clearsight.sweep.page.labels.observer_note`).

What it may know that a model may not — the clean image, the shown box, which option names the
object in it — comes with each request of the sweep as an :class:`ObserverReference`
(:attr:`clearsight.models.Request.reference`, opaque to every other backend); the backend is
registered as ``observer`` in :mod:`clearsight.models.registry` (through
:func:`clearsight.sweep.references.recognition.make_observer`, which makes its variants too).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field

from clearsight.models.base import Capabilities, Request, Response
from clearsight.physics.srgb import decode_srgb8
from clearsight.seeding import content_hash
from clearsight.validate import InputError

_LUMA = np.array([0.2126, 0.7152, 0.0722], dtype=np.float32)


#: The wording whose abstain option names no cause ("I don't know"): the observer never picks it.
GENERIC_WORDING = "mcq.generic"


@dataclass(frozen=True, eq=False)
class ObserverReference:
    """What a *reference observer* may know about a sweep item that a model may not: the sweep
    attaches it to each request (:attr:`clearsight.models.Request.reference`); the ``observer``
    backend reads it, every real backend ignores it and it never reaches a prompt.

    ``clean`` is the undegraded image the shown box was drawn on (the contrast reference),
    ``box`` the shown target's box, ``shown_letter`` the option that names the object actually
    in the box (None when no option does, e.g. a shuffled control), ``letters`` the content
    options and ``abstain_letter`` the abstain option if offered. ``depth_m`` is the shown
    scene's depth map in metres (None for the blank control), read by the ``guard`` wrapper's
    visibility estimate (:mod:`clearsight.guard`) and ignored by every other backend.
    """

    clean: npt.NDArray[np.uint8] | None
    box: tuple[int, int, int, int]
    letters: tuple[str, ...]
    shown_letter: str | None
    abstain_letter: str | None
    abstain_names_reason: bool
    depth_m: npt.NDArray[np.float32] | None = None


class ObserverConfig(BaseModel):
    """Parameters of the contrast-limited ideal observer."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    threshold_contrast: float = Field(
        0.02, gt=0, lt=1, description="Retained contrast seen half the time (2 % defines V)."
    )
    slope: float = Field(
        4.0, gt=0, description="Steepness of the log-logistic psychometric function."
    )


def retained_contrast(
    shown: npt.NDArray[np.uint8], clean: npt.NDArray[np.uint8], box: tuple[int, int, int, int]
) -> float:
    """Gain of linear luminance detail inside ``box``: ``<D', D> / <D, D>``, D = Y - mean(Y).

    0 for a flat target (nothing to detect); can be negative for anti-correlated content.
    """
    if shown.shape != clean.shape:
        raise InputError(f"shown {shown.shape} and clean {clean.shape} images differ in shape")
    x0, y0, x1, y1 = box
    y_clean = (decode_srgb8(clean[y0:y1, x0:x1]) @ _LUMA).astype(np.float64)
    y_shown = (decode_srgb8(shown[y0:y1, x0:x1]) @ _LUMA).astype(np.float64)
    d = y_clean - y_clean.mean()
    d_shown = y_shown - y_shown.mean()
    energy = float(np.sum(d * d))
    return 0.0 if energy == 0.0 else float(np.sum(d_shown * d) / energy)


def p_detect(contrast: float, config: ObserverConfig) -> float:
    """``1 / (1 + (c_thr / c) ** slope)``; 0 for c <= 0."""
    if contrast <= 0:
        return 0.0
    return 1.0 / (1.0 + (config.threshold_contrast / contrast) ** config.slope)


class ObserverBackend:
    """The ``observer`` backend: answers option questions from contrast alone, seeing the
    target with probability ``detect(c)`` (:func:`p_detect` of ``config`` unless given: the
    reference observers of :mod:`clearsight.sweep.references.recognition`)."""

    capabilities = Capabilities(images=True, generate=True, candidate_probs=True, n_per_call=True)

    def __init__(
        self,
        config: ObserverConfig | None = None,
        name: str = "observer",
        detect: Callable[[float], float] | None = None,
    ) -> None:
        self.config = config or ObserverConfig()
        self.name = name
        self.detect = detect or partial(p_detect, config=self.config)

    def _answer(
        self, ref: ObserverReference, p: float, rng: np.random.Generator
    ) -> tuple[str, dict[str, float], float]:
        k = len(ref.letters)
        seen = ref.shown_letter is not None and rng.random() < p
        chosen = (
            ref.shown_letter if seen and ref.shown_letter else ref.letters[int(rng.integers(k))]
        )
        conf = p + (1 - p) / k if ref.shown_letter is not None else 1.0 / k
        # a pure guess ties every option at 1/k: the guessed one gets 1e-9 more, so that the
        # argmax read-out reports the observer's actual choice
        conf = min(conf + 1e-9, 1.0)
        rest = (1.0 - conf) / (k - 1) if k > 1 else 0.0
        probs = {letter: (conf if letter == chosen else rest) for letter in ref.letters}
        if ref.abstain_letter is not None:
            abstain = ref.abstain_names_reason and p < 0.5
            # abstaining puts most mass on the abstain letter (so it is the argmax) while the
            # options keep their relative beliefs; otherwise the abstain letter gets none
            mass = 0.75 - p / 2 if abstain else 0.0
            probs = {letter: v * (1.0 - mass) for letter, v in probs.items()}
            probs[ref.abstain_letter] = mass
            if abstain:
                chosen = ref.abstain_letter
        return chosen, probs, conf

    def _one(
        self, request: Request, contrasts: dict[tuple[int, int, tuple[int, ...]], float]
    ) -> Response:
        ref = request.reference
        if not isinstance(ref, ObserverReference):
            raise InputError("the observer answers only requests that carry an ObserverReference")
        images = [im for m in request.messages for im in m.images]
        if len(images) != 1:
            raise InputError(f"the observer needs exactly one image, got {len(images)}")
        shown = images[0]
        contrast = 0.0
        if ref.clean is not None:
            # many questions share one shown image: measure each (image, box) once per batch
            key = (id(shown), id(ref.clean), ref.box)
            if key not in contrasts:
                contrasts[key] = retained_contrast(shown, ref.clean, ref.box)
            contrast = contrasts[key]
        p = self.detect(contrast)
        seed = request.decoding.seed
        if seed is None:
            seed = int(content_hash([m.text for m in request.messages])[:8], 16)
        rng = np.random.default_rng(seed)
        texts = []
        probs: dict[str, float] = {}
        for _ in range(request.n):
            chosen, probs_i, conf = self._answer(ref, p, rng)
            probs = probs or probs_i
            texts.append(f"Answer: {chosen}\nConfidence: {round(100 * conf)}")
        candidate = {c.strip(): probs.get(c.strip(), 0.0) for c in request.candidates}
        return Response(
            texts=tuple(texts) if request.generate else (),
            candidate_probs=candidate if request.candidates else None,
            extra={"contrast": contrast, "p_detect": p},
        )

    def complete(self, requests: Sequence[Request]) -> list[Response]:
        contrasts: dict[tuple[int, int, tuple[int, ...]], float] = {}
        return [self._one(r, contrasts) for r in requests]
