"""The sweep in ``clearsight view``: :class:`SweepRunView`, the
:class:`~clearsight.faces.viewing.RunView` of a sweep run (the sweep face's ``view`` part);
:mod:`~clearsight.sweep.view.rows` makes its points, rows and item pages of the records,
:mod:`~clearsight.sweep.view.items` rebuilds an item.

* **points**: the curves of the run's analysis (:func:`~clearsight.sweep.numbers.crossings.
  scene_bootstrap`'s point estimates, one draw: the viewer shows no interval), one per model,
  task, wording, signal and condition, each point with the filters that list exactly the
  records its ``n`` counts: the ok records of the cell with a value of the signal (an
  unparsed verbalized reply has no verbal confidence, so it is not behind that point).
* **listing**: the ok records a query selects, read with the store's chunked, filtered frame
  (:meth:`~clearsight.store.RunStore.to_frame`: only the listed columns of the rows that
  match, never the raw outputs), ImageNet-C corruptions other than fog left out as the analysis
  leaves them out; outcome, confidence sort and page on the selected rows.
* **detail** and **image**: one record read by its key (the store's key index). The image is
  re-rendered from the stored spec by :func:`~clearsight.sweep.references.human.item_png`
  (:func:`~clearsight.sweep.unit.item_image`, the pixels the sweep sends the model); the spec
  is rebuilt into its typed item and refused unless the rebuilt item's key is the stored key,
  so the image is that of exactly the item asked.

Filter values are those the run's configuration (its manifest) names, so a listing is checked
without reading a record; a store being written is read as it stands (read-only, no lock).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from clearsight.faces.viewing import Detail, Listing, Point, Query
from clearsight.store import RunStore, StoredRecord, run_manifest
from clearsight.sweep.results import confidence_signal, fog_only, is_person, level_label
from clearsight.sweep.signals import SIGNALS, signal_values
from clearsight.sweep.specs import PROTOCOL
from clearsight.sweep.view.items import QuestionOf, sweep_item
from clearsight.sweep.view.rows import detail_of, point_of, row_of
from clearsight.validate import InputError

__all__ = ["QuestionOf", "SweepRunView", "sweep_item"]

#: The columns a listing reads of each selected record.
_COLUMNS = (
    "key",
    "scene.id",
    "model",
    "task",
    "wording",
    "condition",
    "level_m",
    "severity",
    "corruption",
    "answer",
    "question.correct",
    "correct",
    "abstained",
    "internal_conf",
    "verbal_conf",
)


def _flag(frame: pd.DataFrame, column: str) -> pd.Series:
    """A read-out flag as 1.0 (True) or 0.0 (False, None, absent), as the analysis reads it."""
    values = frame[column] if column in frame else pd.Series(False, index=frame.index)
    return values.astype(object).isin([True]).astype(float)


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    """The selected records with the signals' columns as the analysis types them."""
    out = frame.copy()
    for column in ("correct", "abstained"):
        out[column] = _flag(frame, column)
    for column in ("internal_conf", "verbal_conf", "level_m", "severity"):
        values = frame[column] if column in frame else pd.Series(np.nan, index=frame.index)
        out[column] = pd.to_numeric(values, errors="coerce").astype(float)
    return out


