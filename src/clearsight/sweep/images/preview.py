"""The first picture a user looks at: one scene clean, under every sweep level, and its depth."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from clearsight.pages.plots import pyplot
from clearsight.physics import SWEEP_LEVELS_M, draw_box
from clearsight.scenes.model import Scene
from clearsight.sweep.conditions import (
    IMAGENET_C_SEVERITIES,
    Arm,
    arm_stack,
    imagenet_c_stack,
    target_box,
)


def level_label(visibility_m: float) -> str:
    """Display label of a visibility: 250 m, 62.5 m, 15.6 m, 1.95 m (labels only, never data)."""
    return f"{visibility_m:.3g} m"


#: One row of a contact sheet: (title, image) per panel.
_Row = list[tuple[str, npt.NDArray[np.uint8]]]


def _sheet_rows(
    scene: Scene,
    box: tuple[int, int, int, int],
    seed: int,
    turbid: tuple[Sequence[float], Sequence[float]] | None,
) -> list[_Row]:
    """The sheet's image rows, the target's box drawn: each arm's clean image and eight
    levels, then ImageNet-C fog severities 1-5."""
    clean = draw_box(scene.image.copy(), box)
    rows: list[_Row] = []
    arms: list[tuple[Arm, dict[str, Any]]] = [("fog", {}), ("water", {})]
    if turbid is not None:
        arms.append(("turbid", {"absorption_per_m": turbid[0], "scattering_per_m": turbid[1]}))
    for arm, physics in arms:
        stack = draw_box(arm_stack(scene, arm, SWEEP_LEVELS_M, **physics), box)
        rows.append(
            [("clean", clean)]
            + [(f"{arm} {level_label(v)}", im) for v, im in zip(SWEEP_LEVELS_M, stack, strict=True)]
        )
    nominal = draw_box(imagenet_c_stack(scene, IMAGENET_C_SEVERITIES, seed), box)
    rows.append(
        [(f"ImageNet-C fog {s}", im) for s, im in zip(IMAGENET_C_SEVERITIES, nominal, strict=True)]
    )
    return rows


def contact_sheet(
    scene: Scene,
    out: Path,
    target: int = 0,
    seed: int = 0,
    turbid: tuple[Sequence[float], Sequence[float]] | None = None,
) -> Path:
    """Write a PNG contact sheet of ``scene`` and return its path.

    Rows: fog (clean + eight levels), pure water (clean + eight levels), with ``turbid`` —
    the water's (absorption, scattering) per channel in 1/m — turbid water right below pure
    water, then ImageNet-C fog severities 1-5 and the depth map with a colour bar, its
    provenance in the title.
    """
    plt = pyplot()
    box = target_box(scene, target)
    rows = _sheet_rows(scene, box, seed, turbid)
    cols = len(rows[0])
    aspect = scene.height / scene.width
    fig, axes = plt.subplots(
        len(rows), cols, figsize=(1.8 * cols, 3 * (1.8 * aspect + 0.3) + 0.5), squeeze=False
    )
    for r, row in enumerate(rows):
        for c in range(cols):
            ax = axes[r][c]
            ax.axis("off")
            if c < len(row):
                title, im = row[c]
                ax.imshow(im)
                ax.set_title(title, fontsize=8)
    _depth_panel(fig, axes[-1][len(rows[-1])], scene)
    category = scene.targets[target].category
    fig.suptitle(
        f"{scene.id}: target {target} ({category}); depth {scene.depth_provenance} — "
        f"{scene.depth_note[:110]}",
        fontsize=9,
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.subplots_adjust(left=0.01, right=0.99, top=0.88, bottom=0.02, wspace=0.05, hspace=0.25)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def _depth_panel(fig: Any, ax: Any, scene: Scene) -> None:
    """The scene's depth map in ``ax`` with a colour bar in metres, its provenance above."""
    shown = ax.imshow(scene.depth_m, cmap="magma_r")
    ax.set_title(f"depth ({scene.depth_provenance})", fontsize=8)
    bar = fig.colorbar(shown, ax=ax, fraction=0.06, pad=0.03)
    bar.set_label("metres", fontsize=8)
