"""Probe instances: multiple-choice questions about an image the reasoner never sees.

An :class:`Instance` is what the active-reasoning protocol (docs/methods.md §6) hands a blind
reasoner and a sensor: the question and its lettered options go to the reasoner, the image only to
the sensor, the gold letter only to the scorer. Here: the instance itself, the **bundled** set
(:func:`bundled_instances`: questions on the photos that installed packages carry (``clearsight
scenes``), stored in ``data/bundled.yaml``, each gold answer checked by a person looking at the
photo; it runs on every machine) and an instance's image (:func:`instance_image`). Local copies of
the benchmark datasets are read by :mod:`~clearsight.probe.sources.load` (the files) and
:mod:`~clearsight.probe.sources.layouts` (their rows), hub snapshots by
:mod:`~clearsight.probe.sources.hub`.

An image reference is ``bundled:<scene id>`` (the scene's image, cropped as the scene is, with
no box drawn) or a file path. Instances are frozen and JSON-able (:meth:`Instance.to_json`), so
a work item can carry one into a worker process.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Final, TypedDict

import numpy as np
import numpy.typing as npt
import yaml

from clearsight.validate import InputError, refuse_repeated_ids, short_repr

#: The five benchmark sources of the paper plus the bundled set.
DATASETS: Final[tuple[str, ...]] = (
    "bundled",
    "seedbench",
    "figureqa",
    "mmstar",
    "cvqa",
    "reasonvqa",
)
#: The paper's task domains (Table 1 columns) per dataset.
DOMAIN: Final[Mapping[str, str]] = {
    "bundled": "perception",
    "seedbench": "perception",
    "figureqa": "charts",
    "mmstar": "knowledge",
    "cvqa": "knowledge",
    "reasonvqa": "knowledge",
}
LETTERS: Final[str] = "ABCDEFGHIJ"
#: The fields of an instance in clearsight's own JSON form (:meth:`Instance.to_json`).
OWN_FIELDS: Final[tuple[str, ...]] = ("id", "image", "question", "options", "gold")


class InstanceJson(TypedDict):
    """An :class:`Instance` in clearsight's own JSON form (options as a list)."""

    id: str
    image: str
    question: str
    options: list[str]
    gold: str
    dataset: str
    category: str


@dataclass(frozen=True)
class Instance:
    """One multiple-choice question about one image.

    ``image``: ``bundled:<scene id>`` or a file path. ``options``: the answer texts in display
    order (option i has letter ``LETTERS[i]``). ``gold``: the correct letter. ``category``: the
    question type (bundled: counting, colour, position, identity; others: the dataset's own).
    """

    id: str
    image: str
    question: str
    options: tuple[str, ...]
    gold: str
    dataset: str
    category: str

    def __post_init__(self) -> None:
        """Reject an instance the protocol cannot pose: no options, a gold outside them."""
        if not self.id:
            raise InputError("an instance needs a non-empty id")
        if not self.question.strip():
            raise InputError(f"instance {self.id}: the question is empty")
        if len(self.options) == 0:
            raise InputError(
                f"instance {self.id}: it has no options; the probe protocol needs a "
                "multiple-choice question (at least two options)"
            )
        if len(self.options) < 2:
            raise InputError(f"instance {self.id}: it has one option; it needs at least two")
        if len(self.options) > len(LETTERS):
            raise InputError(
                f"instance {self.id}: {len(self.options)} options, at most {len(LETTERS)}"
            )
        if self.gold not in self.letters:
            raise InputError(
                f"instance {self.id}: gold {self.gold!r} is not one of its letters "
                f"{', '.join(self.letters)}"
            )

    @property
    def letters(self) -> tuple[str, ...]:
        """The option letters, A, B, ... in display order."""
        return tuple(LETTERS[: len(self.options)])

    @property
    def domain(self) -> str:
        """The paper's domain of the instance's dataset (perception, charts or knowledge)."""
        return DOMAIN.get(self.dataset, "other")

    def option(self, letter: str) -> str:
        """The text of the option with ``letter``."""
        return self.options[self.letters.index(letter)]

    def options_text(self) -> str:
        """The options as lines ``(A) text``."""
        return "\n".join(f"({k}) {v}" for k, v in zip(self.letters, self.options, strict=True))

    def to_json(self) -> InstanceJson:
        """A JSON-able dict (options as a list)."""
        return {
            "id": self.id,
            "image": self.image,
            "question": self.question,
            "options": list(self.options),
            "gold": self.gold,
            "dataset": self.dataset,
            "category": self.category,
        }

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Instance:
        """The instance :meth:`to_json` wrote (extra keys ignored). ``options`` must be a list
        of texts: a string is refused, never split into one option per character."""
        missing = [name for name in OWN_FIELDS if name not in data]
        if missing:
            raise InputError(
                f"missing field {missing[0]!r} in instance {short_repr(data.get('id', '?'))}: "
                f"an instance needs {', '.join(OWN_FIELDS)}"
            )
        key = short_repr(data["id"])
        options = data["options"]
        if not isinstance(options, list | tuple) or not all(map(is_text, options)):
            raise InputError(
                f"invalid options in instance {key}: options must be a list of texts, "
                f"got {short_repr(options)}"
            )
        for name in ("id", "image", "question", "gold"):
            if not is_text(data[name]):
                raise InputError(
                    f"invalid {name} in instance {key}: it must be a text, "
                    f"got {short_repr(data[name])}"
                )
        return Instance(
            id=str(data["id"]),
            image=str(data["image"]),
            question=str(data["question"]),
            options=tuple(str(o) for o in options),
            gold=str(data["gold"]),
            dataset=str(data.get("dataset") or ""),
            category=str(data.get("category") or ""),
        )


