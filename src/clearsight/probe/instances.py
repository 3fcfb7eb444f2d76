"""Probe instances: multiple-choice questions about an image the reasoner never sees.

An :class:`Instance` is what the active-reasoning protocol (METHODS.md section 6) hands a blind
reasoner and a sensor: the question and its lettered options go to the reasoner, the image only
to the sensor, the gold letter only to the scorer. Two sources:

* the **bundled** set (:func:`bundled_instances`): questions on the photos that installed
  packages carry (``clearsight scenes``), stored in ``data/bundled.yaml``, each gold answer
  checked by a person looking at the photo. It runs on every machine.
* **local copies** of SeedBench, FigureQA, MMStar, CVQA and ReasonVQA (:func:`load_instances`):
  a JSONL file, or a directory of Parquet / Arrow files as the Hugging Face hub or
  ``datasets.save_to_disk`` leave them. The field names each loader reads are in
  :data:`LAYOUTS` and documented in ``docs/probe.md``; images embedded in a table are written
  once to the data cache and referenced by path.

An image reference is ``bundled:<scene id>`` (the scene's image, cropped as the scene is, with
no box drawn) or a file path. Instances are frozen and JSON-able (:meth:`Instance.to_json`), so
a work item can carry one into a worker process.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import yaml

from clearsight.paths import cache_dir
from clearsight.validate import InputError

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
        """The instance :meth:`to_json` wrote (extra keys ignored)."""
        try:
            return Instance(
                id=str(data["id"]),
                image=str(data["image"]),
                question=str(data["question"]),
                options=tuple(str(o) for o in (data.get("options") or ())),
                gold=str(data["gold"]),
                dataset=str(data.get("dataset", "")),
                category=str(data.get("category", "")),
            )
        except KeyError as exc:
            raise InputError(f"an instance needs the field {exc.args[0]!r}: {dict(data)}") from exc


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
    ids = [i.id for i in out]
    if len(set(ids)) != len(ids):
        raise InputError("data/bundled.yaml repeats a question id")
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

_OPTION_IN_TEXT = re.compile(
    r"(?:^|\s|\n)\(?([A-J])[:.)]\s*(.+?)(?=(?:\s|\n)\(?[A-J][:.)]\s|$)", re.S
)


def _first(row: Mapping[str, Any], names: Sequence[str]) -> Any:
    for name in names:
        if name in row and row[name] is not None and row[name] != "":
            return row[name]
    return None


def split_options(question: str) -> tuple[str, tuple[str, ...]]:
    """Split MMStar-style text ``"... Options: A: x, B: y, C: z"`` into stem and options."""
    stem, sep, rest = question.partition("Options:")
    if not sep:
        match = re.search(r"(?:^|\n)\(?A[:.)]\s", question)
        if match is None:
            return question.strip(), ()
        stem, rest = question[: match.start()], question[match.start() :]
    found = [
        (m.group(1), m.group(2).strip().rstrip(",;").strip())
        for m in _OPTION_IN_TEXT.finditer(rest)
    ]
    letters = [f[0] for f in found]
    if letters != list(LETTERS[: len(letters)]):
        return question.strip(), ()
    return stem.strip(), tuple(f[1] for f in found)


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
    if isinstance(answer, int | np.integer):
        index = int(answer)
        if not 0 <= index < len(options):
            raise InputError(f"answer index {index} is outside the {len(options)} options")
        return LETTERS[index]
    text = str(answer).strip()
    bare = text.strip("()").rstrip(".:")
    if len(bare) == 1 and bare.upper() in LETTERS[: len(options)]:
        return bare.upper()
    if text.isdigit() and 0 <= int(text) < len(options):
        return LETTERS[int(text)]
    for i, option in enumerate(options):
        if option.strip().lower() == text.lower():
            return LETTERS[i]
    raise InputError(f"answer {answer!r} is neither a letter, an index nor one of the options")


def _image_ref(value: Any, dataset: str, key: str, base: Path | None) -> str:
    """A path for the row's image: a path as given (relative to ``base``), or embedded bytes
    written once to the data cache under their content hash."""
    if isinstance(value, list) and value:  # SeedBench rows hold a list of frames
        value = value[0]
    data: bytes | None = None
    if isinstance(value, Mapping):
        if value.get("bytes"):
            data = bytes(value["bytes"])
        elif value.get("path"):
            value = value["path"]
    elif isinstance(value, bytes | bytearray):
        data = bytes(value)
    if data is not None:
        digest = hashlib.sha256(data).hexdigest()[:24]
        path = cache_dir() / "probe-images" / dataset / f"{digest}.img"
        if not path.is_file():
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            tmp.write_bytes(data)
            tmp.replace(path)
        return str(path)
    if value is None:
        raise InputError(f"{dataset} row {key}: no image")
    path = Path(str(value))
    if not path.is_absolute() and base is not None:
        path = base / path
    return str(path)


def row_instance(row: Mapping[str, Any], dataset: str, base: Path | None = None) -> Instance:
    """One dataset row as an :class:`Instance`, read with the dataset's :data:`LAYOUTS` entry
    (a row may also use the generic fields id, image, question, options, answer)."""
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
        raw = _first(row, layout.options)
        if isinstance(raw, str):
            try:
                raw = json.loads(raw)
            except json.JSONDecodeError:
                raw = [raw]
        options = tuple(str(o) for o in raw) if raw is not None else ()
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
    image = _image_ref(_first(row, (*layout.image, "image")), dataset, key, base)
    category = _first(row, layout.category)
    return Instance(
        id=f"{dataset}/{key}",
        image=image,
        question=question.strip(),
        options=options,
        gold=gold,
        dataset=dataset,
        category="" if category is None else str(category),
    )


def _rows(source: Path) -> Iterator[tuple[dict[str, Any], Path]]:
    """Rows of a JSONL file, or of every Parquet / Arrow file under a directory (sorted)."""
    if source.is_file() and source.suffix in (".jsonl", ".json"):
        for i, line in enumerate(source.read_text().splitlines(), 1):
            if line.strip():
                try:
                    yield json.loads(line), source.parent
                except json.JSONDecodeError as exc:
                    raise InputError(f"{source}:{i}: not valid JSON: {exc}") from exc
        return
    if source.is_dir() and (source / "data.jsonl").is_file():
        yield from _rows(source / "data.jsonl")
        return
    if not source.exists():
        raise InputError(f"no dataset at {source}")
    files = (
        [source]
        if source.is_file()
        else sorted([*source.rglob("*.parquet"), *source.rglob("*.arrow")])
    )
    if not files:
        raise InputError(
            f"{source} holds no data.jsonl, .parquet or .arrow files (see docs/probe.md)"
        )
    import pyarrow as pa  # type: ignore[import-untyped]
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    for file in files:
        if file.suffix == ".parquet":
            table = pq.read_table(file)
        else:
            with pa.memory_map(str(file)) as mm:
                try:
                    table = pa.ipc.open_stream(mm).read_all()
                except pa.ArrowInvalid:
                    table = pa.ipc.open_file(mm).read_all()
        for batch in table.to_batches(1000):
            for row in batch.to_pylist():
                yield row, file.parent


def load_instances(source: Path | str, dataset: str, limit: int | None = None) -> list[Instance]:
    """Instances of ``dataset`` from a local copy at ``source`` (see the module docstring),
    at most ``limit`` of them, in file order; rows without options are an InputError."""
    if dataset == "bundled":
        return bundled_instances()[:limit]
    out: list[Instance] = []
    for row, base in _rows(Path(source)):
        out.append(row_instance(row, dataset, base))
        if limit is not None and len(out) >= limit:
            break
    return out


def instances_from_jsonl(path: Path | str) -> list[Instance]:
    """Instances written one per line in :meth:`Instance.to_json` form (any dataset)."""
    out = []
    for row, base in _rows(Path(path)):
        inst = Instance.from_json(row)
        if not inst.image.startswith("bundled:") and not Path(inst.image).is_absolute():
            inst = Instance(**{**asdict(inst), "image": str(base / inst.image)})
        out.append(inst)
    return out
