"""The sweep's fixed settings (the paper's Table III, "the fixed settings of the main run"),
rendered from the run's own configuration as its manifest stores it: the scenes, the depth, the
arms and their levels, the image formation's constants, the controls, tasks and wordings, the
box, generation, the seed, the W pairing and the bootstrap. The paper's own table lists its
run's values; a run's table lists that run's, whatever they are. Rendering only: every value is
the run's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import pandas as pd

from clearsight.sweep.numbers.crossings import SceneBootstrap
from clearsight.sweep.results import level_label

__all__ = ["SETTINGS", "settings_frame"]

#: Table III's rows in order: (what the row says, the configuration field it reads).
SETTINGS: Final = (
    ("scene source", "scenes"),
    ("COCO images drawn", "coco_n"),
    ("depth of COCO scenes", "coco_depth_model"),
    ("every annotated target asked", "all_targets"),
    ("arms", "arms"),
    ("visibility levels (m)", "levels_m"),
    ("airlight", "airlight"),
    ("channel wavelengths (nm)", "wavelengths_nm"),
    ("pure-water absorption table", "water_table"),
    ("veil", "veil"),
    ("controls", "controls"),
    ("ImageNet-C severities", "imagenet_c_severities"),
    ("ImageNet-C corruptions", "imagenet_c_corruptions"),
    ("ImageNet-C plasma", "imagenet_c_plasma"),
    ("tasks", "tasks"),
    ("wordings", "wordings"),
    ("distractors", "distractors"),
    ("models", "models"),
    ("box thickness (px)", "box_thickness_px"),
    ("max new tokens", "max_new_tokens"),
    ("seed", "seed"),
    ("W pairing (w_accuracy)", "w_accuracy"),
)

#: Fields that mean something only in a run of COCO scenes, or one with the ImageNet-C control.
_COCO_ONLY: Final = frozenset({"coco_n", "coco_depth_model"})
_IMAGENET_C_ONLY: Final = frozenset(
    {"imagenet_c_severities", "imagenet_c_corruptions", "imagenet_c_plasma"}
)


def settings_frame(config: Mapping[str, object], boot: SceneBootstrap) -> pd.DataFrame:
    """Table III of a run: one row (``setting``, ``value``) per field of :data:`SETTINGS` the
    run's ``config`` holds and uses (COCO's fields in a COCO run, ImageNet-C's with its
    control), then the scenes and the bootstrap ``boot`` its numbers were computed with."""
    coco = config.get("scenes") == "coco"
    controls = config.get("controls")
    imagenet = isinstance(controls, list | tuple) and "imagenet_c" in controls
    rows = [
        (label, _value(key, config[key]))
        for label, key in SETTINGS
        if key in config
        and (coco or key not in _COCO_ONLY)
        and (imagenet or key not in _IMAGENET_C_ONLY)
    ]
    rows += [
        ("scenes", f"{boot.n_scenes} from {boot.n_clusters} source photos"),
        (
            "bootstrap",
            f"B = {boot.n_boot} resamples of the source photos, seed {boot.seed}, "
            f"{round(100 * boot.level)} % percentile intervals",
        ),
    ]
    return pd.DataFrame(rows, columns=["setting", "value"])


def _value(key: str, value: object) -> str:
    """A configuration value as the table shows it: levels by their labels, lists joined,
    None as '–'."""
    if value is None:
        return "–"
    if isinstance(value, list | tuple):
        shown = (level_label(v) if key == "levels_m" else _value(key, v) for v in value)
        return ", ".join(shown) or "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)
