r"""Calibration under weather (issue 45 item 3): post-hoc maps fitted on the clean images,
applied at every level of every arm, with a photo bootstrap that refits inside each draw.

For each model × task × wording (the groups of the calibration table,
:mod:`~clearsight.sweep.numbers.confidence`) three maps of the wording's confidence are fitted
on the *clean* condition's answered items (:mod:`clearsight.metrics.recalibration`):

- ``temperature``: temperature scaling of the content letters' log-probabilities, which the
  records store as ``letter_probs`` (a letter the model gave no probability is floored at
  :data:`LETTER_FLOOR` before its log is taken); the calibrated confidence is the chosen
  letter's probability :math:`\max_k \operatorname{softmax}(z / T)_k`, equal to the internal
  confidence at :math:`T = 1`. A verbalized confidence has no letters: no temperature map;
- ``platt``: the logistic map of the confidence's logit (none where the clean answers are all
  right, all wrong or separated by their confidence: the fit has no maximum);
- ``isotonic``: the non-decreasing step map;

and ``none``, the confidence as read. Each map is then applied at the clean images and at
every level of every arm — fog, water, turbid, and each ImageNet-C corruption whose severities
form a metre grid (:func:`~clearsight.sweep.images.corruptions.metre_grid`) — and scored on the
answered items: ECE, Brier and AURC. The clean row is in-sample (the maps were fitted there).

**W of the calibrated confidence**: the mean calibrated confidence over the items that read a
confidence (the curve of :mod:`~clearsight.sweep.numbers.cells`) crosses half-way from its clean
value to chance 1/k like the confidence's own curve; W = log10(V*_acc / V*_conf) with the
accuracy crossing of the run's W pairing (:mod:`~clearsight.sweep.numbers.pairing`). A map
changes no answer (temperature keeps the argmax; the others only relabel a confidence), so
V*_acc is the same for every map: only the confidence's crossing can move.

**The conformal threshold**: :func:`~clearsight.metrics.conformal_threshold` at ``alpha`` on the
clean answered items (answer where the confidence is at least :math:`\hat\tau`, abstain below),
applied per level: the coverage it keeps (share of the answered items still answered) and the
risk it reaches (share answered *and* wrong). The guarantee (risk at most alpha) holds for
answers exchangeable with the clean ones; where a level's risk interval lies above alpha it has
stopped holding there.

**Intervals** resample source photos with the draws of the run's scene bootstrap (the same
seed and photos: :func:`~clearsight.metrics.cluster_bootstrap`): in each draw the items of
every drawn photo count as often as it was drawn (weighted, not repeated: the same numbers),
the maps and the threshold are fitted again on that draw's clean items and every number is
recomputed, so the intervals carry the fit's own uncertainty. A draw where a fit has no
solution (Platt on answers all right) leaves that map's numbers out of the interval.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd

from clearsight.metrics import BootstrapResult, cluster_bootstrap
from clearsight.sweep.numbers.weather_draw import (
    MAPS,
    STATS,
    Key,
    draw,
    draw_keys,
    draw_numbers,
    fit_maps,
    map_widths,
)
from clearsight.sweep.numbers.weather_items import Group, groups
from clearsight.sweep.results import RunData, level_label

__all__ = [
    "DEFAULT_ALPHA",
    "FOCUS_M",
    "MAX_DRAWS",
    "Recalibrated",
    "alpha_of",
    "recalibrated_numbers",
]

#: The conformal threshold's target risk where the run's configuration names none.
DEFAULT_ALPHA = 0.05
#: The visibility the report's summary reads each arm at (its nearest level): 3.9 m, where fog
#: has taken most models' accuracy and a clean-image calibration is put to the test.
FOCUS_M = 3.90625


@dataclass(frozen=True)
class Recalibrated:
    """What the report states of calibration under weather (module docstring).

    ``alpha``: the conformal threshold's target risk. ``draws``: the photo bootstrap's draws
    behind the intervals (:data:`MAX_DRAWS` at most). ``fits``: one row per model × task ×
    wording: ``signal``, ``n_fit`` (clean answered items), ``temperature``, ``platt_a``,
    ``platt_b``, ``isotonic_steps``, ``threshold`` and ``note`` (a map not fitted, and why).
    ``levels``: one row per group × arm × level (``level``: 'clean' or the label in metres;
    ``level_m``: inf for clean) × map: ``n_scored`` and ``ece``, ``brier``, ``aurc``, each
    with ``_low`` / ``_high``. ``conformal``: one row per group × arm × level: ``threshold``,
    ``coverage``, ``risk`` with their intervals and ``holds`` (the risk interval's low end at
    most alpha). ``widths``: one row per group × arm × map: ``v_acc_m``, ``v_conf_m`` (with
    ``_low`` / ``_high``), ``w``, ``w_bound``, ``w_low``, ``w_high``. ``breaks``: one row per
    group × arm: ``level``/``level_m`` of the clearest level where the guarantee stops
    holding ('' / NaN: it holds at every level). ``summary``: one row per group × arm × map:
    ECE at the clean images (``ece_clean``) and at the arm's level nearest
    :data:`FOCUS_M` (``at``, ``ece_at``), each with ``_low`` / ``_high``, and the map's
    ``w``, ``w_low``, ``w_high``, ``w_bound``."""

    alpha: float
    draws: int
    fits: pd.DataFrame
    levels: pd.DataFrame
    conformal: pd.DataFrame
    widths: pd.DataFrame
    breaks: pd.DataFrame
    summary: pd.DataFrame

    @property
    def empty(self) -> bool:
        """Whether no group had clean answers to fit on."""
        return self.fits.empty


#: The most photo-bootstrap draws behind this section's intervals: each draw refits three
#: maps and the threshold and rescores every cell. Weighted draws, the cell order sorted once
#: per group and one compiled scoring pass (:mod:`~clearsight.sweep.numbers.weather_draw`)
#: took a draw of a synthetic 36,000-item group from 45 ms to 16 ms
#: (``benchmarks/recalibration.py``), and the section of the paper-scale run (50 model x task
#: x wording groups, 1.8 M records) from 68 s to 40 s of CPU at 200 draws, about 4 ms a draw
#: (the letters' second read of the store, 66 s more, is gone too). The headline's 2,000 draws
#: would add some 6 minutes to a report that now takes 6.5, so the cap stays: 200 draws put a
#: 95 % percentile interval's ends within a few draws' spacing of 2,000's.
MAX_DRAWS = 200


def alpha_of(data: RunData) -> float:
    """The conformal target risk of a run: its configuration's ``conformal_alpha``, else
    :data:`DEFAULT_ALPHA`."""
    return float(data.manifest.get("config", {}).get("conformal_alpha", DEFAULT_ALPHA))


@dataclass(frozen=True)
class _Booted:
    """A group's numbers by key: point estimate, interval and the point W bounds by arm."""

    estimate: dict[Key, float]
    low: dict[Key, float]
    high: dict[Key, float]
    bounds: dict[str, npt.NDArray[np.str_]]


