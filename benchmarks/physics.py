"""Physics benchmark: all eight fog levels of a 640x480 scene, and ImageNet-C fog.

Prints ``name: value`` lines, each a ratio measured in this process (absolute times on shared
machines are not stable):

* ``fog_levels_vectorized_speedup`` — a straightforward per-level loop (decode with the sRGB
  formula, attenuate, encode with the formula, quantise; numpy float32) over ``fog_levels``.
* ``fog_levels_vs_per_level_calls`` — calling ``fog`` once per level over ``fog_levels``
  (what computing all levels from one decode in one pass buys on its own).
* ``fog_levels_vs_copy_floor`` — ``fog_levels`` over copying a float32 array of the eight
  linear-light images it produces (the least any float pipeline must touch).
* ``turbid_levels_vs_copy_floor`` — the same for the eight turbid-water levels (absorption
  and scattering per channel; goal <= 6, as fog). The two arms and the copy run in turn within
  each repeat, so their ratios see the same machine state.
* ``imagenet_c_<name>_ms_per_image`` and ``imagenet_c_<name>_vs_reference`` for each of the
  19 ImageNet-C corruptions: ``corrupt(image, name, s, rng)``'s mean time per image (``rng``
  reseeded with ``s``) over severities 1-5 and the sweep's two ends of image size (480x640
  and 300x230, as the bundled scenes run), and the reference (``imagecorruptions.corrupt`` after
  ``np.random.seed(s)``, identical outputs) over it; the two run in turn within every repeat.
  Goal: none below 1, the three slowest references at least 5x.
* ``guard_ms_per_image`` — the visibility guard's estimate of one 640x480 fogged image with its
  depth map (dark channel, airlight, V_hat), in milliseconds: the one absolute time here, what
  the guard adds to each shown image of a sweep.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt
import skimage.data
import skimage.transform

from _timing import best_time, best_times, report
from clearsight.guard.estimate import estimate_visibility
from clearsight.physics import SWEEP_LEVELS_M, corrupt, fog, fog_levels, turbid_levels
from clearsight.physics.imagenet_c import CORRUPTIONS
from fixtures.imagenet_c_reference import reference_corrupt

#: An illustrative coastal water (1/m at 650 / 525 / 450 nm): what the turbid arm's cost
#: depends on is the image size and the level count, not the coefficients.
TURBID_WATER = ((0.45, 0.12, 0.10), (0.35, 0.40, 0.45))


def _per_level_loop(
    image: npt.NDArray[np.uint8], depth: npt.NDArray[np.float32]
) -> list[npt.NDArray[np.uint8]]:
    out = []
    for v in SWEEP_LEVELS_M:
        c = image.astype(np.float32) / np.float32(255)
        lin = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
        t = np.exp(np.float32(-3.912 / v) * np.clip(depth, 0.5, 80.0))[..., None]
        foggy = lin * t + np.float32(0.8) * (1 - t)
        enc = np.where(foggy <= 0.0031308, 12.92 * foggy, 1.055 * foggy ** (1 / 2.4) - 0.055)
        out.append(np.floor(255 * np.clip(enc, 0, 1) + 0.5).astype(np.uint8))
    return out


def main() -> None:
    photo = skimage.data.astronaut()  # type: ignore[no-untyped-call]
    resized = skimage.transform.resize(photo, (480, 640))  # type: ignore[no-untyped-call]
    image = (resized * 255).astype(np.uint8)
    rng = np.random.default_rng(0)
    depth = rng.uniform(0.5, 80.0, (480, 640)).astype(np.float32)

    floats = np.empty((len(SWEEP_LEVELS_M), 480, 640, 3), np.float32)
    floats[...] = 0.5
    # the arms and the copy floor in turn within every repeat: their ratios share machine state
    t = best_times(
        {
            "fog": lambda: fog_levels(image, depth),
            "turbid": lambda: turbid_levels(image, depth, *TURBID_WATER),
            "copy": floats.copy,
        },
        repeats=15,
        warmup=2,
    )
    t_loop = best_time(lambda: _per_level_loop(image, depth), repeats=3)
    t_calls = best_time(lambda: [fog(image, depth, v) for v in SWEEP_LEVELS_M])
    report("fog_levels_vectorized_speedup", t_loop / t["fog"])
    report("fog_levels_vs_per_level_calls", t_calls / t["fog"])
    report("fog_levels_vs_copy_floor", t["fog"] / t["copy"])
    report("turbid_levels_vs_copy_floor", t["turbid"] / t["copy"])
    foggy = fog(image, depth, 31.25)
    report("guard_ms_per_image", 1000 * best_time(lambda: estimate_visibility(foggy, depth)))

    _imagenet_c(image)


def _imagenet_c(image: npt.NDArray[np.uint8]) -> None:
    """Each ImageNet-C corruption against the reference, severities 1-5, two image sizes."""
    small = (skimage.transform.resize(image, (300, 230)) * 255).astype(np.uint8)  # type: ignore[no-untyped-call]
    reference = reference_corrupt()

    def sweep(run: Callable[[npt.NDArray[np.uint8], int], object]) -> Callable[[], None]:
        def go() -> None:
            for picture in (image, small):
                for s in range(1, 6):
                    run(picture, s)

        return go

    # one generator reseeded per call, as the reference reseeds the global one: building a
    # RandomState costs about 0.25 ms, more than JPEG-compressing a small image
    rng = np.random.RandomState()
    for name in CORRUPTIONS:

        def ours(picture: npt.NDArray[np.uint8], s: int, name: str = name) -> object:
            rng.seed(s)
            return corrupt(picture, name, s, rng)

        def original(picture: npt.NDArray[np.uint8], s: int, name: str = name) -> object:
            np.random.seed(s)  # noqa: NPY002 - the reference draws from the global RNG
            return reference(picture, s, name)

        slow = name == "glass_blur"  # the reference takes seconds per image
        t = best_times(
            {"ours": sweep(ours), "reference": sweep(original)},
            repeats=1 if slow else 7,  # the fast ones need the repeats on a shared machine
            warmup=0 if slow else 1,
        )
        if slow:  # compile the loops outside the timed call
            t["ours"] = best_time(sweep(ours), repeats=3)
        report(f"imagenet_c_{name}_ms_per_image", 1000 * t["ours"] / 10, digits=2)
        report(f"imagenet_c_{name}_vs_reference", t["reference"] / t["ours"], digits=2)


if __name__ == "__main__":
    main()
