"""The sweep in ``clearsight view``: :class:`SweepRunView`, the
:class:`~clearsight.faces.viewing.RunView` of a sweep run (the sweep face's ``view`` part);
:mod:`~clearsight.sweep.view.index` declares its side index (:mod:`clearsight.view.index`) and
the reads over it, :mod:`~clearsight.sweep.view.rows` makes its points, rows and item pages,
:mod:`~clearsight.sweep.view.bins` makes its reliability diagrams' bins,
:mod:`~clearsight.sweep.view.items` rebuilds an item.

* **points**: the curves of the run's analysis (:func:`~clearsight.sweep.numbers.crossings.
  scene_bootstrap`'s point estimates: the viewer shows no interval), counted and summed by
  the side index (:func:`~clearsight.sweep.view.index.curve_cells`), one per model,
  task, wording, signal and condition, each point with the filters that list exactly the
  records its ``n`` counts: the ok records of the cell with a value of the signal (an
  unparsed verbalized reply has no verbal confidence, so it is not behind that point). Then
  the reliability diagrams' bins (per model, task, wording and arm: the pooled cut and the
  two murkiest levels, as the report cuts them), each a point whose value is the bin's
  accuracy and whose filters list exactly the answered items with a confidence in that bin.
* **listing**: the ok records a query selects, ImageNet-C corruptions other than fog left out
  as the analysis leaves them out, selected, counted, sorted by confidence and paged by
  the side index (brought up to date with the run first, so new records appear).
* **detail** and **image**: one record read by its key (the store's key index). The image is
  re-rendered from the stored spec by :func:`~clearsight.sweep.references.human.item_png`
  (:func:`~clearsight.sweep.unit.item_image`, the pixels the sweep sends the model); the spec
  is rebuilt into its typed item and refused unless the rebuilt item's key is the stored key,
  so the image is that of exactly the item asked.
* **groups**, **related**, **identity** and **find**: the item side by side with the other
  models' and across levels, and matched in another sweep run as ``clearsight compare``
  matches (:mod:`~clearsight.sweep.view.related`).

Filter values are those the run's configuration (its manifest) names, so a listing is checked
without reading a record; a store being written is read as it stands (read-only, no lock: the
only file written is the side index, beside it).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from pathlib import Path
from typing import Any

from clearsight.faces.viewing import Detail, Group, Identity, Listing, Point, Query, Related
from clearsight.store import StoredRecord, run_manifest
from clearsight.sweep.results import is_person, level_label
from clearsight.sweep.signals import SIGNALS
from clearsight.sweep.specs import PROTOCOL
from clearsight.sweep.view.bins import bin_points
from clearsight.sweep.view.index import BINS, CELLS, SWEEP_INDEX, curve_cells, listing_select
from clearsight.sweep.view.items import QuestionOf, sweep_item
from clearsight.sweep.view.related import find_in, groups_of, identity_of, models_of, strip_of
from clearsight.sweep.view.rows import detail_of, point_of, row_of
from clearsight.validate import InputError
from clearsight.view.index import RunIndex, record_of

__all__ = ["QuestionOf", "SweepRunView", "sweep_item"]


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
        self.index = RunIndex(self.run_dir, SWEEP_INDEX)

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
        sweep run after it, with ``clearsight serve --sweep``); ``pooled`` (an arm: its levels
        and the clean images, a reliability diagram's pooled cut) and ``bin`` (a reliability
        bin: the answered items with a confidence in it)."""
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
            "pooled": tuple(config.get("arms", ())),
            "bin": BINS,
        }

    def points(self) -> tuple[Point, ...]:
        """Every curve point of the run's analysis, then every bin of its reliability diagrams,
        with the filters of its items: the side index's tally
        (:func:`~clearsight.sweep.view.index.curve_cells`,
        :func:`~clearsight.sweep.view.bins.bin_points`), never the run's frame."""
        tally = self.index.read(CELLS)
        return (*(point_of(cell) for cell in curve_cells(tally)), *bin_points(tally))

    def listing(self, query: Query) -> Listing:
        """The page of records ``query`` asks for, selected, counted, sorted and paged by the
        run's side index (brought up to date first: module docstring)."""
        select = listing_select(query, self._levels, _LISTED)
        total, found = self.index.page(select)
        rows = (dict(zip(_NAMES, values, strict=True)) for values in found)
        return Listing(tuple(row_of(_nan_for_null(row)) for row in rows), total)

    def _record(self, key: str) -> StoredRecord | None:
        return record_of(self.run_dir, key, PROTOCOL)

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

    @property
    def _models(self) -> tuple[str, ...]:
        return tuple(self.config.get("models", ()))

    def groups(self, key: str) -> tuple[Group, ...]:
        """The item for each model and its scene's strip per arm, named from its spec
        (:func:`~clearsight.sweep.view.related.groups_of`)."""
        return groups_of(self.run_dir, self.config, key)

    def related(self, key: str, name: str) -> Related | None:
        """The group ``name`` of ``key``: ``models`` or an arm's strip, from clean to the last
        level (:mod:`~clearsight.sweep.view.related`)."""
        if name == "models":
            return models_of(self, self.run_dir, self._models, key)
        return strip_of(self, self.run_dir, self.config, key, name)

    def identity(self, key: str) -> Identity | None:
        """The model's place and what item ``key`` asks (``clearsight compare``'s matching)."""
        return identity_of(self.run_dir, self._models, key)

    def find(self, identity: Identity) -> str | None:
        """This run's item of another sweep run's ``identity``."""
        return find_in(self, self.run_dir, self._models, identity)


class _Models(tuple[str, ...]):
    """The models a run's configuration names, which also holds every person
    (``human:<name>``): their records come after the run, so its configuration never names
    them."""

    def __contains__(self, value: object) -> bool:
        return isinstance(value, str) and (is_person(value) or super().__contains__(value))


def _default_depth() -> str:
    from clearsight.sweep.config import SweepConfig

    return str(SweepConfig.model_fields["coco_depth_model"].default)


#: A listing's row as :func:`~clearsight.sweep.view.rows.row_of` reads it: its names and the
#: index's columns they are read from.
_ROW = {
    "key": "key",
    "scene.id": "scene",
    "model": "model",
    "task": "task",
    "wording": "wording",
    "condition": "condition",
    "level_m": "level_m",
    "answer": "answer",
    "question.correct": "gold",
    "correct": "correct",
    "abstained": "abstained",
    "confidence": "confidence",
}
_NAMES = tuple(_ROW)
_LISTED = tuple(_ROW.values())


def _nan_for_null(row: dict[str, object]) -> dict[str, object]:
    """A row with its missing numbers as NaN, as the analysis's frames hold them."""
    for name in ("level_m", "confidence"):
        if row[name] is None:
            row[name] = float("nan")
    return row
