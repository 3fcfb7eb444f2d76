"""The guard's threshold, fitted on a calibration split of a finished sweep and kept in a file.

``clearsight guard calibrate RUN --model M`` splits the scenes M answered in RUN into a
calibration and a held-out share by a seeded permutation (:func:`split_scenes`: the same
scenes and seed give the same split, whatever the order they are stored in), and on the
calibration scenes alone takes M's accuracy crossing V* (the sweep's own crossing, from the
scene bootstrap of its analysis, :func:`clearsight.sweep.numbers.crossings.scene_bootstrap`,
docs/methods.md §4) in every arm, task and letter or verbal wording the run has. The guard
must abstain wherever M can no longer answer, and it cannot tell the arm from the image, so the
threshold comes from the **largest** of those crossings: below it M's accuracy has gone in at
least one arm.

On which scale (``scale``): ``"estimate"`` (the default) puts the threshold on the guard's own
scale — each calibration scene is rendered in each arm at that arm's V* (the run's physics,
:func:`~clearsight.sweep.conditions.arm_stack`), the guard's estimate is taken on it, and the
threshold is the largest over arms of the median V_hat (and the depth-free one likewise of the
median transmission). This carries the estimator's biases into the threshold — V_hat reads low
under water and saturates on clear images, whose own dark channel is not zero — so the guard
abstains where its reading says M's crossing is, not where the true V is. ``"true"`` uses V*
itself and ``t* = exp(-3.912 z / V*)`` at the calibration scenes' median depth ``z``; it needs
no scene pixels (so it also serves COCO runs, whose depth model the calibration does not load).

The file (:class:`GuardCalibration`, JSON, ``format_version`` :data:`FORMAT_VERSION`) records
the model, thresholds, estimator, split seed and share, both scene lists, every crossing it
was chosen from and the run's name and config hash; the held-out scene ids are what the
evaluation sweep runs on (``--scene-ids``, docs/guard.md).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal, cast

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from clearsight.guard.estimate import estimate_visibility
from clearsight.physics import VISIBILITY_CONSTANT
from clearsight.seeding import rng_for
from clearsight.validate import InputError, invalid_options

if TYPE_CHECKING:
    from clearsight.sweep.conditions import Arm
    from clearsight.sweep.results import RunData

#: Version of the calibration file's format; a file of another version is refused.
FORMAT_VERSION: Final = 1
#: The bootstrap resamples behind the recorded V* intervals (the threshold is the point value).
N_BOOT: Final = 200


class Crossing(BaseModel):
    """One accuracy crossing of the model on the calibration scenes."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    task: str
    arm: str
    wording: str
    v_star_m: float
    censored: str
    v_low_m: float
    v_high_m: float


class GuardCalibration(BaseModel):
    """The guard's calibration file (module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format_version: Literal[1] = FORMAT_VERSION
    model: str
    estimator: Literal["dark_channel"] = "dark_channel"
    threshold_m: float = Field(gt=0)
    threshold_t: float | None = Field(None, gt=0, lt=1)
    median_depth_m: float | None = None
    scale: Literal["estimate", "true"] = "estimate"
    rule: str = "max over arms, tasks and wordings of the accuracy crossing V*"
    crossings: tuple[Crossing, ...]
    split_seed: int
    calibration_share: float
    calibration_scenes: tuple[str, ...]
    held_out_scenes: tuple[str, ...]
    run: str
    run_config_hash: str

    def write(self, path: Path) -> Path:
        """Write the file as indented JSON; returns ``path``."""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.model_dump(mode="json"), indent=2) + "\n")
        return path


def load_calibration(path: str | Path) -> GuardCalibration:
    """Read a calibration file; InputError for a missing, unreadable or other-version file."""
    p = Path(path)
    try:
        data = json.loads(p.read_text())
    except FileNotFoundError:
        raise InputError(f"guard calibration file {p} does not exist") from None
    except (OSError, ValueError) as exc:
        raise InputError(f"guard calibration file {p} is not readable JSON: {exc}") from None
    version = data.get("format_version") if isinstance(data, dict) else None
    if version != FORMAT_VERSION:
        raise InputError(
            f"guard calibration file {p} has format_version {version!r}; this clearsight "
            f"reads {FORMAT_VERSION} (rerun `clearsight guard calibrate`)"
        )
    try:
        return GuardCalibration(**data)
    except ValidationError as exc:
        raise invalid_options(exc, "guard calibration file", p) from exc


def split_scenes(
    scenes: Sequence[str], seed: int, share: float = 0.5
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(calibration, held_out)``: the distinct ``scenes`` sorted, permuted by a generator
    seeded from the seed and the sorted ids, the first ``round(share * n)`` (at least one,
    leaving at least one) to calibration; each part sorted."""
    ids = sorted(set(scenes))
    if len(ids) < 2:
        raise InputError(f"splitting needs at least two scenes, got {len(ids)}")
    if not 0.0 < share < 1.0:
        raise InputError(f"calibration share must be in (0, 1), got {share}")
    order = rng_for("guard-split", seed, ids).permutation(len(ids))
    n_cal = min(max(round(share * len(ids)), 1), len(ids) - 1)
    cal = sorted(ids[i] for i in order[:n_cal])
    held = sorted(ids[i] for i in order[n_cal:])
    return tuple(cal), tuple(held)