def _bootstrap(
    group: Group, n_clusters: int, n_boot: int, seed: int, level: float, alpha: float
) -> _Booted:
    """:func:`draw_numbers` of the run and of each of the photo bootstrap's draws."""
    keys = draw_keys(group)
    found: BootstrapResult = cluster_bootstrap(
        lambda weights: np.array([draw_numbers(group, row, alpha) for row in weights]),
        n_clusters,
        n_boot=n_boot,
        level=level,
        seed=seed,
    )
    means = draw(group, np.ones(n_clusters), alpha)[3]
    return _Booted(
        estimate=dict(zip(keys, found.estimate.tolist(), strict=True)),
        low=dict(zip(keys, found.low.tolist(), strict=True)),
        high=dict(zip(keys, found.high.tolist(), strict=True)),
        bounds={
            arm: map_widths(group, means[0], means[1:, : len(group.cells)], arm)[2]
            for arm in group.arms
        },
    )


def _with_ci(booted: _Booted, key: Key, name: str) -> dict[str, float]:
    """``name``, ``name_low`` and ``name_high`` of the number ``key``."""
    return {
        name: booted.estimate[key],
        f"{name}_low": booted.low[key],
        f"{name}_high": booted.high[key],
    }


def _cells_of(group: Group) -> Iterator[tuple[int, dict[str, object]]]:
    """Each scored cell (clean first, then each arm's levels) and what names it in a row."""
    for cell in (0, *(c for cs in group.arms.values() for c in cs)):
        arm, level_m = group.cells[cell]
        yield (
            cell,
            {
                "arm": arm,
                "level": "clean" if cell == 0 else f"{level_label(level_m)} m",
                "level_m": level_m,
                "n_scored": int(group.items.scored(cell).sum()),
            },
        )


