"""What a run sends to an experiment tracker, whatever its protocol: :class:`Content`.

Everything comes from the run's manifest and its face (:mod:`clearsight.faces`): the manifest
(the configuration inside it) as parameters, the per-level points of the report's curves as
step metrics (the step the level's index, the level itself logged beside at the same step),
the card's numbers with their intervals and item counts as summary metrics, and the report's
files with the manifest as artifacts. Keys are the labels joined by ``/``, with the characters
a tracker refuses (MLflow takes ``[A-Za-z0-9_-. /:]``) replaced: ``V*_acc`` is ``V_star_acc``.
A value that is not finite (a crossing never reached) is not logged: a tracker would store it
as NaN or refuse it, and the report says why it is missing. The stratified sample of items
(:func:`clearsight.faces.sample.sample_rows`) goes as a table (:func:`table_of`): the rows'
columns and, where the face shows images, the image each item was shown (its PNG, encoded once).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clearsight.faces.face import LevelPoint, Measured

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    from PIL.Image import Image

    from clearsight.faces.sample import SampledRow

    #: An image's pixels, HxWx3 RGB.
    Pixels = npt.NDArray[np.uint8]

__all__ = [
    "IMAGE",
    "SAMPLE",
    "Content",
    "StepMetric",
    "content_of",
    "decoded",
    "metric_key",
    "params_of",
    "table_of",
]

#: The characters every tracker takes in a key (MLflow's rule, the strictest of the three).
_REFUSED = re.compile(r"[^\w.\- /:]")
#: Manifest entries that are no parameters: the driver's note of which stages are stored
#: (it changes while the run goes; a tracker's parameter is set once, when its run begins).
NOT_PARAMS = ("plan",)
#: The sample's table: its name in every tracker (W&B's and trackio's logged key, MLflow's
#: artifact ``sample.parquet``) and the column of the image each item was shown.
SAMPLE, IMAGE = "sample", "image"
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
    """What a finished run sends: parameters, step metrics, summary metrics, artifacts and the
    sample of items its table shows."""

    params: Mapping[str, str]
    steps: tuple[StepMetric, ...] = ()
    summary: Mapping[str, float] = field(default_factory=dict)
    artifacts: tuple[Path, ...] = ()
    sample: tuple[SampledRow, ...] = ()


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


def table_of(
    sample: Sequence[SampledRow], picture: Callable[[bytes, Pixels | None], Any]
) -> tuple[list[str], list[list[Any]]]:
    """The sample as a table's columns and rows: the rows' columns in first-seen order (a row
    lacking one holds None there) and, where the items have images, column :data:`IMAGE` last,
    each image made the tracker's own by ``picture`` from its PNG and its pixels (None: not
    kept by the run)."""
    columns = list(dict.fromkeys(c for s in sample for c in s.row))
    rows = [[s.row.get(c) for c in columns] for s in sample]
    if any(s.image is not None for s in sample):
        columns.append(IMAGE)
        for row, s in zip(rows, sample, strict=True):
            row.append(None if s.image is None else picture(s.image, s.pixels))
    return columns, rows


def decoded(png: bytes, pixels: Pixels | None = None) -> Image:
    """A PNG's image: from its ``pixels`` where they are given, else decoded when its pixels
    are first asked for."""
    import io

    from PIL import Image as PILImage

    return PILImage.open(io.BytesIO(png)) if pixels is None else PILImage.fromarray(pixels)
