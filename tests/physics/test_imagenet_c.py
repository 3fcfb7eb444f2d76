"""Every ImageNet-C corruption against the reference package (``imagecorruptions`` 1.1.2,
shimmed for this NumPy and scikit-image only: ``fixtures.imagenet_c_reference``), no tolerance;
the corruption names and groups of the sweep's field; the shipped frost photographs."""

from __future__ import annotations

import hashlib
from importlib import resources

import numpy as np
import pytest
import skimage.data
from hypothesis import given
from hypothesis import strategies as st

from clearsight.physics import CORRUPTION_GROUPS, CORRUPTIONS, corrupt, corruption_names
from clearsight.physics.imagenet_c import COMMON_CORRUPTIONS, VALIDATION_CORRUPTIONS
from clearsight.physics.imagenet_c_weather import FROST_FILES
from clearsight.validate import InputError
from fixtures.imagenet_c_reference import reference_corrupt

#: Three shapes: tall, wide, and one whose sides are neither a power of two nor even.
IMAGES = (
    skimage.data.astronaut()[:120, :90].copy(),
    skimage.data.coffee()[40:101, 100:300].copy(),
    skimage.data.chelsea()[::3, ::3][:97, :113].copy(),
)
#: Corruptions that draw nothing: the seed cannot change them.
DETERMINISTIC = {
    "defocus_blur",
    "zoom_blur",
    "brightness",
    "contrast",
    "pixelate",
    "jpeg_compression",
    "gaussian_blur",
    "saturate",
}


def test_the_names_are_the_packages_in_its_order() -> None:
    reference_corrupt()  # imports the package with its shims
    from imagecorruptions import get_corruption_names

    assert list(COMMON_CORRUPTIONS) == get_corruption_names("common")
    assert list(VALIDATION_CORRUPTIONS) == get_corruption_names("validation")
    assert list(CORRUPTIONS) == get_corruption_names("all")


@pytest.mark.parametrize("severity", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("name", list(CORRUPTIONS))
def test_corrupt_is_bit_identical_to_the_reference(name: str, severity: int) -> None:
    reference = reference_corrupt()
    for image in IMAGES:
        outputs = []
        for seed in (0, 2024):
            np.random.seed(seed)  # noqa: NPY002 - the reference draws from the global RNG
            expected = reference(image, severity, name)
            got = corrupt(image, name, severity, np.random.RandomState(seed))
            assert got.dtype == np.uint8
            assert got.flags.writeable
            assert got.shape == image.shape
            np.testing.assert_array_equal(got, expected)
            outputs.append(got)
        assert not np.array_equal(outputs[0], image)  # it corrupts
        if name not in DETERMINISTIC:  # and its draws come from the stream given
            assert not np.array_equal(outputs[0], outputs[1])


def test_the_stream_continues_as_the_references() -> None:
    """Two corruptions in a row from one generator: the second sees the state the first left,
    as the reference's second call sees the global state (every draw is taken, none skipped)."""
    reference = reference_corrupt()
    image = IMAGES[1]
    rng = np.random.RandomState(5)
    np.random.seed(5)  # noqa: NPY002
    for name in ("glass_blur", "snow", "frost", "elastic_transform", "impulse_noise", "spatter"):
        np.testing.assert_array_equal(corrupt(image, name, 3, rng), reference(image, 3, name))
    assert rng.randint(1 << 30) == np.random.randint(1 << 30)  # noqa: NPY002


def test_corrupt_refuses_bad_arguments() -> None:
    image = IMAGES[0]
    rng = np.random.RandomState(0)
    with pytest.raises(InputError, match="unknown ImageNet-C corruption 'fogg'"):
        corrupt(image, "fogg", 1, rng)
    with pytest.raises(InputError, match="severity"):
        corrupt(image, "snow", 0, rng)
    with pytest.raises(InputError, match="RandomState"):
        corrupt(image, "snow", 1, np.random.default_rng(0))  # type: ignore[arg-type]
    with pytest.raises(InputError, match="at least 32x32"):
        corrupt(image[:31], "frost", 1, rng)
    with pytest.raises(InputError, match="uint8"):
        corrupt(image.astype(np.float32), "snow", 1, rng)  # type: ignore[arg-type]


def test_groups_expand_in_order_without_repeats() -> None:
    assert corruption_names(["fog"]) == ("fog",)
    assert corruption_names(["all"]) == tuple(CORRUPTIONS)
    assert corruption_names(["snow", "common", "fog"])[:2] == ("snow", "gaussian_noise")
    assert len(corruption_names(["common", "validation", "all"])) == 19
    assert set(CORRUPTION_GROUPS["common"]).isdisjoint(CORRUPTION_GROUPS["validation"])


NAMES = st.sampled_from([*CORRUPTIONS, *CORRUPTION_GROUPS])


@given(st.lists(NAMES, max_size=8))
def test_corruption_names_is_the_ordered_union(names: list[str]) -> None:
    expanded = corruption_names(names)
    expected: list[str] = []
    for name in names:
        for one in CORRUPTION_GROUPS.get(name, (name,)):
            if one not in expected:
                expected.append(one)
    assert list(expanded) == expected


@given(st.lists(NAMES, max_size=4), st.text(max_size=12), st.lists(NAMES, max_size=4))
def test_corruption_names_refuses_any_other_name(
    before: list[str], bad: str, after: list[str]
) -> None:
    if bad in CORRUPTIONS or bad in CORRUPTION_GROUPS:
        return
    with pytest.raises(InputError, match="unknown ImageNet-C corruption"):
        corruption_names([*before, bad, *after])


def test_the_frost_photographs_are_the_packages_bytes() -> None:
    reference_corrupt()
    import imagecorruptions

    package = resources.files(imagecorruptions) / "frost"
    ours = resources.files("clearsight.physics") / "data" / "frost"
    for name in FROST_FILES:
        digest = hashlib.md5((ours / name).read_bytes()).hexdigest()
        assert digest == hashlib.md5((package / name).read_bytes()).hexdigest()
        assert digest in (ours / "README.md").read_text()
