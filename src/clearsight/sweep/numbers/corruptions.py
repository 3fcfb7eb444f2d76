"""Every ImageNet-C corruption's signals on the metre axis, its crossings and W (issue 45 item 2).

For each corruption of the run (ImageNet-C fog's severities are in the run's records, the
others' in ``RunData.corrupted``) one scene bootstrap
(:func:`~clearsight.sweep.numbers.crossings.scene_bootstrap`) reads a run of the corruption's
records beside the clean, blank and shuffled controls of the same models: every signal
(accuracy, confidences, abstain rate) at every severity with its interval, and — where the
corruption's severities form a metre grid (:func:`~clearsight.sweep.images.corruptions.metre_grid`:
each severity at its median V_eq, falling) — the same records again as an arm on that grid,
whose crossings V* and widths W are computed exactly as fog's are (floors, clean reference,
pairing). A corruption with no metre grid gets its signals per severity and no crossing, with
the grid's reason.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import pandas as pd

from clearsight.sweep.images.corruptions import corruption_order, corruption_veq_table, metre_grid
from clearsight.sweep.numbers.crossings import scene_bootstrap
from clearsight.sweep.results import CONTROLS, RunData

__all__ = ["GRID_ARM", "CorruptionNumbers", "corruption_numbers"]

#: The arm a corruption's records are read as on its metre grid (a physical arm's name, so the
#: bootstrap reads their ``level_m``); the crossings carry the corruption's name instead.
GRID_ARM = "fog"


@dataclass(frozen=True)
class CorruptionNumbers:
    """What the report states of the run's ImageNet-C corruptions.

    ``veq``: :func:`~clearsight.sweep.images.corruptions.corruption_veq_table`. ``grids``: per
    corruption, its levels (metres, empty without a grid) and the reason it has none.
    ``signals``: one row per model × task × wording × signal × corruption × severity:
    ``estimate``, ``low``, ``high``, ``n``, ``n_scenes`` and the severity's ``veq_median``,
    ``veq_q25``, ``veq_q75`` and ``placed``. ``crossings``: the bootstrap's crossings rows
    (:class:`~clearsight.sweep.numbers.crossings.SceneBootstrap`) of each corruption with a
    grid, ``arm`` the corruption's name.
    """

    veq: pd.DataFrame
    grids: dict[str, tuple[tuple[float, ...], str]]
    signals: pd.DataFrame
    crossings: pd.DataFrame

    @property
    def empty(self) -> bool:
        """Whether the run has no ImageNet-C V_eq rows at all."""
        return self.veq.empty


def _corruption_records(data: RunData) -> pd.DataFrame:
    """Every ImageNet-C record of the run with its ``corruption`` (fog's from the records)."""
    fog = data.records[data.records["condition"] == "imagenet_c"].assign(corruption="fog")
    if data.corrupted.empty:
        return fog
    return pd.concat([fog, data.corrupted], ignore_index=True)


def _arm_manifest(manifest: dict[str, Any]) -> dict[str, Any]:
    """``manifest`` with :data:`GRID_ARM` shown to every model the run showed ImageNet-C."""
    config = manifest.get("config", {})
    shown = config.get("model_conditions", {})
    widened = {m: [*c, GRID_ARM] for m, c in shown.items() if "imagenet_c" in c}
    widened |= {m: [c for c in cs if c != GRID_ARM] for m, cs in shown.items() if m not in widened}
    return manifest | {"config": config | {"model_conditions": widened}}


def _grid_run(
    data: RunData, records: pd.DataFrame, severities: tuple[int, ...], levels: tuple[float, ...]
) -> RunData:
    """A run of one corruption's ``records`` beside the run's controls, and — with ``levels``
    — the same records as :data:`GRID_ARM` at the level of their severity."""
    controls = data.records[data.records["condition"].isin(CONTROLS)]
    parts = [controls, records.drop(columns="corruption")]
    if levels:
        at = dict(zip(severities, levels, strict=True))
        arm = records.drop(columns="corruption").assign(
            condition=GRID_ARM, level_m=records["severity"].map(at)
        )
        parts.append(arm)
    return replace(
        data,
        records=pd.concat(parts, ignore_index=True),
        levels={GRID_ARM: levels} if levels else {},
        manifest=_arm_manifest(data.manifest),
    )


def corruption_numbers(
    data: RunData, *, n_boot: int = 2000, seed: int = 0, level: float = 0.95
) -> CorruptionNumbers:
    """The :class:`CorruptionNumbers` of a run: one bootstrap per corruption (module docstring),
    each with ``n_boot`` replicates from ``seed`` at interval ``level``."""
    veq = corruption_veq_table(pd.concat([data.veq, data.corrupted_veq], ignore_index=True))
    records = _corruption_records(data)
    grids: dict[str, tuple[tuple[float, ...], str]] = {}
    signals, crossings = [], []
    for name in corruption_order(set(records["corruption"])):
        rows = veq[veq["corruption"] == name] if not veq.empty else veq
        grid = metre_grid(rows) if len(rows) else None
        levels = grid.levels if grid else ()
        grids[name] = (levels, grid.reason if grid else "no V_eq records")
        mine = records[records["corruption"] == name]
        boot = scene_bootstrap(
            _grid_run(data, mine, grid.severities if grid else (), levels),
            n_boot=n_boot,
            seed=seed,
            level=level,
        )
        curves = boot.curves[boot.curves["condition"] == "imagenet_c"]
        signals.append(curves.rename(columns={"x": "severity"}).assign(corruption=name))
        arm = boot.crossings[(boot.crossings["arm"] == GRID_ARM) & (boot.crossings["n_items"] > 0)]
        crossings.append(arm.assign(arm=name))
    return CorruptionNumbers(
        veq=veq,
        grids=grids,
        signals=_with_veq(signals, veq),
        crossings=pd.concat(crossings, ignore_index=True) if crossings else pd.DataFrame(),
    )


def _with_veq(signals: list[pd.DataFrame], veq: pd.DataFrame) -> pd.DataFrame:
    """The signal rows with their severity's V_eq median, quartiles and ``placed``."""
    if not signals:
        return pd.DataFrame()
    table = pd.concat(signals, ignore_index=True).drop(columns="condition")
    if veq.empty:
        return table
    keep = ["corruption", "severity", "veq_median", "veq_q25", "veq_q75", "placed"]
    return table.merge(veq[keep], on=["corruption", "severity"], how="left")
