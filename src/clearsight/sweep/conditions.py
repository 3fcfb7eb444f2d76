"""The image a model sees under each condition of the sweep, made from a scene on demand.

Pixels are never stored: a worker renders them from (scene, condition) whenever it needs them,
all levels of one arm from one decode, and the caller draws the target's red box last so it is
never degraded. The preview and the sweep render through these same functions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal

import numpy as np
import numpy.typing as npt

from clearsight.physics import (
    DEFAULT_AIRLIGHT,
    DEFAULT_WAVELENGTHS_NM,
    SWEEP_LEVELS_M,
    corruption_names,
    fog_levels,
    turbid_levels,
    underwater_levels,
)
from clearsight.physics.imagenet_c import imagenet_c_image
from clearsight.scenes.model import Scene
from clearsight.seeding import derive_seed
from clearsight.validate import InputError

Arm = Literal["fog", "water", "turbid"]
ARMS: Final[tuple[Arm, ...]] = ("fog", "water", "turbid")
IMAGENET_C_SEVERITIES: Final[tuple[int, ...]] = (1, 2, 3, 4, 5)


def target_box(scene: Scene, target: int) -> tuple[int, int, int, int]:
    """The box of target ``target`` of ``scene`` (InputError for an index it does not have)."""
    if not 0 <= target < len(scene.targets):
        raise InputError(
            f"scene {scene.id!r} has {len(scene.targets)} target(s); target index {target} "
            "does not exist"
        )
    return scene.targets[target].box.as_tuple()


def arm_stack(
    scene: Scene, arm: Arm, levels: Sequence[float] = SWEEP_LEVELS_M, **physics: Any
) -> npt.NDArray[np.uint8]:
    """All levels of a physical arm, (L, H, W, 3), without a box.

    ``physics`` takes ``airlight`` (fog), ``wavelengths_nm``, ``table``, ``veil`` (water) or
    ``absorption_per_m``, ``scattering_per_m``, ``airlight`` (turbid).
    """
    if arm == "fog":
        return fog_levels(scene.image, scene.depth_m, levels, **physics)
    if arm == "water":
        return underwater_levels(scene.image, scene.depth_m, levels, **physics)
    if arm == "turbid":
        return turbid_levels(scene.image, scene.depth_m, visibilities_m=levels, **physics)
    raise InputError(f"unknown arm {arm!r}; known: {ARMS}")


def arm_physics(settings: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Each arm's :func:`arm_stack` keyword arguments from a sweep's physics settings, named as
    the config's fields (``airlight``, ``wavelengths_nm``, ``water_table``, ``veil``,
    ``turbid_absorption_per_m``, ``turbid_scattering_per_m``; a missing one takes its default;
    the turbid arm only where its coefficients are given)."""
    out: dict[str, dict[str, Any]] = {
        "fog": {"airlight": settings.get("airlight", DEFAULT_AIRLIGHT)},
        "water": {
            "wavelengths_nm": tuple(settings.get("wavelengths_nm", DEFAULT_WAVELENGTHS_NM)),
            "table": settings.get("water_table", "pope_fry_1997"),
            "veil": settings.get("veil", "absorption_limited"),
        },
    }
    absorption = settings.get("turbid_absorption_per_m")
    scattering = settings.get("turbid_scattering_per_m")
    if absorption is not None and scattering is not None:
        out["turbid"] = {
            "absorption_per_m": tuple(absorption),
            "scattering_per_m": tuple(scattering),
            "airlight": settings.get("airlight", DEFAULT_AIRLIGHT),
        }
    return out


#: ImageNet-C plasma draws: ``independent``, one per scene and severity (the benchmark drew
#: every image and severity on its own); ``common``, one per scene shared by its severities.
PlasmaDraw = Literal["independent", "common"]