def _level_rows(group: Group, booted: _Booted) -> Iterator[dict[str, object]]:
    """The ``levels`` rows of a group (:class:`Recalibrated`)."""
    for cell, head in _cells_of(group):
        for m in MAPS:
            row = head | {"map": m}
            for stat in STATS:
                row |= _with_ci(booted, ("stat", str(cell), m, stat), stat)
            yield row


def _conformal_rows(group: Group, booted: _Booted, alpha: float) -> Iterator[dict[str, object]]:
    """The ``conformal`` rows of a group (:class:`Recalibrated`)."""
    for cell, head in _cells_of(group):
        risk = _with_ci(booted, ("conformal", str(cell), "risk"), "risk")
        holds = "" if math.isnan(risk["risk_low"]) else "yes" if risk["risk_low"] <= alpha else "no"
        yield head | {
            "alpha": alpha,
            **_with_ci(booted, ("threshold",), "threshold"),
            **_with_ci(booted, ("conformal", str(cell), "coverage"), "coverage"),
            **risk,
            "holds": holds,
        }


def _width_rows(group: Group, booted: _Booted) -> Iterator[dict[str, object]]:
    """The ``widths`` rows of a group (:class:`Recalibrated`): V* in metres."""
    for arm in group.arms:
        acc = {k: 10.0**v for k, v in _with_ci(booted, ("v_acc", arm), "v_acc_m").items()}
        for j, m in enumerate(MAPS):
            conf = _with_ci(booted, ("v_conf", arm, m), "v_conf_m")
            yield (
                {"arm": arm, "map": m, **acc}
                | {k: 10.0**v for k, v in conf.items()}
                | {
                    **_with_ci(booted, ("w", arm, m), "w"),
                    "w_bound": str(booted.bounds[arm][j]),
                }
            )


def _fit_row(group: Group, alpha: float) -> dict[str, object]:
    """The ``fits`` row of a group (:class:`Recalibrated`): the maps fitted on the run's
    clean answers."""
    fitted = fit_maps(group.items, alpha)
    return {
        "n_fit": fitted.n_fit,
        "temperature": math.nan if fitted.temperature is None else fitted.temperature,
        "platt_a": math.nan if fitted.platt is None else fitted.platt.a,
        "platt_b": math.nan if fitted.platt is None else fitted.platt.b,
        "isotonic_steps": 0 if fitted.isotonic is None else int(np.unique(fitted.isotonic.y).size),
        "threshold": fitted.threshold,
        "note": "; ".join(fitted.notes),
    }