class SweepRunView:
    """The viewer's reads of one sweep run (module docstring)."""

    def __init__(self, run_dir: Path, question_of: QuestionOf) -> None:
        """Read ``run_dir``'s manifest (an InputError where it holds no sweep run);
        ``question_of`` rebuilds a stored question (for the images' items)."""
        self.run_dir = Path(run_dir)
        self.question_of = question_of
        manifest = run_manifest(self.run_dir)
        if (manifest.get("protocol") or PROTOCOL) != PROTOCOL:
            raise InputError(f"{self.run_dir} is a {manifest['protocol']} run, not a sweep")
        self.config: Mapping[str, Any] = manifest.get("config") or {}

    @property
    def title(self) -> str:
        """The run's directory name and protocol."""
        return f"{self.run_dir.resolve().name} (sweep)"

    @cached_property
    def _levels(self) -> dict[str, float]:
        return {level_label(v): float(v) for v in self.config.get("levels_m", ())}

    def filters(self) -> Mapping[str, tuple[str, ...]]:
        """model, task, wording, condition, level, severity and signal, as the run's
        configuration names them (a person, ``human:<name>``, is a model too: people answer a
        sweep run after it, with ``clearsight serve --sweep``)."""
        config = self.config
        controls = tuple(config.get("controls", ()))
        severities = config.get("imagenet_c_severities", ()) if "imagenet_c" in controls else ()
        return {
            "model": _Models(config.get("models", ())),
            "task": tuple(config.get("tasks", ())),
            "wording": tuple(config.get("wordings", ())),
            "condition": (*config.get("arms", ()), *controls),
            "level": tuple(self._levels),
            "severity": tuple(str(s) for s in severities),
            "signal": tuple(s.name for s in SIGNALS),
        }

    def points(self) -> tuple[Point, ...]:
        """Every curve point of the run's analysis, with the filters of its items."""
        from clearsight.sweep.numbers.crossings import scene_bootstrap
        from clearsight.sweep.results import load_run_data

        curves = scene_bootstrap(load_run_data(self.run_dir), n_boot=1).curves
        return tuple(point_of(row) for row in curves.itertuples(index=False))

    def _where(self, filters: Mapping[str, str]) -> dict[str, str | float]:
        where: dict[str, str | float] = {
            name: filters[name] for name in ("model", "task", "wording") if name in filters
        }
        if "condition" in filters:
            where["condition"] = filters["condition"]
        if "level" in filters:
            where["level_m"] = self._levels[filters["level"]]
        if "severity" in filters:
            where["severity"] = int(filters["severity"])
        return where

    def _selected(self, query: Query) -> pd.DataFrame:
        """The ok records ``query`` selects, typed, before sorting and paging."""
        with RunStore.open(self.run_dir, read_only=True) as store:
            frame = store.to_frame(
                status="ok", kind=PROTOCOL, columns=_COLUMNS, where=self._where(query.filters)
            )
        frame = _typed(fog_only(frame))
        if frame.empty:
            return frame
        if "signal" in query.filters:
            frame = frame[np.isfinite(signal_values(frame, query.filters["signal"]))]
        pairs = zip(frame["model"].astype(str), frame["wording"].astype(str), strict=True)
        columns = [confidence_signal(m, w) for m, w in pairs]
        values = frame[["internal_conf", "verbal_conf"]].to_numpy()
        pick = np.array([c == "verbal_conf" for c in columns], dtype=np.intp)
        frame = frame.assign(confidence=values[np.arange(len(frame)), pick])
        return frame[_outcome(frame, query.outcome, query.threshold)]

    def listing(self, query: Query) -> Listing:
        """The page of records ``query`` asks for (module docstring)."""
        frame = self._selected(query)
        if frame.empty:
            return Listing((), 0)
        if query.sort:
            frame = frame.sort_values(
                "confidence", ascending=query.sort == "asc", kind="stable", na_position="last"
            )
        start = query.page * query.per_page
        page = frame.iloc[start : start + query.per_page]
        rows = page.to_dict("records")
        return Listing(tuple(row_of({str(k): v for k, v in r.items()}) for r in rows), len(frame))

    def _record(self, key: str) -> StoredRecord | None:
        with RunStore.open(self.run_dir, read_only=True) as store:
            found = store.record(key)
        return found if found is not None and found.protocol == PROTOCOL else None

    def detail(self, key: str) -> Detail | None:
        """The record of ``key`` as its page shows it (None: no sweep record of that key)."""
        found = self._record(key)
        return None if found is None else detail_of(found)

    def image(self, key: str) -> bytes | None:
        """The PNG the model was shown for ``key``, re-rendered from its stored spec."""
        from clearsight.sweep.references.human import item_png

        found = self._record(key)
        if found is None:
            return None
        depth = self.config.get("coco_depth_model") or _default_depth()
        return item_png(sweep_item(key, found.spec, self.question_of), str(depth))


class _Models(tuple[str, ...]):
    """The models a run's configuration names, which also holds every person
    (``human:<name>``): their records come after the run, so its configuration never names
    them."""

    def __contains__(self, value: object) -> bool:
        return isinstance(value, str) and (is_person(value) or super().__contains__(value))


def _default_depth() -> str:
    from clearsight.sweep.config import SweepConfig

    return str(SweepConfig.model_fields["coco_depth_model"].default)


def _outcome(frame: pd.DataFrame, outcome: str, threshold: float) -> Any:
    """The rows of ``frame`` with ``outcome`` (every row for ``""``)."""
    wrong = (frame["correct"] == 0.0) & (frame["abstained"] == 0.0)
    return {
        "": pd.Series(True, index=frame.index),
        "correct": frame["correct"] == 1.0,
        "wrong": wrong,
        "abstained": frame["abstained"] == 1.0,
        "confidently-wrong": wrong & (frame["confidence"] > threshold),
    }[outcome]
