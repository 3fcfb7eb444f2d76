"""The guard's visibility estimate: Koschmieder fog of known V at one depth is read back.

Tolerance (stated in docs/guard.md): on uniform-depth fog whose transmission lies in
[0.05, 0.9], V_hat is within 0.05 decades (a factor 1.12) of the true V — with the airlight
estimated from the 512 x 512 astronaut photo at the sweep's veil 0.8 (measured worst error
+0.022 decades over z in {5, 20} m and those t: V_hat slightly high, since the photo's own
dark channel is not quite zero), and with the airlight given for any veil in [0.5, 1] on a
128 x 128 copy (hypothesis, 50 examples).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import skimage.data
from hypothesis import given, settings
from hypothesis import strategies as st

from clearsight.guard.estimate import (
    USABLE_T,
    dark_channel_transmission,
    estimate_visibility,
    visibility_from_transmission,
)
from clearsight.physics import VISIBILITY_CONSTANT, fog, underwater
from clearsight.validate import InputError

PHOTO = skimage.data.astronaut()
SMALL = PHOTO[::4, ::4].copy()  # 128 x 128: the property test's photo, 16x faster
TOLERANCE_DECADES = 0.05


def _flat(image: np.ndarray, z: float) -> np.ndarray:
    return np.full(image.shape[:2], z, np.float32)


@pytest.mark.parametrize("z", [5.0, 20.0])
def test_uniform_fog_recovers_visibility(z):
    depth = _flat(PHOTO, z)
    for t in (0.05, 0.15, 0.4, 0.7, 0.9):
        v = -VISIBILITY_CONSTANT * z / math.log(t)
        est = estimate_visibility(fog(PHOTO, depth, v), depth)
        assert est.visibility_m is not None
        assert abs(math.log10(est.visibility_m / v)) <= TOLERANCE_DECADES, (z, v, est)
        assert est.usable_share is not None
        assert est.usable_share > 0.9
        # the depth-free statistic is the transmission itself at one depth
        assert est.transmission == pytest.approx(t, abs=0.06)


@settings(max_examples=50, deadline=None)
@given(
    z=st.floats(1.0, 60.0),
    t=st.floats(0.05, 0.9),
    airlight=st.floats(0.5, 1.0),
)
def test_uniform_fog_recovers_visibility_any_depth_with_known_airlight(z, t, airlight):
    depth = _flat(SMALL, z)
    v = -VISIBILITY_CONSTANT * z / math.log(t)
    est = estimate_visibility(fog(SMALL, depth, v, airlight), depth, known_airlight=airlight)
    assert est.visibility_m is not None
    assert abs(math.log10(est.visibility_m / v)) <= TOLERANCE_DECADES


def test_estimated_airlight_is_the_veil_in_dense_fog():
    depth = _flat(PHOTO, 10.0)
    for a in (0.6, 0.8, 0.95):
        est = estimate_visibility(fog(PHOTO, depth, 3.0, a), depth)
        assert np.asarray(est.airlight) == pytest.approx(a, abs=0.02)


def test_estimate_rises_with_visibility_and_is_low_under_water():
    depth = _flat(PHOTO, 10.0)
    levels = (15.0, 30.0, 60.0, 120.0)
    fogged = [estimate_visibility(fog(PHOTO, depth, v), depth).visibility_m for v in levels]
    assert all(a < b for a, b in itertools.pairwise(fogged))
    # the documented failure: under water the dark channel follows the red channel, which
    # the least-attenuated (blue) channel's V does not, so V_hat is biased low
    watered = [estimate_visibility(underwater(PHOTO, depth, v), depth).visibility_m for v in levels]
    assert all(w < f for w, f in zip(watered, fogged, strict=True))


def test_without_depth_only_the_transmission():
    est = estimate_visibility(fog(PHOTO, _flat(PHOTO, 10.0), 20.0))
    assert est.visibility_m is None
    assert est.usable_share is None
    assert est.transmission == pytest.approx(math.exp(-VISIBILITY_CONSTANT * 10 / 20), abs=0.05)


def test_usable_pixels_and_the_ends_of_the_range():
    z = np.full((4, 4), 10.0)
    clear = np.full((4, 4), 0.99)  # above the usable range: clearer than measurable
    assert visibility_from_transmission(clear, z) == (math.inf, 0.0)
    veiled = np.full((4, 4), 0.01)  # all veil
    assert visibility_from_transmission(veiled, z) == (0.0, 0.0)
    t = np.full((4, 4), 0.5)
    t[0, 0] = 0.01  # a fully veiled pixel would drag V_hat down; it is not used
    z_sky = z.copy()
    z_sky[1, 1] = 80.0  # sky at the far clip bound is not used either
    v, share = visibility_from_transmission(t, z_sky)
    assert v == pytest.approx(-VISIBILITY_CONSTANT * 10 / math.log(0.5))
    assert share == pytest.approx(14 / 16)
    assert USABLE_T[0] < 0.5 < USABLE_T[1]


def test_bad_input():
    with pytest.raises(InputError, match="patch_px"):
        dark_channel_transmission(PHOTO, patch_px=0)
    with pytest.raises(InputError, match="omega"):
        dark_channel_transmission(PHOTO, omega=0.0)
    with pytest.raises(InputError, match="known_airlight"):
        dark_channel_transmission(PHOTO, known_airlight=1.5)
    with pytest.raises(InputError, match="depth_m shape"):
        estimate_visibility(PHOTO, np.ones((3, 3), np.float32))
