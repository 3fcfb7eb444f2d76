"""Probe instances: multiple-choice questions about an image the reasoner never sees.

An :class:`Instance` is what the active-reasoning protocol (docs/methods.md §6) hands a blind
reasoner and a sensor: the question and its lettered options go to the reasoner, the image only
to the sensor, the gold letter only to the scorer. Two sources:

* the **bundled** set (:func:`bundled_instances`): questions on the photos that installed
  packages carry (``clearsight scenes``), stored in ``data/bundled.yaml``, each gold answer
  checked by a person looking at the photo. It runs on every machine.
* **local copies** of SeedBench, FigureQA, MMStar, CVQA and ReasonVQA (:func:`load_instances`):
  a JSONL file, or a directory of Parquet / Arrow files. The field names each loader reads are
  in :data:`LAYOUTS` and documented in ``docs/probe.md``; images embedded in a table are
  written once to the data cache and referenced by path. A hub snapshot or cache folder, or
  ``hf:``, is read with the published schema instead (:mod:`clearsight.probe.hub`).

An image reference is ``bundled:<scene id>`` (the scene's image, cropped as the scene is, with
no box drawn) or a file path. Instances are frozen and JSON-able (:meth:`Instance.to_json`), so
a work item can carry one into a worker process.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import yaml

from clearsight.datasets.hub import HUB_SPECS
from clearsight.datasets.images import image_path, write_image
from clearsight.datasets.rows import lettered_options
from clearsight.datasets.snapshot import is_hub_source
from clearsight.provenance import source_digest
from clearsight.validate import InputError, jsonl_values, refuse_repeated_ids, short_repr

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

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict (options as a list)."""
        out = asdict(self)
        out["options"] = list(self.options)
        return out

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
        if not isinstance(options, list | tuple) or not all(map(_is_text, options)):
            raise InputError(
                f"invalid options in instance {key}: options must be a list of texts, "
                f"got {short_repr(options)}"
            )
        for name in ("id", "image", "question", "gold"):
            if not _is_text(data[name]):
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


def _is_text(value: object) -> bool:
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


# --------------------------------------------------------------------------------------------
# Local copies of the benchmark datasets
# --------------------------------------------------------------------------------------------


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


def _image_ref(value: Any, dataset: str, key: str, base: Path | None) -> tuple[str, bytes | None]:
    """A path for the row's image and the bytes to write there: a path as given (relative to
    ``base``, nothing to write), or embedded bytes, kept in the data cache under their content
    hash (:func:`~clearsight.datasets.images.write_image` writes them once the row is valid)."""
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
        return str(image_path(data, f"probe-images/{dataset}")), data
    if value is None or isinstance(value, Mapping | list):
        raise InputError(f"missing image in {dataset} row {key}: no path or bytes")
    path = Path(str(value))
    if not path.is_absolute() and base is not None:
        path = base / path
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
    if not isinstance(raw, list | tuple) or not all(map(_is_text, raw)):
        raise InputError(f"invalid options in {dataset} row {key}: options must be a list of texts")
    return tuple(str(o) for o in raw)


def row_instance(
    row: Mapping[str, Any], dataset: str, base: Path | None = None, write: bool = True
) -> Instance:
    """One dataset row as an :class:`Instance`, read with the dataset's :data:`LAYOUTS` entry
    (a row may also use the generic fields id, image, question, options, answer); ``write``
    False leaves an embedded image unwritten."""
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
    image, data = _image_ref(_first(row, (*layout.image, "image")), dataset, key, base)
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
    if data is not None and write:  # only a valid row leaves its image in the cache
        write_image(Path(image), data)
    return inst


#: The file formats :func:`source_format` recognises, by suffix; other files by their bytes.
_SUFFIX_FORMATS: Final[Mapping[str, str]] = {
    ".jsonl": "jsonl",
    ".json": "json",
    ".parquet": "parquet",
    ".arrow": "arrow",
}


