"""What a run sends to an experiment tracker, whatever its protocol: :class:`Content`.

Everything comes from the run's manifest and its face (:mod:`clearsight.faces`): the manifest
(the configuration inside it) as parameters, the per-level points of the report's curves as
step metrics (the step the level's index, the level itself logged beside at the same step),
the card's numbers with their intervals and item counts as summary metrics, and the report's
files with the manifest as artifacts. Keys are the labels joined by ``/``, with the characters
a tracker refuses (MLflow takes ``[A-Za-z0-9_-. /:]``) replaced: ``V*_acc`` is ``V_star_acc``.
A value that is not finite (a crossing never reached) is not logged: a tracker would store it
as NaN or refuse it, and the report says why it is missing.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clearsight.faces.face import LevelPoint, Measured

__all__ = ["Content", "StepMetric", "content_of", "metric_key", "params_of"]

#: The characters every tracker takes in a key (MLflow's rule, the strictest of the three).
_REFUSED = re.compile(r"[^\w.\- /:]")
#: Manifest entries that are no parameters: the driver's note of which stages are stored
#: (it changes while the run goes; a tracker's parameter is set once, when its run begins).
NOT_PARAMS = ("plan",)
#: Longest parameter value a tracker keeps (MLflow's limit); longer ones are cut, whole in
#: the manifest artifact.
MAX_PARAM_CHARS = 6000


@dataclass(frozen=True)
class StepMetric:
    """One step metric: its key, value and step."""

    key: str
    value: float
    step: int


@dataclass(frozen=True)
class Content:
    """What a finished run sends: parameters, step metrics, summary metrics and artifacts."""

    params: Mapping[str, str]
    steps: tuple[StepMetric, ...] = ()
    summary: Mapping[str, float] = field(default_factory=dict)
    artifacts: tuple[Path, ...] = ()


def metric_key(parts: Sequence[str]) -> str:
    """``parts`` joined by ``/``, each with ``*`` read as ``_star`` and what a tracker refuses
    as ``_``."""
    return "/".join(_REFUSED.sub("_", p.replace("*", "_star")) for p in parts if p)


def _flat(value: Any, prefix: str) -> Iterator[tuple[str, Any]]:
    """``value`` as dotted key -> leaf pairs (a mapping's entries nested; lists kept whole)."""
    if isinstance(value, Mapping) and value:
        for key, inner in value.items():
            yield from _flat(inner, f"{prefix}.{key}" if prefix else str(key))
    else:
        yield prefix, value


def params_of(manifest: Mapping[str, Any]) -> dict[str, str]:
    """The manifest as parameters (but :data:`NOT_PARAMS`): one per leaf (``config.arms``), a
    value as its JSON text (a string as itself), cut at :data:`MAX_PARAM_CHARS`."""
    out = {}
    kept = {k: v for k, v in manifest.items() if k not in NOT_PARAMS}
    for key, value in _flat(kept, ""):
        text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
        out[metric_key([key])] = text[:MAX_PARAM_CHARS]
    return out


def _steps(points: Sequence[LevelPoint]) -> Iterator[StepMetric]:
    """Each finite point, and its level under the series' arm (``model/arm/level_m``) once
    per step."""
    levels: dict[tuple[str, int], float] = {}
    for p in points:
        if math.isfinite(p.value):
            yield StepMetric(metric_key(p.series), p.value, p.step)
        levels[(metric_key([*p.series[:2], p.level_name]), p.step)] = p.level
    for (key, step), level in levels.items():
        yield StepMetric(key, level, step)


def _summary(measured: Measured) -> dict[str, float]:
    """Each card number's estimate, ``/low``, ``/high`` and ``/n`` (the finite ones), under
    its model."""
    out: dict[str, float] = {}
    for model, numbers in measured.numbers.items():
        for n in numbers:
            key = metric_key([model, n.key])
            parts = {"": n.estimate, "/low": n.low, "/high": n.high, "/n": float(n.n)}
            out.update({key + s: float(v) for s, v in parts.items() if math.isfinite(v)})
    return out


def content_of(
    manifest: Mapping[str, Any], measured: Measured | None, artifacts: Sequence[Path]
) -> Content:
    """The :class:`Content` of a run from its manifest, what its report measured (None: no
    numbers) and its files."""
    if measured is None:
        return Content(params_of(manifest), artifacts=tuple(artifacts))
    return Content(
        params_of(manifest),
        tuple(_steps(measured.points)),
        _summary(measured),
        tuple(artifacts),
    )
