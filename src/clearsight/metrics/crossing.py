"""Crossing visibility of a signal over the sweep and the blind-spot width (docs/methods.md §4).

A signal s (accuracy, confidence, abstain rate) is measured at sweep levels given clearest
first (250, 125, ..., 1.953125 m). With clean value ``s0`` and floor ``f`` the half-way level is
``h = (s0 + f) / 2``; the crossing visibility V* is where s first gets strictly past h in the
direction of the floor, interpolated linearly in log10 V. The blind-spot width
``W = log10(V_acc* / V_aware*)`` says how many decades of visibility the model keeps its
awareness signal (confidence, abstention) up after its accuracy has gone: W > 0 means the
accuracy collapses at a clearer level than the awareness signal reacts, i.e. a blind spot.

Two forms: :func:`crossing_visibility` / :func:`blind_spot_width` for one curve, returning
frozen dataclasses, and :func:`crossing_visibility_batch` / :func:`blind_spot_width_batch`,
vectorised over any leading axes (e.g. the n_boot rows of a bootstrap of the whole curve).
The scalar forms are thin wrappers of the batch forms, so both follow the same rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from clearsight.metrics._checks import FloatArray, as_float_array, check_finite
from clearsight.validate import InputError

__all__ = [
    "W_READING",
    "BlindSpot",
    "BlindSpotBatch",
    "Crossing",
    "CrossingBatch",
    "blind_spot_width",
    "blind_spot_width_batch",
    "crossing_visibility",
    "crossing_visibility_batch",
]

#: How W reads, in the blind-spot card's words (its page and the sweep report's first screen).
W_READING = (
    "W > 0: accuracy falls before the model's confidence does (a blind spot); '≥' / '≤': a "
    "bound where a crossing is censored."
)

Censoring = Literal["below", "above"] | None
Bound = Literal["exact", "lower", "upper", "undetermined"]
StrArray = npt.NDArray[np.str_]
_BOUND_NAMES: dict[str, Bound] = {
    "exact": "exact",
    "lower": "lower",
    "upper": "upper",
    "undetermined": "undetermined",
}


@dataclass(frozen=True)
class Crossing:
    """Crossing visibility of one signal.

    ``visibility_m``: V* in metres. ``censored``: None when the signal crosses h inside the
    sweep; "below" when it never gets past h (V* = the murkiest level, the true crossing is
    at or below it); "above" when it is already past h at the clearest level (V* = that
    level, the true crossing is at or above it). ``half``: h; ``clean``, ``floor``: the
    values h was computed from (recorded with the result, docs/methods.md §4).
    """

    visibility_m: float
    censored: Censoring
    half: float
    floor: float
    clean: float


@dataclass(frozen=True)
class CrossingBatch:
    """Crossing visibilities of many curves (arrays over the leading axes of the values).

    ``censored`` holds the strings "none", "below", "above", or "undefined" where the
    crossing is undefined (clean == floor, or a NaN among the inputs of that curve); there
    ``visibility_m`` is NaN.
    """

    visibility_m: FloatArray
    censored: StrArray
    half: FloatArray


@dataclass(frozen=True)
class BlindSpot:
    """Blind-spot width ``value = log10(V_acc* / V_aware*)`` and what kind of number it is.

    ``bound``: "exact" (neither crossing censored), "lower" / "upper" (the true W is at
    least / at most ``value``), "undetermined" (the censorings point opposite ways).
    """

    value: float
    bound: Bound


@dataclass(frozen=True)
class BlindSpotBatch:
    """Blind-spot widths of many curve pairs; ``bound`` as in :class:`BlindSpot`."""

    value: FloatArray
    bound: StrArray


def _check_levels(levels_m: npt.ArrayLike) -> FloatArray:
    levels = check_finite(as_float_array(levels_m, "levels_m"), "levels_m")
    if (levels <= 0).any():
        raise InputError(f"levels_m must be > 0 metres, got min {float(levels.min()):.6g}")
    steps = np.diff(levels)
    if (steps >= 0).any():
        i = int(np.argmax(steps >= 0))
        raise InputError(
            "levels_m must strictly decrease (clearest first, e.g. 250, 125, ..., 1.953125); "
            f"level {i + 1} ({levels[i + 1]:.6g} m) is not below level {i} ({levels[i]:.6g} m)"
        )
    return levels


def crossing_visibility_batch(
    levels_m: npt.ArrayLike,
    values: npt.ArrayLike,
    clean: npt.ArrayLike,
    floor: npt.ArrayLike,
) -> CrossingBatch:
    """Vectorised :func:`crossing_visibility` over the leading axes of ``values``.

    ``values`` has shape ``(..., L)`` (the last axis runs over the L levels, clearest
    first); ``clean`` and ``floor`` broadcast to ``values.shape[:-1]``. The rule, per curve:

    - ``h = (clean + floor) / 2``; past(v) is ``v < h`` if floor < clean (falling signal),
      ``v > h`` if floor > clean (rising signal, e.g. abstain rate with floor 1).
    - i = the first level with past(values[i]). If i = 0: V* = levels[0], censored "above".
      If there is none: V* = levels[-1], censored "below". Otherwise, with t =
      ``(h - values[i-1]) / (values[i] - values[i-1])`` in [0, 1):
      ``log10 V* = log10 levels[i-1] + t (log10 levels[i] - log10 levels[i-1])``.
      Later recoveries do not matter: the first crossing wins.

    Undefined curves (clean == floor, or any NaN among that curve's values, clean, floor)
    get V* = NaN and censored "undefined" instead of an error, so a degenerate bootstrap
    replicate does not abort the whole bootstrap; :func:`percentile_interval` ignores NaN.
    Because only log V enters, multiplying every level by k multiplies V* by k.
    """
    levels, vals, s0, f = _batch_inputs(levels_m, values, clean, floor)
    half = (s0 + f) / 2.0
    direction = np.sign(f - s0)  # -1 falling, +1 rising, 0 undefined (NaN if NaN input)
    h = half[..., None]
    past = np.where(direction[..., None] > 0, vals > h, vals < h)
    # NaN > 0 is False, so a NaN clean or floor is undefined too.
    undefined = ~(np.abs(direction) > 0) | np.isnan(vals).any(axis=-1)
    past &= ~undefined[..., None]

    any_past = past.any(axis=-1)
    first = np.argmax(past, axis=-1)
    above = any_past & (first == 0)
    below = ~any_past
    inside = any_past & (first > 0)
    vis = np.where(
        inside, _interpolated(levels, vals, half, first), np.where(above, levels[0], levels[-1])
    )
    vis = np.where(undefined, np.nan, vis)
    censored = np.where(above, "above", np.where(below, "below", "none"))
    censored = np.where(undefined, "undefined", censored).astype(np.str_)
    return CrossingBatch(visibility_m=vis, censored=censored, half=np.asarray(half))


def _batch_inputs(
    levels_m: npt.ArrayLike, values: npt.ArrayLike, clean: npt.ArrayLike, floor: npt.ArrayLike
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """The levels, the curves' values and their clean values and floors broadcast to the
    curves' shape, as :func:`crossing_visibility_batch` takes them; InputError otherwise."""
    levels = _check_levels(levels_m)
    vals = as_float_array(values, "values", ndim=None)
    if vals.ndim == 0 or vals.shape[-1] != levels.size:
        raise InputError(
            f"values must have the {levels.size} levels on its last axis, got shape {vals.shape}"
        )
    lead = vals.shape[:-1]
    try:
        s0 = np.broadcast_to(np.asarray(clean, dtype=np.float64), lead)
        f = np.broadcast_to(np.asarray(floor, dtype=np.float64), lead)
    except ValueError as exc:
        raise InputError(
            f"clean and floor must broadcast to the curves' shape {lead}: {exc}"
        ) from exc
    return levels, vals, s0, f


def _interpolated(
    levels: FloatArray, vals: FloatArray, half: FloatArray, first: npt.NDArray[np.intp]
) -> FloatArray:
    """Each curve's V* between the level before its ``first`` level past ``half`` and that
    level, linear in log10 V (meaningful where ``first`` >= 1; the caller masks the rest)."""
    # Index of the level past h (>= 1 where it matters); with a single level nothing is
    # interpolated and the min keeps the (masked) look-ups in range.
    i1 = np.minimum(np.maximum(first, 1), levels.size - 1)[..., None]
    v_prev = np.take_along_axis(vals, i1 - 1, axis=-1)[..., 0]
    v_next = np.take_along_axis(vals, i1, axis=-1)[..., 0]
    l_prev = levels[i1[..., 0] - 1]
    l_next = levels[i1[..., 0]]
    with np.errstate(invalid="ignore", divide="ignore"):
        t = (half - v_prev) / (v_next - v_prev)
    # Linear in log10 V, written as V_prev * (V_next / V_prev)**t: identical in exact
    # arithmetic, and exactly V_prev when t = 0 (a value equal to h at the previous level).
    out: FloatArray = l_prev * (l_next / l_prev) ** t
    return out


def crossing_visibility(
    levels_m: npt.ArrayLike, values: npt.ArrayLike, clean: float, floor: float
) -> Crossing:
    """Crossing visibility V* of one signal over the sweep (docs/methods.md §4).

    ``levels_m``: visibilities, clearest first, strictly decreasing (250, ..., 1.953125).
    ``values``: the signal at those levels; ``clean``: its value on the clean image; ``floor``:
    the value it tends to when nothing is visible (accuracy: its blank-image value;
    confidence: 1 / number of options; abstain rate: 1.0).

    Half-way level ``h = (clean + floor) / 2``. Walk from the clearest level towards the
    murkiest and take the first level whose value is strictly past h in the direction of
    the floor (``v < h`` for a falling signal, ``v > h`` for a rising one); interpolate
    linearly in log10 V between it and the previous level:
    ``log10 V* = log10 V_{i-1} + (h - s_{i-1}) / (s_i - s_{i-1}) * (log10 V_i - log10 V_{i-1})``.
    Log V because the levels halve V at each step, so a linear interpolation in V would
    favour the clearer level. A later recovery past h again does not undo the crossing.

    Censoring: already past h at the first level → V* = levels[0], censored "above"; never
    past h → V* = levels[-1], censored "below". A value exactly equal to h is not past it.

    ``clean == floor`` raises InputError: the signal has no range to lose half of, so no
    crossing exists (and reporting a censored bound would claim knowledge we do not have).
    :func:`crossing_visibility_batch` returns NaN for such curves instead.
    """
    vals = check_finite(as_float_array(values, "values"), "values")
    s0 = float(clean)
    f = float(floor)
    if not (np.isfinite(s0) and np.isfinite(f)):
        raise InputError(f"clean and floor must be finite, got clean={clean!r}, floor={floor!r}")
    if s0 == f:
        raise InputError(
            f"clean == floor == {s0:.6g}: the signal has no range, so its crossing is undefined"
        )
    batch = crossing_visibility_batch(levels_m, vals, s0, f)
    code = str(batch.censored[()])
    censored: Censoring = "below" if code == "below" else "above" if code == "above" else None
    return Crossing(
        visibility_m=float(batch.visibility_m[()]),
        censored=censored,
        half=float(batch.half[()]),
        floor=f,
        clean=s0,
    )


def _bounds(acc: StrArray, aware: StrArray) -> StrArray:
    """Kind of bound of W from the two censoring codes (see :func:`blind_spot_width`)."""
    lower = (aware == "below") | (acc == "above")
    upper = (aware == "above") | (acc == "below")
    bound = np.where(
        lower & upper, "undetermined", np.where(lower, "lower", np.where(upper, "upper", "exact"))
    )
    undefined = (acc == "undefined") | (aware == "undefined")
    return np.where(undefined, "undetermined", bound).astype(np.str_)


def blind_spot_width_batch(acc: CrossingBatch, aware: CrossingBatch) -> BlindSpotBatch:
    """Vectorised :func:`blind_spot_width` over matching arrays of crossings.

    Undefined crossings give W = NaN with bound "undetermined".
    """
    try:
        value = np.log10(acc.visibility_m) - np.log10(aware.visibility_m)
        bound = _bounds(acc.censored, aware.censored)
    except ValueError as exc:
        raise InputError(f"accuracy and awareness crossings do not broadcast: {exc}") from exc
    return BlindSpotBatch(value=np.asarray(value), bound=bound)


def blind_spot_width(acc_crossing: Crossing, aware_crossing: Crossing) -> BlindSpot:
    """Blind-spot width ``W = log10(V_acc* / V_aware*)`` and whether it is exact or a bound.

    ``acc_crossing``: crossing of accuracy; ``aware_crossing``: crossing of an awareness
    signal (confidence or abstain rate), both from :func:`crossing_visibility` on the same
    levels. W is in decades of visibility and independent of the depth scale.

    Why censoring makes a bound: a crossing censored "below" reports V* = the murkiest level
    while the true crossing is at or below it (true V <= V*); "above" reports the clearest
    level while the true crossing is at or above it (true V >= V*). Since W grows with V_acc
    and falls with V_aware:

    - accuracy "above" (true V_acc >= V_acc*) or awareness "below" (true V_aware <= V_aware*)
      → true W >= value: a **lower** bound;
    - accuracy "below" or awareness "above" → true W <= value: an **upper** bound;
    - one censoring of each kind → nothing follows: **undetermined**
      (e.g. both "below": V* are equal, value 0, the true W may have either sign);
    - neither censored → **exact**.

    All nine combinations (rows: accuracy, columns: awareness)::

                        aware None     aware "below"    aware "above"
        acc None        exact          lower            upper
        acc "below"     upper          undetermined     upper
        acc "above"     lower          lower            undetermined

    (Two censorings of the same kind, e.g. accuracy "above" and awareness "below", add up to
    a bound of that kind; "undetermined" is both crossings censored on the same side, whose
    bounds point opposite ways: docs/methods.md §4.)
    """

    def code(c: Censoring) -> str:
        return "none" if c is None else c

    acc = np.asarray(code(acc_crossing.censored)).astype(np.str_)
    aware = np.asarray(code(aware_crossing.censored)).astype(np.str_)
    bound = _BOUND_NAMES[str(_bounds(acc, aware)[()])]
    value = float(np.log10(acc_crossing.visibility_m) - np.log10(aware_crossing.visibility_m))
    return BlindSpot(value=value, bound=bound)