def source_format(source: Path) -> str:
    """The format of an instance source: ``jsonl``, ``json`` (an array of rows), ``parquet``,
    ``arrow`` or ``directory`` (a ``data.jsonl``, or Parquet / Arrow files under it), read from
    the suffix or else the file's first bytes; an InputError says when it cannot tell."""
    if source.is_dir():
        return "directory"
    if not source.is_file():
        raise InputError(f"no instances in {source}: there is no such file or directory")
    try:
        with source.open("rb") as f:
            head = f.read(8)
    except OSError as exc:
        raise InputError(f"no instances in {source}: cannot read it: {exc.strerror}") from exc
    if head.startswith(b"PAR1"):
        return "parquet"
    if head.startswith(b"ARROW1") or head.startswith(b"\xff\xff\xff\xff"):
        return "arrow"
    if source.suffix.lower() in _SUFFIX_FORMATS:
        return _SUFFIX_FORMATS[source.suffix.lower()]
    if head.lstrip()[:1] in (b"{", b"["):
        return "json" if head.lstrip()[:1] == b"[" else "jsonl"
    raise InputError(
        f"unknown format in {source}: it is not JSONL, a JSON array, Parquet or Arrow "
        "(see docs/probe.md)"
    )


def _json_rows(source: Path, fmt: str) -> Iterator[dict[str, Any]]:
    """The rows of a JSONL file, or of a JSON file holding an array of rows (or JSONL)."""
    try:
        text = source.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"unreadable instances in {source}: {exc}") from exc
    if fmt == "json" and text.lstrip().startswith("["):
        try:
            rows = json.loads(text)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise InputError(f"invalid JSON in {source}: {exc}") from exc
        lines = [(i, row) for i, row in enumerate(rows, 1)]
    else:
        lines = jsonl_values(text, source)
    for i, row in lines:
        if not isinstance(row, dict):
            raise InputError(
                f"invalid row in {source}:{i}: a row is a JSON object, got {type(row).__name__}"
            )
        yield row


def _table_rows(files: Sequence[Path]) -> Iterator[tuple[dict[str, Any], Path]]:
    """The rows of Parquet / Arrow files, in order."""
    import pyarrow as pa  # type: ignore[import-untyped]
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    for file in files:
        try:
            if source_format(file) == "parquet":
                table = pq.read_table(file)
            else:
                with pa.memory_map(str(file)) as mm:
                    try:
                        table = pa.ipc.open_stream(mm).read_all()
                    except pa.ArrowInvalid:
                        table = pa.ipc.open_file(mm).read_all()
        except (pa.ArrowException, OSError) as exc:
            raise InputError(f"unreadable table in {file}: {exc}") from exc
        for batch in table.to_batches(1000):
            for row in batch.to_pylist():
                yield row, file.parent


def _rows(source: Path) -> Iterator[tuple[dict[str, Any], Path]]:
    """Rows of an instance source (:func:`source_format`): a JSONL or JSON file, a Parquet or
    Arrow file, or a directory with ``data.jsonl`` or Parquet / Arrow files (sorted); each
    with the folder relative image paths are read from."""
    fmt = source_format(source)
    if fmt == "directory" and (source / "data.jsonl").is_file():
        yield from _rows(source / "data.jsonl")
    elif fmt in ("jsonl", "json"):
        yield from ((row, source.parent) for row in _json_rows(source, fmt))
    elif fmt == "directory":
        files = sorted([*source.rglob("*.parquet"), *source.rglob("*.arrow")])
        if not files:
            raise InputError(
                f"no instances in {source}: it holds no data.jsonl, .parquet or .arrow files "
                "(see docs/probe.md)"
            )
        yield from _table_rows(files)
    else:
        yield from _table_rows([source])


def infer_dataset(source: Path | str) -> str:
    """The loader that reads ``source``: ``jsonl`` when its first row has clearsight's own
    fields (:data:`OWN_FIELDS`, what ``clearsight build`` writes); else an InputError saying
    the loader cannot be told from the file and naming the ones to choose from."""
    first = next(_rows(Path(source)), None)
    if first is None:
        raise InputError(f"no instances in {source}: the file holds no rows")
    row = first[0]
    if all(name in row for name in OWN_FIELDS):
        return "jsonl"
    fields = ", ".join(sorted(map(str, row))[:8])
    raise InputError(
        f"unknown loader for {source}: its rows ({fields}) are not clearsight's own "
        f"({', '.join(OWN_FIELDS)}); name the dataset they come from with --dataset "
        f"({', '.join(LAYOUTS)})"
    )


def bundled_is_a_name(source: object) -> str:
    """The refusal of the bundled loader for a file: ``bundled`` names the bundled set and
    never stands in for a file the user named."""
    return (
        f"invalid dataset 'bundled' for {source}: 'bundled' is the bundled question set "
        "(instances: bundled), not a loader of files; leave the dataset out to have it "
        f"inferred from the file, or name one ({', '.join(('jsonl', *LAYOUTS))})"
    )