def _breaks(conformal: pd.DataFrame) -> pd.DataFrame:
    """Per group × arm the clearest level where the conformal guarantee stops holding (its
    risk interval above alpha): ``level`` '' and ``level_m`` NaN where it holds throughout."""
    columns = ["model", "task", "wording", "signal", "arm", "level", "level_m"]
    rows: list[tuple[object, ...]] = []
    if conformal.empty:
        return pd.DataFrame(rows, columns=columns)
    arms = conformal[conformal["level"] != "clean"]
    for key, sub in arms.groupby(columns[:5], sort=False):
        broken = sub[sub["holds"] == "no"].sort_values("level_m", ascending=False)
        first = broken.iloc[0] if len(broken) else None
        where = ("", math.nan) if first is None else (first["level"], first["level_m"])
        rows.append((*key, *where))
    return pd.DataFrame(rows, columns=columns)


def _summary(levels: pd.DataFrame, widths: pd.DataFrame) -> pd.DataFrame:
    """The ``summary`` rows (:class:`Recalibrated`): per group × arm × map the clean ECE, the
    ECE at the arm's level nearest :data:`FOCUS_M` and W."""
    if levels.empty:
        return pd.DataFrame()
    names = ["model", "task", "wording", "signal", "map"]
    ece = ["ece", "ece_low", "ece_high"]
    clean = levels[levels["level"] == "clean"][names + ece]
    arms = levels[levels["level"] != "clean"]
    arms = arms.assign(off=np.abs(np.log(arms["level_m"].to_numpy(dtype=float) / FOCUS_M)))
    nearest = arms[arms["off"] == arms.groupby([*names, "arm"])["off"].transform("min")]
    at = nearest[[*names, "arm", "level", *ece]].rename(columns={"level": "at"})
    out = at.rename(columns={c: c.replace("ece", "ece_at") for c in ece}).merge(
        clean.rename(columns={c: c.replace("ece", "ece_clean") for c in ece}), on=names
    )
    w = widths[[*names, "arm", "w", "w_low", "w_high", "w_bound"]]
    return out.merge(w, on=[*names, "arm"], how="left")


def recalibrated_numbers(
    data: RunData,
    veq: pd.DataFrame,
    *,
    n_boot: int = 2000,
    seed: int = 0,
    level: float = 0.95,
    alpha: float | None = None,
) -> Recalibrated:
    """The :class:`Recalibrated` numbers of a run (module docstring): ``veq`` the run's
    ImageNet-C V_eq table (:func:`~clearsight.sweep.images.corruptions.corruption_veq_table`,
    which places each corruption on the metre axis), ``n_boot`` draws of the photo bootstrap
    from ``seed`` (the scene bootstrap's own: the same photos in each draw) with ``level``
    intervals (at most :data:`MAX_DRAWS`), ``alpha`` the conformal target risk (None: the
    run's, :func:`alpha_of`)."""
    alpha = alpha_of(data) if alpha is None else alpha
    n_boot = min(n_boot, MAX_DRAWS)
    n_clusters = int(np.unique(data.records["cluster"].astype(str).to_numpy()).size)
    fits, levels, conformal, widths = [], [], [], []
    for group in groups(data, veq) if not data.records.empty else ():
        name = {
            "model": group.model,
            "task": group.task,
            "wording": group.wording,
            "signal": group.signal,
        }
        booted = _bootstrap(group, n_clusters, n_boot, seed, level, alpha)
        fits.append(name | _fit_row(group, alpha))
        levels += [name | row for row in _level_rows(group, booted)]
        conformal += [name | row for row in _conformal_rows(group, booted, alpha)]
        widths += [name | row for row in _width_rows(group, booted)]
    conformal_frame = pd.DataFrame(conformal)
    levels_frame, widths_frame = pd.DataFrame(levels), pd.DataFrame(widths)
    return Recalibrated(
        alpha=alpha,
        draws=n_boot,
        fits=pd.DataFrame(fits),
        levels=levels_frame,
        conformal=conformal_frame,
        widths=widths_frame,
        breaks=_breaks(conformal_frame),
        summary=_summary(levels_frame, widths_frame),
    )
