"""What a sweep will cost before it runs: per model, the work its plan asks of the backend.

Counted from the plan alone (:func:`~clearsight.sweep.plan.plan_sweep`; no image rendered, no
model loaded), per model:

``items`` and ``units``
    questions and units (one unit per scene);
``prompt_passes``
    prompt rows through the model: one per item (a letter item is one forward pass over its
    prompt, a verbalized one its prefill);
``generations``
    decoding loops: one per verbalized item (``max_new_tokens`` steps at most);
``distinct_images``
    the distinct pixels shown: one per scene, condition (arm and level, severity, control),
    target box and, for the shuffled control, the scene shown;
``vision_encodes``
    images through the vision tower, as the backend will encode them: on ``hf:`` one per
    distinct image where the model's family shares an image's encode among the requests of a
    unit that show it (:mod:`clearsight.models.hf_prefix`), one per item where it never does
    (Gemma 3, Mllama, PaliGemma, Qwen3.5: :func:`clearsight.models.hf.vision_encoding`), none
    for a text-only model; one per item on a backend that gets each request's image on its
    own; none for the reference observer (no model). An ``hf:`` model whose family cannot be
    told without loading it (no ``config.json`` found locally, no preset) is counted as
    sharing, ``encoding`` None;
``encodes_saved``
    the vision encodes sharing saves: items less vision encodes where the model shares;
``encoding``
    how the model encodes (``shared``, ``per item``, ``none``), None where not told;
``store_bytes``
    the records' size in the run's store, from :data:`LETTER_RECORD_BYTES` and
    :data:`VERBAL_RECORD_BYTES` (plus four bytes per generated token);
``model_s``
    ``items / rate`` for a rate (items per second) the user gives, else None.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from pydantic import JsonValue

from clearsight.models.hf import Encoding, vision_encoding
from clearsight.sweep.plan import SweepPlan
from clearsight.sweep.unit import SweepUnit

#: Store bytes of one letter-read record (key, read-outs, raw reply with its candidate
#: probabilities and usage). Measured: a tiny Idefics3 sweep's store grew by 910 bytes per
#: letter record from 15 to 60 records (one scene to three; SQLite's 4 KiB pages make it coarse).
LETTER_RECORD_BYTES = 900
#: Store bytes of one verbalized record before its generated text. Measured likewise: 1,000
#: bytes per record with 24 generated tokens, so about 900 without them.
VERBAL_RECORD_BYTES = 900
#: Store bytes per generated token (about four characters of text).
TOKEN_BYTES = 4


@dataclass(frozen=True)
class ModelBudget:
    """The work one model's part of a sweep asks (see the module docstring)."""

    model: str
    items: int
    units: int
    prompt_passes: int
    generations: int
    distinct_images: int
    vision_encodes: int
    encodes_saved: int
    encoding: Encoding | None
    store_bytes: int
    model_s: float | None

    def as_dict(self) -> dict[str, Any]:
        """The fields by name."""
        return asdict(self)


#: The fields that decide which pixels an item shows (within its unit: one scene).
_IMAGE_FIELDS = ("condition", "level_m", "severity", "box", "shown")


def _image_of(entry: Any, names: tuple[str, ...]) -> tuple[Any, ...]:
    shown = entry.get("shown")
    return tuple(
        (shown.scene.id, shown.box) if n == "shown" and shown is not None else entry.get(n)
        for n in names
    )


def _verbal(entry: Any) -> bool:
    return bool(entry["question"].readout == "verbalized")


def unit_counts(unit: SweepUnit) -> tuple[int, int, int]:
    """``(items, verbalized items, distinct images)`` of one unit, from its grid's groups:
    the grid is their product, so the counts multiply (with ``positions``, the kept items are
    read one by one)."""
    grid: Any = unit.items
    groups = grid.groups
    if grid.positions is not None:
        return _counted(groups, grid.positions)
    items = verbal = images = int(grid.size)
    images = 1
    for group in groups:
        if "question" in group[0]:
            verbal = verbal // len(group) * sum(_verbal(e) for e in group)
        names = tuple(n for n in _IMAGE_FIELDS if n in group[0])
        if names:
            images *= len({_image_of(e, names) for e in group})
    return items, verbal, images


def _counted(groups: Any, positions: Any) -> tuple[int, int, int]:
    verbal, seen = 0, set()
    for position in positions:
        merged: dict[str, Any] = {}
        rest = position
        for group in reversed(groups):
            rest, j = divmod(rest, len(group))
            merged.update(group[j])
        verbal += _verbal(merged)
        seen.add(_image_of(merged, _IMAGE_FIELDS))
    return len(positions), verbal, len(seen)


def budget(plan: SweepPlan, rates: Mapping[str, float] | None = None) -> list[ModelBudget]:
    """The budget of each model of ``plan`` (in the plan's model order); ``rates`` gives a
    model's items per second where known."""
    per: dict[str, dict[str, int]] = {}
    encodings: dict[str, Encoding | None] = {}
    for unit in plan.units:
        if unit.model not in encodings:
            encodings[unit.model] = _encoding(unit.model, unit.model_options)
        seen = per.setdefault(
            unit.model, {"items": 0, "units": 0, "verbal": 0, "images": 0, "tokens": 0}
        )
        items, verbal, images = unit_counts(unit)
        seen["units"] += 1
        seen["items"] += items
        seen["verbal"] += verbal
        seen["images"] += images
        seen["tokens"] += verbal * unit.max_new_tokens
    rates = rates or {}
    return [
        _model_budget(model, seen, rates.get(model), encodings[model])
        for model, seen in per.items()
    ]


def _encoding(model: str, options: Mapping[str, JsonValue]) -> Encoding | None:
    """How ``model`` encodes images: the ``hf`` backend by its family, any other backend one
    encode per request, the reference observers none."""
    if model.partition(":")[0] == "observer":  # the reference observers encode no image
        return "none"
    if model.startswith("hf:"):
        return vision_encoding(model.removeprefix("hf:"), options)
    return "per item"


def _model_budget(
    model: str, seen: dict[str, int], rate: float | None, encoding: Encoding | None
) -> ModelBudget:
    items, verbal = int(seen["items"]), int(seen["verbal"])
    encodes = {"none": 0, "per item": items}.get(str(encoding), int(seen["images"]))
    size = (items - verbal) * LETTER_RECORD_BYTES + verbal * VERBAL_RECORD_BYTES
    return ModelBudget(
        model=model,
        items=items,
        units=int(seen["units"]),
        prompt_passes=items,
        generations=verbal,
        distinct_images=int(seen["images"]),
        vision_encodes=encodes,
        encodes_saved=items - encodes if encoding in ("shared", None) else 0,
        encoding=encoding,
        store_bytes=size + int(seen["tokens"]) * TOKEN_BYTES,
        model_s=None if rate is None else items / rate,
    )


def totals(budgets: list[ModelBudget]) -> ModelBudget:
    """The design's totals over the models (``model_s`` None unless every model has it)."""
    times = [b.model_s for b in budgets]
    return ModelBudget(
        model="total",
        items=sum(b.items for b in budgets),
        units=sum(b.units for b in budgets),
        prompt_passes=sum(b.prompt_passes for b in budgets),
        generations=sum(b.generations for b in budgets),
        distinct_images=sum(b.distinct_images for b in budgets),
        vision_encodes=sum(b.vision_encodes for b in budgets),
        encodes_saved=sum(b.encodes_saved for b in budgets),
        encoding=None,
        store_bytes=sum(b.store_bytes for b in budgets),
        model_s=None if any(t is None for t in times) else sum(t or 0.0 for t in times),
    )