def source_manifest(source: str, dataset: str, count: int) -> dict[str, Any]:
    """What a run's manifest records of its instance source: the resolved path (or
    ``bundled``), its format, the loader, its sha256 (of the file, of a directory's data files
    (:func:`~clearsight.provenance.source_digest`), or of the bundled question file) and how
    many instances the run asks about."""
    if source == "bundled":
        data = resources.files("clearsight.probe").joinpath("data/bundled.yaml").read_bytes()
        where, fmt, digest = "bundled", "bundled", hashlib.sha256(data).hexdigest()
    elif dataset in HUB_SPECS and is_hub_source(source):
        from clearsight.probe.hub import hub_record

        return {**hub_record(dataset, source), "dataset": dataset, "count": count}
    else:
        path = Path(source)
        where, fmt = str(path.resolve()), source_format(path)
        digest = source_digest(path, tuple(_SUFFIX_FORMATS))
    return {"source": where, "format": fmt, "dataset": dataset, "sha256": digest, "count": count}


def resolve_source(data: Any) -> Any:
    """The ``instances`` / ``dataset`` fields of a configuration (``ProbeConfig``,
    ``BuildConfig``) before validation, with the dataset resolved: ``bundled`` for the bundled
    set, :func:`infer_dataset` of a file when it is left out. A loader named for the bundled
    set, or ``bundled`` named for a file, is an InputError: the bundled set never stands in for
    a file, nor a file for it. Other fields and bad types are left to the field checks."""
    if not isinstance(data, Mapping):
        return data
    source, dataset = data.get("instances", "bundled"), data.get("dataset")
    if not isinstance(source, str) or not (dataset is None or isinstance(dataset, str)):
        return data
    if source == "bundled":
        if dataset not in (None, "bundled"):
            raise InputError(
                f"invalid dataset {dataset!r} for instances 'bundled': a loader reads a local "
                "copy; name its file or directory with --instances PATH"
            )
        return {**data, "dataset": "bundled"}
    if dataset == "bundled":
        raise InputError(bundled_is_a_name(source))
    if dataset is None:
        from clearsight.probe.hub import hub_dataset

        return {**data, "dataset": hub_dataset(source) or infer_dataset(source)}
    if dataset != "jsonl" and dataset not in LAYOUTS:
        raise InputError(
            f"unknown dataset {dataset!r} for {source}: the loaders are "
            f"{', '.join(('jsonl', *LAYOUTS))}"
        )
    return data


def load_instances(
    source: Path | str, dataset: str, limit: int | None = None, write: bool = True
) -> list[Instance]:
    """Instances of ``dataset`` from a local copy at ``source`` (see the module docstring; a
    hub snapshot or cache: :func:`clearsight.probe.hub.hub_instances`), at most ``limit`` of
    them, in file order; rows without options are an InputError. ``write`` False leaves
    embedded images unwritten (a listing that only checks)."""
    if dataset == "bundled":
        if str(source) != "bundled":
            raise InputError(bundled_is_a_name(source))
        return bundled_instances()[:limit]
    if dataset in HUB_SPECS and is_hub_source(source):
        from clearsight.probe.hub import hub_instances

        return hub_instances(dataset, source, limit, write)
    out: list[Instance] = []
    for row, base in _rows(Path(source)):
        out.append(row_instance(row, dataset, base, write))
        if limit is not None and len(out) >= limit:
            break
    _refuse_repeats(out, source)
    return out


def _refuse_repeats(instances: Sequence[Instance], source: Path | str) -> None:
    """Two instances under one id would run and be analysed as one: an InputError naming the
    id and its rows (:func:`~clearsight.validate.refuse_repeated_ids`)."""
    where = ((inst.id, f"{source} row {n}") for n, inst in enumerate(instances, 1))
    refuse_repeated_ids(where, "instance")


def instances_from_jsonl(path: Path | str) -> list[Instance]:
    """Instances written one per line in :meth:`Instance.to_json` form (any dataset)."""
    out = []
    for row, base in _rows(Path(path)):
        inst = Instance.from_json(row)
        if not inst.image.startswith("bundled:") and not Path(inst.image).is_absolute():
            inst = Instance(**{**asdict(inst), "image": str(base / inst.image)})
        out.append(inst)
    _refuse_repeats(out, path)
    return out
