"""Physics pinned to hand-computed values, to the textbook formulas and to the reference code."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import skimage.data

from clearsight.physics import (
    FOG_SEVERITY_PARAMS,
    SWEEP_LEVELS_M,
    blank_like,
    decode_srgb8,
    derangement,
    draw_box,
    encode_srgb8,
    equivalent_visibility,
    fog,
    fog_levels,
    fog_linear,
    imagenet_c_equivalents,
    imagenet_c_fog,
    linear_to_srgb,
    quantize8,
    srgb_to_linear,
    turbid,
    turbid_coefficients,
    turbid_levels,
    underwater,
    underwater_levels,
    water_coefficients,
)
from clearsight.physics.equivalence import FogGainCurve
from clearsight.validate import InputError


def textbook_degrade(image, depth, beta_rgb, veil_rgb):
    """docs/methods.md §1 written out directly in float64: decode, attenuate, encode, quantise."""
    lin = srgb_to_linear(image / 255.0)
    z = np.clip(depth, 0.5, 80.0)[..., None]
    t = np.exp(-np.asarray(beta_rgb) * z)
    return quantize8(linear_to_srgb(veil_rgb * (1 - t) + lin * t))


@pytest.fixture(scope="module")
def scene():
    rng = np.random.default_rng(1)
    image = skimage.data.chelsea()
    depth = rng.uniform(0.2, 90.0, image.shape[:2]).astype(np.float32)
    return image, depth


# --- sRGB codec ---------------------------------------------------------------------------


def test_srgb_check_value_and_round_half_up():
    assert linear_to_srgb(0.18) == pytest.approx(0.4613561, abs=5e-8)
    assert srgb_to_linear(linear_to_srgb(0.18)) == pytest.approx(0.18, abs=1e-12)
    # 0.5/255 rounds half *up* to code 1; truncation would give 0.
    assert quantize8(0.5 / 255)[()] == 1
    assert quantize8(np.array([-0.1, 1.2])).tolist() == [0, 255]


@pytest.mark.exact_floats("the lookup table is built by the very expression it is compared with")
def test_decode_table_is_the_formula_and_round_trips():
    codes = np.arange(256, dtype=np.uint8)
    # exact: the table is built by this very expression (srgb._build_tables: the same float64
    # codes / 255 through the same ufuncs, then rounded to float32), so it is one computation
    np.testing.assert_array_equal(
        decode_srgb8(codes), srgb_to_linear(codes / 255.0).astype(np.float32)
    )
    np.testing.assert_array_equal(encode_srgb8(decode_srgb8(codes)), codes)


def test_encode_equals_float64_formula_everywhere():
    rng = np.random.default_rng(0)
    x = np.concatenate(
        [
            rng.uniform(-0.1, 1.1, 2_000_000).astype(np.float32),
            np.linspace(0, 1, 300_001, dtype=np.float32),
        ]
    )
    # values straddling every code boundary by one float32 ulp
    b = srgb_to_linear((np.arange(1, 256) - 0.5) / 255.0).astype(np.float32)
    x = np.concatenate([x, b, np.nextafter(b, np.float32(0)), np.nextafter(b, np.float32(2))])
    # exact on purpose, although the two paths differ (table lookup vs float64 pow): equality
    # with the float64 formula for every float32 input is the codec's promise (srgb.py), and
    # both sides are integer codes
    np.testing.assert_array_equal(encode_srgb8(x), quantize8(linear_to_srgb(x.astype(np.float64))))


# --- fog ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("visibility", "expected"),
    [
        # t = exp(-3.912 * 5 / V); L = 0.8 (1 - t); code = floor(255 * srgb(L) + 0.5)
        (250.0, 69),  # t = 0.924742, L = 0.060206, 255*srgb(L) + 0.5 = 69.90
        (62.5, 128),  # t = 0.731279, L = 0.214977, 128.26
        (15.625, 199),  # t = 0.285978, L = 0.571218, 199.51
    ],
)
def test_black_pixel_at_5m(visibility, expected):
    black = np.zeros((3, 4, 3), np.uint8)
    out = fog(black, np.full((3, 4), 5.0), visibility)
    assert out.dtype == np.uint8
    assert out.shape == (3, 4, 3)
    assert (out == expected).all()


def test_pure_airlight():
    # t ~ exp(-3.912 * 80 / 0.01) = 0: every pixel is the veil, srgb(0.8) = 0.90633 -> 231
    rng = np.random.default_rng(0)
    image = rng.integers(0, 256, (5, 6, 3), dtype=np.uint8)
    assert (fog(image, np.full((5, 6), 80.0), 0.01) == 231).all()
    assert (fog(image, np.full((5, 6), 80.0), 0.01, airlight=0.0) == 0).all()


def test_sweep_levels_exact():
    assert SWEEP_LEVELS_M == (250.0, 125.0, 62.5, 31.25, 15.625, 7.8125, 3.90625, 1.953125)


def test_fog_levels_match_textbook_and_single_level(scene):
    image, depth = scene
    stack = fog_levels(image, depth)
    assert stack.shape == (8, *image.shape)
    for k, v in enumerate(SWEEP_LEVELS_M):
        ref = textbook_degrade(image, depth, [3.912 / v] * 3, 0.8)
        diff = np.abs(stack[k].astype(int) - ref)
        # float32 arithmetic may land one code away exactly at a rounding boundary, rarely
        assert diff.max() <= 1
        assert (diff > 0).mean() < 1e-4
        single = fog(image, depth, v)
        if k == 0:
            # exact: a stack's first level calls exp afresh, as a single level does; the same
            # compiled loop on the same inputs
            np.testing.assert_array_equal(single, stack[k])
        else:
            # two paths: the stack squares the previous level's transmission k times where a
            # single level calls exp (kernel.py), ~2**k float64 ulps apart before the one
            # rounding to float32. A code can differ only where that rounding splits *and* the
            # encoded value lies within a float32 ulp of a code boundary (expected count << 1
            # here): allow one code at a handful of pixels, never a systematic difference
            split = np.abs(single.astype(int) - stack[k])
            assert split.max() <= 1
            assert (split > 0).mean() < 1e-5


def test_depth_scale_invariance(scene):
    image, _ = scene
    depth = np.random.default_rng(2).uniform(1.0, 20.0, image.shape[:2])
    for v in (62.5, 7.8125):
        # a power-of-two factor keeps every float product exact: identical images
        np.testing.assert_array_equal(fog(image, depth * 4, v * 4), fog(image, depth, v))
        # any factor: identical up to float rounding at a code boundary
        diff = np.abs(fog(image, depth * 3, v * 3).astype(int) - fog(image, depth, v))
        assert diff.max() <= 1
        assert (diff > 0).mean() < 1e-4


def test_fog_monotone_towards_airlight(scene):
    image, depth = scene
    stack = fog_levels(image, depth).astype(int)
    veil = 231
    distance = np.abs(stack - veil).mean(axis=(1, 2, 3))
    assert np.all(np.diff(distance) < 0)


# --- underwater ---------------------------------------------------------------------------


def test_underwater_betas_at_31_25m():
    beta, veil = water_coefficients(31.25)
    # beta_B = 3.912 / 31.25; beta_c = beta_B * a_c / a_B with a = 0.340, 0.0417, 0.00922 1/m
    b = 3.912 / 31.25
    np.testing.assert_allclose(beta, [b * 0.340 / 0.00922, b * 0.0417 / 0.00922, b], rtol=1e-12)
    np.testing.assert_allclose(beta, [4.616330, 0.566179, 0.125184], rtol=1e-6)
    np.testing.assert_allclose(veil, 0.8 * b / beta, rtol=1e-12)
    # the deep-water colour of the absorption-limited veil, sRGB ~ (41, 117, 231)
    assert encode_srgb8(veil.astype(np.float32)).tolist() == [41, 117, 231]
    _, grey = water_coefficients(31.25, veil="grey")
    assert grey.tolist() == [0.8, 0.8, 0.8]


def test_underwater_matches_textbook(scene):
    image, depth = scene
    stack = underwater_levels(image, depth)
    for k, v in enumerate(SWEEP_LEVELS_M):
        beta, veil = water_coefficients(v)
        diff = np.abs(stack[k].astype(int) - textbook_degrade(image, depth, beta, veil))
        assert diff.max() <= 1
        assert (diff > 0).mean() < 1e-4
    grey = underwater(image, depth, 3.90625, veil="grey")
    beta, _ = water_coefficients(3.90625)
    diff = np.abs(grey.astype(int) - textbook_degrade(image, depth, beta, 0.8))
    assert diff.max() <= 1


def test_underwater_red_goes_first():
    # a black target under a grey veil: the channel attenuated most fills with veil first
    out = underwater(np.zeros((2, 2, 3), np.uint8), np.full((2, 2), 1.0), 31.25, veil="grey")
    r, g, b = out[0, 0].tolist()
    assert r > g > b > 0


def test_underwater_wavelengths_and_tables():
    b_pf, _ = water_coefficients(10.0, wavelengths_nm=(600, 550, 450))
    b_sb, _ = water_coefficients(10.0, wavelengths_nm=(600, 550, 450), table="smith_baker_1981")
    # exact between the tables: blue is the least absorbed channel in both, so its ratio is
    # a_min / a_min = 1.0 exactly and beta_B = 3.912 / 10 * 1.0 is one computation in both
    assert b_pf[2] == b_sb[2] == pytest.approx(0.3912)
    assert b_pf[0] != b_sb[0]
    with pytest.raises(InputError, match="outside"):
        water_coefficients(10.0, wavelengths_nm=(900, 550, 450))
    with pytest.raises(InputError, match="table"):
        water_coefficients(10.0, table="jerlov")


# --- turbid water --------------------------------------------------------------------------

COASTAL = ((0.45, 0.12, 0.10), (0.35, 0.40, 0.45))  # illustrative a, b in 1/m (R, G, B)


def test_turbid_coefficients_hand_computed():
    beta, veil = turbid_coefficients(31.25, *COASTAL)
    # c = a + b = (0.80, 0.52, 0.55): green attenuates least and defines V
    b = 3.912 / 31.25
    np.testing.assert_allclose(beta, [b * 0.80 / 0.52, b, b * 0.55 / 0.52], rtol=1e-12)
    # albedo b / c = (0.4375, 0.7692, 0.8182): the veil is brightest (0.8) in blue
    albedo = np.array([0.35 / 0.80, 0.40 / 0.52, 0.45 / 0.55])
    np.testing.assert_allclose(veil, 0.8 * albedo / albedo.max(), rtol=1e-12)
    # a black target at distance V keeps 2 % contrast in the least-attenuated channel
    assert math.exp(-beta.min() * 31.25) == pytest.approx(1 / 50, rel=1e-3)
    # only the ratios matter: the same water ten times denser gives the same image
    denser = tuple(tuple(10 * x for x in v) for v in COASTAL)
    np.testing.assert_allclose(turbid_coefficients(31.25, *denser)[0], beta, rtol=1e-12)


def test_turbid_water_matches_textbook_and_grey_scattering_is_fog(scene):
    image, depth = scene
    stack = turbid_levels(image, depth, *COASTAL)
    for k, v in enumerate(SWEEP_LEVELS_M):
        beta, veil = turbid_coefficients(v, *COASTAL)
        diff = np.abs(stack[k].astype(int) - textbook_degrade(image, depth, beta, veil))
        assert diff.max() <= 1
        assert (diff > 0).mean() < 1e-4
    # water that only scatters, equally in every channel, is Koschmieder fog
    grey = ((0.0, 0.0, 0.0), (0.3, 0.3, 0.3))
    np.testing.assert_array_equal(turbid(image, depth, 15.625, *grey), fog(image, depth, 15.625))


def test_turbid_water_refuses_bad_coefficients():
    with pytest.raises(InputError, match="three non-negative"):
        turbid_coefficients(10.0, (0.1, 0.2), (0.1, 0.1, 0.1))
    with pytest.raises(InputError, match="three non-negative"):
        turbid_coefficients(10.0, (0.1, -0.2, 0.1), (0.1, 0.1, 0.1))
    with pytest.raises(InputError, match="pure-water arm"):
        turbid_coefficients(10.0, (0.1, 0.2, 0.3), (0.0, 0.0, 0.0))
    with pytest.raises(InputError, match="positive attenuation"):
        turbid_coefficients(10.0, (0.0, 0.2, 0.3), (0.0, 0.1, 0.1))


# --- ImageNet-C fog -----------------------------------------------------------------------


def _reference_corrupt():
    setattr(np, "float_", np.float64)  # noqa: B010 - the reference package predates NumPy 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from imagecorruptions import corrupt
    return corrupt


@pytest.mark.parametrize("severity", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("seed", [0, 1234])
def test_imagenet_c_fog_bit_identical(severity, seed):
    corrupt = _reference_corrupt()
    for image in (skimage.data.astronaut()[:300, :451], skimage.data.coffee()):
        np.random.seed(seed)  # noqa: NPY002 - the reference draws from the global RNG
        expected = corrupt(image, severity, "fog")
        got = imagenet_c_fog(image, severity, np.random.RandomState(seed))
        np.testing.assert_array_equal(got, expected)


def test_imagenet_c_fog_rejects_bad_arguments():
    image = np.zeros((40, 40, 3), np.uint8)
    with pytest.raises(InputError, match="severity"):
        imagenet_c_fog(image, 6, np.random.RandomState(0))
    with pytest.raises(InputError, match="RandomState"):
        imagenet_c_fog(image, 1, np.random.default_rng(0))  # type: ignore[arg-type]


# --- equivalent visibility ----------------------------------------------------------------


@pytest.mark.parametrize(("v0", "z"), [(20.0, 10.0), (3.0, 2.5), (150.0, 40.0)])
def test_equivalent_visibility_inverts_fog_on_uniform_depth(v0, z):
    image = skimage.data.chelsea()
    depth = np.full(image.shape[:2], z)
    fogged = np.clip(linear_to_srgb(fog_linear(srgb_to_linear(image / 255.0), depth, v0)), 0, 1)
    assert equivalent_visibility(fogged, image, depth) == pytest.approx(v0, rel=1e-5)
    # after quantisation it stays close
    assert equivalent_visibility(fog(image, depth, v0), image, depth) == pytest.approx(v0, rel=0.02)


def test_equivalent_visibility_bounds():
    image = skimage.data.chelsea()
    depth = np.full(image.shape[:2], 10.0)
    assert equivalent_visibility(image, image, depth) == math.inf
    # no detail left: every fog with V > 0 keeps some, so none is as bad
    assert equivalent_visibility(blank_like(image), image, depth) == 0.0
    # detail anti-correlated with the original: no fog matches it
    assert equivalent_visibility(255 - image, image, depth) == 0.0


def test_imagenet_c_equivalents_report_the_gain_they_match():
    image = skimage.data.chelsea()[::2, ::2].copy()
    depth = np.full(image.shape[:2], 10.0)
    found = imagenet_c_equivalents(image, depth, seed=3, severities=(1, 5))
    curve = FogGainCurve(image, depth)
    for severity, eq in zip((1, 5), found, strict=True):
        fogged = imagenet_c_fog(image, severity, np.random.RandomState(3))
        assert eq.gain == pytest.approx(curve.gain_of(fogged), rel=1e-12)
        assert eq.v_eq_m == pytest.approx(curve.equivalent(eq.gain), rel=1e-12)
        # the fog scales detail by peak / (peak + c0) and adds smooth plasma: gain ~ that ratio
        c0 = FOG_SEVERITY_PARAMS[severity - 1][0]
        peak = image.max() / 255.0
        assert eq.gain == pytest.approx(peak / (peak + c0), abs=0.02)
    assert found[1].gain < found[0].gain
    assert found[1].v_eq_m < found[0].v_eq_m


# --- controls and the box -----------------------------------------------------------------


def test_draw_box_band_outside_target():
    images = np.zeros((2, 40, 50, 3), np.uint8)
    draw_box(images, (10, 12, 30, 25), thickness=3)
    red = (images == [255, 0, 0]).all(axis=-1)
    assert red[0].sum() == red[1].sum() == (26 * 19 - 20 * 13)
    assert not red[:, 12:25, 10:30].any()  # the target's own pixels stay visible
    assert red[:, 9, 7].all()
    assert red[:, 27, 32].all()
    edge = draw_box(np.zeros((20, 20, 3), np.uint8), (0, 0, 20, 20))
    assert not edge.any()  # a box filling the image is clipped away entirely


def test_box_outside_image_is_an_error():
    with pytest.raises(InputError, match="outside"):
        draw_box(np.zeros((20, 20, 3), np.uint8), (5, 5, 25, 10))


def test_derangement():
    for seed in range(20):
        p = derangement(7, seed)
        assert sorted(p.tolist()) == list(range(7))
        assert (p != np.arange(7)).all()
    np.testing.assert_array_equal(derangement(9, 3), derangement(9, 3))
    assert any((derangement(9, 3) != derangement(9, s)).any() for s in range(4, 8))
    with pytest.raises(InputError):
        derangement(1, 0)


def test_blank_is_mid_grey():
    blank = blank_like(np.zeros((4, 5, 3), np.uint8))
    assert blank.shape == (4, 5, 3)
    assert (blank == 128).all()


# --- bad input ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("image", "depth", "visibility", "message"),
    [
        (np.zeros((4, 4, 3), np.float32), np.ones((4, 4)), 10.0, "uint8"),
        (np.zeros((4, 4), np.uint8), np.ones((4, 4)), 10.0, "HxWx3"),
        (np.zeros((4, 4, 4), np.uint8), np.ones((4, 4)), 10.0, "HxWx3"),
        (np.zeros((4, 4, 3), np.uint8), np.ones((4, 5)), 10.0, "does not match"),
        (np.zeros((4, 4, 3), np.uint8), np.full((4, 4), np.nan), 10.0, "NaN"),
        (np.zeros((4, 4, 3), np.uint8), -np.ones((4, 4)), 10.0, "negative"),
        (np.zeros((4, 4, 3), np.uint8), np.ones((4, 4), np.int64), 10.0, "float"),
        (np.zeros((4, 4, 3), np.uint8), np.ones((4, 4)), 0.0, "> 0"),
        (np.zeros((4, 4, 3), np.uint8), np.ones((4, 4)), -5.0, "> 0"),
        (np.zeros((4, 4, 3), np.uint8), np.ones((4, 4)), float("nan"), "> 0"),
    ],
)
def test_bad_input_names_the_problem(image, depth, visibility, message):
    with pytest.raises(InputError, match=message):
        fog(image, depth, visibility)
    with pytest.raises(InputError, match=message):
        underwater(image, depth, visibility)