def _on_estimate_scale(
    data: RunData, scenes: Sequence[str], crossings: Sequence[Crossing]
) -> tuple[float, float]:
    """``(threshold_m, threshold_t)`` on the guard's scale: per arm, the median V_hat and
    median transmission of the calibration scenes rendered at the arm's largest V*; the
    largest of each over arms (module docstring)."""
    from clearsight.scenes.bundled import load_bundled_scene
    from clearsight.sweep.conditions import arm_physics, arm_stack

    sources = set(data.records.loc[data.records["scene"].isin(scenes), "scene.source"])
    if sources != {"bundled"}:
        raise InputError("scale 'estimate' renders bundled scenes only; use scale 'true'")
    physics = arm_physics(data.manifest.get("config", {}))
    v_star = {c.arm: max(x.v_star_m for x in crossings if x.arm == c.arm) for c in crossings}
    loaded = [load_bundled_scene(s) for s in scenes]
    per_arm_m, per_arm_t = [], []
    for arm, v in v_star.items():
        found = [
            estimate_visibility(
                arm_stack(scene, cast("Arm", arm), [v], **physics[arm])[0], scene.depth_m
            )
            for scene in loaded
        ]
        v_hat = [math.nan if e.visibility_m is None else e.visibility_m for e in found]
        per_arm_m.append(float(np.median(v_hat)))
        per_arm_t.append(float(np.median([e.transmission for e in found])))
    return max(per_arm_m), max(per_arm_t)


def _accuracy_crossings(
    sub: RunData, model: str, split_seed: int, n_scenes: int
) -> tuple[Crossing, ...]:
    """The accuracy crossings of ``model`` on the ``n_scenes`` calibration scenes ``sub`` (the
    scene bootstrap's, those with a defined, finite visibility); InputError when there is none,
    since the guard then has nothing to put its threshold at."""
    from clearsight.sweep.numbers.crossings import scene_bootstrap

    rows = scene_bootstrap(sub, n_boot=N_BOOT, seed=split_seed).crossings
    rows = rows[(rows["model"] == model) & (rows["signal"] == "accuracy")]
    crossings = tuple(
        Crossing(**{name: r[name] for name in Crossing.model_fields})
        for r in rows.to_dict("records")
        if r["censored"] != "undefined" and math.isfinite(float(r["v_star_m"]))
    )
    if not crossings:
        raise InputError(
            f"model {model!r} has no accuracy crossing on the {n_scenes} calibration scenes "
            "(its accuracy never falls, or the run has no fog/water levels)"
        )
    return crossings


def calibrate(
    run_dir: Path,
    model: str,
    split_seed: int = 0,
    share: float = 0.5,
    scale: Literal["estimate", "true"] = "estimate",
) -> GuardCalibration:
    """Fit the guard's thresholds for ``model`` on a calibration split of the sweep in
    ``run_dir`` on the ``scale`` of the module docstring; InputError when the run has no
    records of ``model`` or no accuracy crossing on the calibration scenes."""
    from clearsight.sweep.results import load_run_data

    data = load_run_data(run_dir)
    records = data.records[data.records["model"] == model]
    if records.empty:
        known = ", ".join(data.models) or "none"
        raise InputError(f"the run {run_dir} has no records of model {model!r} (models: {known})")
    cal, held = split_scenes(records["scene"].dropna().astype(str).tolist(), split_seed, share)
    sub = dataclasses.replace(
        data,
        records=records[records["scene"].isin(cal)].reset_index(drop=True),
        depth=data.depth[data.depth["scene"].isin(cal)].reset_index(drop=True),
    )
    crossings = _accuracy_crossings(sub, model, split_seed, len(cal))
    depth = float(np.median(sub.depth["median_m"])) if not sub.depth.empty else None
    t_star: float | None
    if scale == "estimate":
        threshold, t_star = _on_estimate_scale(data, cal, crossings)
    else:
        threshold = max(c.v_star_m for c in crossings)
        t_star = None if depth is None else math.exp(-VISIBILITY_CONSTANT * depth / threshold)
    return GuardCalibration(
        model=model,
        threshold_m=threshold,
        threshold_t=t_star,
        median_depth_m=depth,
        scale=scale,
        crossings=crossings,
        split_seed=split_seed,
        calibration_share=share,
        calibration_scenes=cal,
        held_out_scenes=held,
        run=data.name,
        run_config_hash=str(data.manifest.get("config_hash", "")),
    )
