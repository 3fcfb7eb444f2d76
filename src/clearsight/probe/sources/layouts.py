"""The layouts of the benchmark datasets' rows, and one row read as a probe instance.

A local copy of SeedBench, FigureQA, MMStar, CVQA or ReasonVQA (docs/probe.md) names its fields
its own way: :data:`LAYOUTS` says, per dataset, which fields hold the id, the question, the
image, the answer, the options (a list, lettered columns, or the question's own text) and the
category, the first present name winning. :func:`row_instance` reads one row with its layout:
the gold letter from a letter, an index or the answer's text; an embedded image written once to
the data cache and referenced by path. The files themselves are read by
:mod:`~clearsight.probe.sources.load`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np

from clearsight.datasets.images import image_path, write_images
from clearsight.datasets.rows import lettered_options
from clearsight.paths import inside_source
from clearsight.probe.instances import LETTERS, Instance, is_text
from clearsight.validate import InputError


@dataclass(frozen=True)
class Layout:
    """Which fields of a dataset row hold what (first present name wins)."""

    id: tuple[str, ...]
    question: tuple[str, ...]
    image: tuple[str, ...]
    answer: tuple[str, ...]
    options: tuple[str, ...] = ("options", "choices")
    option_columns: tuple[str, ...] = ()
    category: tuple[str, ...] = ("category",)
    options_in_question: bool = False
    yes_no: bool = False


#: The field names each loader reads (documented in docs/probe.md).
LAYOUTS: Final[Mapping[str, Layout]] = {
    "seedbench": Layout(
        id=("question_id", "id"),
        question=("question",),
        image=("image", "image_path", "data_id"),
        answer=("answer",),
        option_columns=("choice_a", "choice_b", "choice_c", "choice_d"),
        category=("question_type_id", "category"),
    ),
    "figureqa": Layout(
        id=("question_id", "id"),
        question=("question_string", "question"),
        image=("image", "image_path", "image_index"),
        answer=("answer", "label"),
        category=("question_id_template", "category"),
        yes_no=True,
    ),
    "mmstar": Layout(
        id=("index", "id"),
        question=("question",),
        image=("image", "image_path"),
        answer=("answer",),
        category=("category", "l2_category"),
        options_in_question=True,
    ),
    "cvqa": Layout(
        id=("ID", "id"),
        question=("Translated Question", "Question", "question"),
        image=("image", "image_path"),
        answer=("Label", "answer"),
        options=("Translated Options", "Options", "options"),
        category=("Category", "category"),
    ),
    "reasonvqa": Layout(
        id=("question_id", "id"),
        question=("question",),
        image=("image", "image_path", "image_id"),
        answer=("answer", "label"),
        options=("choices", "options"),
        category=("question_type", "category"),
    ),
}


def _first(row: Mapping[str, Any], names: Sequence[str]) -> Any:
    for name in names:
        if name in row and row[name] is not None and row[name] != "":
            return row[name]
    return None


def split_options(question: str) -> tuple[str, tuple[str, ...]]:
    """Split MMStar-style text ``"... Options: A: x, B: y, C: z"`` into stem and options
    (:func:`~clearsight.datasets.rows.lettered_options`)."""
    return lettered_options(question)


def _gold_letter(answer: Any, options: Sequence[str], yes_no: bool) -> str:
    """The gold letter from a letter, an index, or the answer's text."""
    if yes_no:
        text = str(answer).strip().lower()
        if text in ("1", "yes", "true", "a"):
            return "A"
        if text in ("0", "no", "false", "b"):
            return "B"
        raise InputError(f"a yes/no answer must be 1/0 or yes/no, got {answer!r}")
    if isinstance(answer, bool):
        raise InputError(f"the answer must be a letter, index or option text, got {answer!r}")
    if len(options) > len(LETTERS):  # before any letter is looked up: options beyond J have none
        raise InputError(f"{len(options)} options, at most {len(LETTERS)}")
    if isinstance(answer, int | np.integer):
        index = int(answer)
        if not 0 <= index < len(options):
            raise InputError(f"answer index {index} is outside the {len(options)} options")
        return LETTERS[index]
    text = str(answer).strip()
    bare = text.strip("()").rstrip(".:")
    if len(bare) == 1 and bare.upper() in LETTERS[: len(options)]:
        return bare.upper()
    if text.isdecimal() and 0 <= int(text) < len(options):
        return LETTERS[int(text)]
    for i, option in enumerate(options):
        if option.strip().lower() == text.lower():
            return LETTERS[i]
    raise InputError(f"answer {answer!r} is neither a letter, an index nor one of the options")