def imagenet_c_seed(
    scene_id: str, seed: int, severity: int | None = None, corruption: str = "fog"
) -> int:
    """The seed of a scene's ImageNet-C ``corruption`` at ``severity`` (fog's plasma, the
    other corruptions' draws), from the run seed: the item's own (corruption, scene, severity,
    seed), or with ``severity`` None the one seed every severity of the scene shares (the
    ``common`` draw)."""
    tag = f"imagenet_c_{corruption}"
    if severity is None:
        return derive_seed(tag, scene_id, seed)
    return derive_seed(tag, scene_id, int(severity), seed)


def corruption_field(corruption: str) -> str | None:
    """The ``corruption`` field of an ImageNet-C item (None: fog, left out of the key as in the
    runs made before the other corruptions)."""
    return None if corruption == "fog" else corruption


def plasma_field(plasma: PlasmaDraw) -> str | None:
    """The ``plasma`` field of an ImageNet-C item drawn by ``plasma`` (None: the common draw,
    left out of the key as in the runs made before the choice)."""
    return "independent" if plasma == "independent" else None


def imagenet_c_stack(
    scene: Scene,
    severities: Sequence[int] = IMAGENET_C_SEVERITIES,
    seed: int = 0,
    plasma: PlasmaDraw = "independent",
    corruption: str = "fog",
) -> npt.NDArray[np.uint8]:
    """ImageNet-C ``corruption`` (fog unless named) at each severity, (S, H, W, 3), without a
    box; each severity's randomness drawn from ``RandomState(imagenet_c_seed(...))``, its own
    or the scene's (``plasma``)."""
    own = plasma == "independent"
    return np.stack(
        [
            imagenet_c_image(
                scene.image,
                corruption,
                sev,
                np.random.RandomState(
                    imagenet_c_seed(scene.id, seed, sev if own else None, corruption)
                ),
            )
            for sev in severities
        ]
    )


def check_water_table(wavelengths_nm: Sequence[float], table: str) -> None:
    """InputError where the pure-water absorption ``table`` does not cover every channel
    wavelength of the water arm (a table is never extrapolated)."""
    from clearsight.physics import absorption

    absorption(wavelengths_nm, table)


def check_turbid_water(
    arms: Sequence[str],
    absorption_per_m: Sequence[float] | None,
    scattering_per_m: Sequence[float] | None,
) -> None:
    """InputError where the turbid arm lacks the water's coefficients, where they are given
    without the arm (they would mean nothing), or where they describe no water."""
    given = (absorption_per_m, scattering_per_m)
    if "turbid" not in arms:
        if any(v is not None for v in given):
            raise InputError(
                "turbid_absorption_per_m / turbid_scattering_per_m need 'turbid' in arms"
            )
        return
    if absorption_per_m is None or scattering_per_m is None:
        raise InputError(
            "the turbid arm needs the water's turbid_absorption_per_m and "
            "turbid_scattering_per_m (1/m at the R, G, B wavelengths, e.g. a Jerlov water type)"
        )
    from clearsight.physics import turbid_coefficients

    turbid_coefficients(1.0, absorption_per_m, scattering_per_m)


def corruptions_field(value: Any) -> tuple[str, ...]:
    """:func:`imagenet_c_corruptions` as a pydantic field validator reads it (a ValueError, which
    pydantic reports with the field's name): a sweep's ``imagenet_c_corruptions`` and
    ``clearsight equivalence --corruptions``."""
    try:
        return imagenet_c_corruptions(value)
    except InputError as exc:
        raise ValueError(str(exc)) from None


def imagenet_c_corruptions(value: Any) -> tuple[str, ...]:
    """The ImageNet-C corruptions a config names (one name, or a list of names and groups:
    :func:`clearsight.physics.corruption_names`); InputError for anything else or none."""
    names = (value,) if isinstance(value, str) else value
    if not isinstance(names, list | tuple) or not all(isinstance(n, str) for n in names):
        raise InputError("must be a list of ImageNet-C corruption names")
    expanded = corruption_names(names)
    if not expanded:
        raise InputError("must name at least one ImageNet-C corruption")
    return expanded