def is_text(value: object) -> bool:
    """Whether a field's value reads as a text: a string, or a number (an id, an option)."""
    return isinstance(value, str | int | float) and not isinstance(value, bool)


# --------------------------------------------------------------------------------------------
# The bundled set
# --------------------------------------------------------------------------------------------


@functools.cache
def _bundled_cached() -> tuple[Instance, ...]:
    text = resources.files("clearsight.probe").joinpath("data/bundled.yaml").read_text()
    doc = yaml.safe_load(text)
    dataset = str(doc.get("dataset", "bundled"))
    out = []
    for entry in doc["questions"]:
        out.append(
            Instance(
                id=f"{dataset}/{entry['id']}",
                image=str(entry["image"]),
                question=str(entry["question"]),
                options=tuple(str(o) for o in entry["options"]),
                gold=str(entry["gold"]),
                dataset=dataset,
                category=str(entry["category"]),
            )
        )
    refuse_repeated_ids(
        ((inst.id, f"data/bundled.yaml question {n}") for n, inst in enumerate(out, 1)),
        "instance",
    )
    return tuple(out)


def bundled_instances(available_only: bool = True) -> list[Instance]:
    """The bundled questions in file order; by default only those whose photo is present on
    this machine (the darknet photos need ``make data``)."""
    items = list(_bundled_cached())
    if not available_only:
        return items
    from clearsight.scenes.bundled import bundled_specs, photo_missing

    specs = bundled_specs()
    return [
        i
        for i in items
        if not i.image.startswith("bundled:") or photo_missing(specs[i.image[8:]]) is None
    ]


# --------------------------------------------------------------------------------------------
# Images
# --------------------------------------------------------------------------------------------


def instance_image(inst: Instance) -> npt.NDArray[np.uint8]:
    """The instance's image as uint8 HxWx3 sRGB (what only the sensor sees)."""
    if inst.image.startswith("bundled:"):
        from clearsight.scenes.bundled import load_bundled_scene

        return load_bundled_scene(inst.image.split(":", 1)[1]).image
    path = Path(inst.image)
    if not path.is_file():
        raise InputError(f"instance {inst.id}: image file {path} does not exist")
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as im:
            return np.ascontiguousarray(np.asarray(im.convert("RGB"), dtype=np.uint8))
    except (OSError, UnidentifiedImageError) as exc:
        raise InputError(f"instance {inst.id}: cannot read image {path}: {exc}") from exc