def _image_ref(
    value: Any, dataset: str, key: str, base: Path | None, root: Path | None
) -> tuple[str, bytes | None]:
    """A path for the row's image and the bytes to write there: a path as given (relative to
    ``base``, resolving inside the source's folder ``root``, else ``base``:
    :func:`~clearsight.paths.inside_source`; nothing to write), or embedded
    bytes, kept in the data cache under their content hash (written once the whole source is
    valid: :func:`~clearsight.datasets.images.write_images`)."""
    if isinstance(value, list) and value:  # SeedBench rows hold a list of frames
        value = value[0]
    data: bytes | None = None
    if isinstance(value, Mapping):
        if isinstance(value.get("bytes"), bytes | bytearray) and value["bytes"]:
            data = bytes(value["bytes"])
        elif value.get("path"):
            value = value["path"]
    elif isinstance(value, bytes | bytearray):
        data = bytes(value)
    if data is not None:
        return str(image_path(data, image_folder(dataset))), data
    if value is None or isinstance(value, Mapping | list):
        raise InputError(f"missing image in {dataset} row {key}: no path or bytes")
    if base is None:
        return str(value), None
    path = base / str(value)
    inside_source(root or base, path, f"{dataset} row {key}")
    return str(path), None


def _row_options(raw: Any, dataset: str, key: str) -> tuple[str, ...]:
    """A row's options: a list of texts, or a string holding a JSON list of them (as some
    Parquet exports store it); any other string is refused, not split into characters."""
    if raw is None:
        return ()
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except (json.JSONDecodeError, RecursionError):
            raw = None
    if isinstance(raw, np.ndarray):
        raw = raw.tolist()
    if not isinstance(raw, list | tuple) or not all(map(is_text, raw)):
        raise InputError(f"invalid options in {dataset} row {key}: options must be a list of texts")
    return tuple(str(o) for o in raw)


def row_instance(
    row: Mapping[str, Any], dataset: str, base: Path | None = None, write: bool = True
) -> Instance:
    """One dataset row as an :class:`Instance`, read with the dataset's :data:`LAYOUTS` entry
    (a row may also use the generic fields id, image, question, options, answer); ``write``
    False leaves an embedded image unwritten."""
    inst, data = pending_instance(row, dataset, base)
    if write:
        write_images([data], image_folder(dataset))
    return inst


def image_folder(dataset: str) -> str:
    """The cache folder of a local copy's embedded images: ``probe-images/<dataset>``."""
    return f"probe-images/{dataset}"


def pending_instance(
    row: Mapping[str, Any], dataset: str, base: Path | None = None, root: Path | None = None
) -> tuple[Instance, bytes | None]:
    """:func:`row_instance` and the embedded image bytes still to write at its image path (a
    loader writes them once the whole source is valid: :func:`write_images`); a path-only
    image must resolve inside ``root`` (the source's folder; default ``base``)."""
    if dataset not in LAYOUTS:
        raise InputError(f"unknown dataset {dataset!r}; loaders exist for {', '.join(LAYOUTS)}")
    layout = LAYOUTS[dataset]
    key = str(_first(row, (*layout.id, "id")))
    question = str(_first(row, (*layout.question, "question")) or "")
    options: tuple[str, ...]
    if layout.yes_no:
        options = ("Yes", "No")
    elif layout.option_columns and _first(row, layout.option_columns) is not None:
        options = tuple(str(row[c]) for c in layout.option_columns if row.get(c) not in (None, ""))
    else:
        options = _row_options(_first(row, layout.options), dataset, key)
        if not options and layout.options_in_question:
            question, options = split_options(question)
    if not options:
        raise InputError(
            f"{dataset} row {key}: it has no options; the probe protocol needs a "
            "multiple-choice question"
        )
    answer = _first(row, (*layout.answer, "answer"))
    if answer is None:
        raise InputError(f"{dataset} row {key}: no answer")
    gold = _gold_letter(answer, options, layout.yes_no)
    image, data = _image_ref(_first(row, (*layout.image, "image")), dataset, key, base, root)
    category = _first(row, layout.category)
    inst = Instance(
        id=f"{dataset}/{key}",
        image=image,
        question=question.strip(),
        options=options,
        gold=gold,
        dataset=dataset,
        category="" if category is None else str(category),
    )
    return inst, data
