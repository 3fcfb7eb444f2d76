"""The limits of seeing beside the 2 % detection observer: recognition at the CIE's 5 % contrast,
and people's recognition as measured (issue 45 item 4; docs/methods.md §8).

* ``observer:recognition``: the reference observer (:mod:`clearsight.sweep.references.observer`)
  with its psychometric function's half point at :data:`RECOGNITION_THRESHOLD` — the retained
  contrast at which the CIE takes an object to be *recognised*, where the 2 % of meteorological
  visibility is the contrast at which it is *detected*.
* ``observer:human``: the same observer seeing with people's sensitivity: the psychometric
  function fitted (:func:`human_fit`) to Geirhos et al. 2017's contrast experiment
  (``data/geirhos2017_contrast.json``, the numbers with their source: 16-way recognition of
  grey-scale images shown for 200 ms, at 100, 10, 5, 3 and 1 % contrast),

      P16(c) = 1/16 + (1 - 1/16 - lapse) / (1 + exp(-slope (ln c - ln c50)))

  (a log-logistic with a guess rate of 1/16 and a lapse rate, least squares on the published
  proportions). It sees the target with the probability ``p(c) = (P16(c) - 1/16) / (1 - 1/16)``
  (the high-threshold correction for guessing among 16) and, like the observer, names it when it
  does and guesses among the k options when not. The contrast ``c`` it reads is the target's
  retained luminance contrast (:func:`~clearsight.sweep.references.observer.retained_contrast`),
  under Koschmieder fog the transmission ``exp(-3.912 z / V)`` of a target at distance z: the
  human curve mapped through each scene's target contrast.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Final, TypedDict

import numpy as np
from pydantic import JsonValue
from scipy.optimize import least_squares

from clearsight.sweep.references.observer import ObserverBackend, ObserverConfig
from clearsight.validate import InputError

__all__ = [
    "RECOGNITION_THRESHOLD",
    "REFERENCE_OBSERVERS",
    "HumanData",
    "HumanFit",
    "HumanPoint",
    "human_data",
    "human_fit",
    "make_observer",
    "reference_observer",
]

#: The retained contrast at which an object is recognised half the time (CIE), against the
#: 2 % at which it is detected (meteorological visibility).
RECOGNITION_THRESHOLD: Final = 0.05
#: The reference observers' model names, the detection one first, with what each is.
REFERENCE_OBSERVERS: Final = {
    "observer": "detection at 2 % contrast (meteorological visibility)",
    "observer:recognition": "recognition at 5 % contrast (CIE)",
    "observer:human": "people's 16-way recognition (Geirhos et al. 2017)",
}
_DATA: Final = "geirhos2017_contrast.json"


class HumanPoint(TypedDict):
    """One published point: the image's contrast (share of the original's) and the share right."""

    contrast: float
    accuracy: float


class HumanData(TypedDict):
    """``data/geirhos2017_contrast.json``: the points with their source and conditions."""

    source: str
    url: str
    task: str
    n_classes: int
    presentation_ms: int
    greyscale: bool
    contrast_definition: str
    points: list[HumanPoint]


def human_data() -> HumanData:
    """The published contrast data with their source (``data/geirhos2017_contrast.json``)."""
    text = resources.files("clearsight.sweep.references").joinpath("data", _DATA).read_text()
    data: HumanData = json.loads(text)
    return data


@dataclass(frozen=True)
class HumanFit:
    """The fitted log-logistic ``P16(c)`` (module docstring): ``c50`` (the contrast of its
    midpoint), ``slope`` (per unit ln c), ``lapse`` and the guess rate ``chance`` = 1/16."""

    c50: float
    slope: float
    lapse: float
    chance: float

    def accuracy(self, contrast: float) -> float:
        """``P16(c)``: the share right among the 16 classes at contrast ``c`` (chance at 0)."""
        if contrast <= 0:
            return self.chance
        rise = 1.0 / (1.0 + math.exp(-self.slope * (math.log(contrast) - math.log(self.c50))))
        return self.chance + (1.0 - self.chance - self.lapse) * rise

    def seen(self, contrast: float) -> float:
        """The probability of seeing the target, ``(P16(c) - 1/16) / (1 - 1/16)``."""
        return (self.accuracy(contrast) - self.chance) / (1.0 - self.chance)


@cache
def human_fit() -> HumanFit:
    """:class:`HumanFit` fitted by least squares on the published proportions (ln c50 in
    [ln 0.001, 0], slope in [0.1, 20], lapse in [0, 0.5])."""
    data = human_data()
    c = np.array([p["contrast"] for p in data["points"]], dtype=np.float64)
    acc = np.array([p["accuracy"] for p in data["points"]], dtype=np.float64)
    chance = 1.0 / float(data["n_classes"])

    def residuals(theta: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        log_c50, slope, lapse = theta
        rise = 1.0 / (1.0 + np.exp(-slope * (np.log(c) - log_c50)))
        out: np.ndarray[Any, Any] = chance + (1.0 - chance - lapse) * rise - acc
        return out

    fit = least_squares(
        residuals,
        x0=[math.log(0.05), 3.0, 0.1],
        bounds=([math.log(1e-3), 0.1, 0.0], [0.0, 20.0, 0.5]),
    )
    log_c50, slope, lapse = (float(x) for x in fit.x)
    return HumanFit(math.exp(log_c50), slope, lapse, chance)


def make_observer(arg: str, options: Mapping[str, JsonValue]) -> ObserverBackend:
    """The ``observer`` backends: ``observer`` (options: :class:`ObserverConfig` fields) and
    ``observer:<arg>`` (:func:`reference_observer`)."""
    if arg:
        return reference_observer(arg, options)
    return ObserverBackend(ObserverConfig(**options))


def reference_observer(arg: str, options: Mapping[str, JsonValue]) -> ObserverBackend:
    """The reference observer named ``observer:<arg>``: ``recognition`` (its threshold
    :data:`RECOGNITION_THRESHOLD` unless ``options`` set it) or ``human`` (no options: its
    sensitivity is the fitted data's)."""
    if arg == "recognition":
        config = ObserverConfig(**({"threshold_contrast": RECOGNITION_THRESHOLD} | dict(options)))
        return ObserverBackend(config, name="observer:recognition")
    if arg == "human":
        if options:
            raise InputError(f"observer:human takes no options, got {', '.join(options)}")
        return ObserverBackend(name="observer:human", detect=human_fit().seen)
    raise InputError(
        f"unknown reference observer 'observer:{arg}': expected observer, "
        "observer:recognition or observer:human"
    )
