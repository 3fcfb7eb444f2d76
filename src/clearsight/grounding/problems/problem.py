"""Problems with gold answers: the :class:`Problem` record and loaders for the paper's benchmarks.

A problem is the input of trajectory grounding: a question (options included in the text), an
optional image, the gold answer and its type. Images are *references* (a file path, or
``chart:...`` / ``scene:...`` for the bundled generator's pictures, resolved by
:func:`~clearsight.grounding.problems.images.load_image`), so problems are small, JSON-able and
picklable into work items.

The paper's ten benchmarks are read from local copies — clearsight never downloads — laid out as
``<datasets>/<Name>/<file>`` with one record per problem (JSONL, or a JSON list / dict of records).
:data:`LAYOUTS` names, per benchmark, the file and the fields read (docs/grounding.md shows each
layout); :func:`clearsight.grounding.problems.hub.load_benchmark` reads a benchmark from it, or from
a snapshot of the benchmark's hub repository when the folder lacks that file. Any other JSONL with
the normalised fields (``id``, ``question``, ``answer``, optional ``choices``, ``image``,
``answer_type``, ``benchmark``) loads with :func:`load_jsonl`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import JsonValue

from clearsight.paths import inside_source
from clearsight.specs import Part
from clearsight.validate import InputError, jsonl_values, refuse_repeated_ids, short_repr

AnswerType = Literal["letter", "number", "boolean", "text"]
ANSWER_TYPES: tuple[str, ...] = ("letter", "number", "boolean", "text")
LETTERS = "ABCDEFGHIJ"

_NUMBER = re.compile(r"^[-+]?(\d+(\.\d*)?|\.\d+)(/\d+)?$")
_BOOL = {"yes": True, "no": False, "true": True, "false": False}


@dataclass(frozen=True)
class Problem(Part):
    """One verifiable problem.

    ``question`` is the full text shown to the model (options listed in it); ``options`` the
    option texts of a multiple-choice problem (answer type ``letter``: ``gold`` is a letter);
    ``image`` a reference for :func:`~clearsight.grounding.problems.images.load_image` or None;
    ``solution`` optional canonical trajectory parts (``observation``, ``reasoning``,
    ``answer``) that the bundled generator writes and TGS-Bench uses as the good trajectory;
    ``meta`` anything else worth keeping (an empty ``solution`` or ``meta`` is None).

    A problem is shared by every item planned for it, so it is a
    :class:`~clearsight.specs.Part`: :meth:`to_json` (its fields, options as a list) is
    computed once.
    """

    id: str
    benchmark: str
    question: str
    gold: str
    answer_type: AnswerType
    image: str | None = None
    options: tuple[str, ...] = ()
    solution: Mapping[str, str] | None = None
    meta: Mapping[str, JsonValue] | None = None

    def __post_init__(self) -> None:
        if not self.id or not self.question.strip():
            raise InputError(f"problem {self.id!r}: needs an id and a non-empty question")
        if self.answer_type not in ANSWER_TYPES:
            raise InputError(f"problem {self.id}: unknown answer type {self.answer_type!r}")
        if not str(self.gold).strip():
            raise InputError(f"problem {self.id}: empty gold answer")
        if self.answer_type == "letter":
            k = LETTERS.find(self.gold)
            if len(self.gold) != 1 or k < 0 or (self.options and k >= len(self.options)):
                raise InputError(
                    f"problem {self.id}: letter answer {self.gold!r} is not one of its "
                    f"{len(self.options)} options"
                )
        for name in ("solution", "meta"):
            if not getattr(self, name):
                object.__setattr__(self, name, None)  # one stored form for "none"


# --------------------------------------------------------------------------------------------
# Answers
# --------------------------------------------------------------------------------------------


def infer_answer_type(answer: str, options: Sequence[str]) -> AnswerType:
    """``letter`` (a single option letter with options), ``number``, ``boolean`` or ``text``."""
    a = answer.strip()
    if options and len(a) == 1 and a.upper() in LETTERS[: len(options)]:
        return "letter"
    if _NUMBER.match(a.replace(",", "")):
        return "number"
    if a.lower() in _BOOL:
        return "boolean"
    return "text"


def _as_number(text: str) -> float | None:
    t = text.strip().replace(",", "").rstrip(".")
    if not _NUMBER.match(t):
        return None
    if "/" in t:
        num, den = t.split("/")
        return float(num) / float(den) if float(den) else None
    return float(t)


_FIRST_NUMBER = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?(?:/\d+)?|[-+]?\.\d+")
# most explicit first: the whole answer, "(B)", "B." / "B)", "option B", then any standalone
# capital other than the pronoun "I", and "I" last
_LETTER_PATTERNS = (
    re.compile(r"^\s*\(?([A-J])\)?\s*[.):]?\s*$"),
    re.compile(r"\(([A-J])\)"),
    re.compile(r"\b([A-J])[.):]"),
    re.compile(r"\b(?:option|choice)\s+([A-J])\b", re.IGNORECASE),
    re.compile(r"\b([A-HJ])\b"),
    re.compile(r"\b(I)\b"),
)


def normalise_answer(text: str, answer_type: AnswerType) -> str | None:
    """The comparable form of a model's answer text, or None when it holds none.

    number: the first number (fractions evaluated, commas dropped) as a float string; letter:
    the first standalone capital A-J; boolean: yes/no (true/false read as yes/no); text: lower
    case with spaces collapsed and trailing punctuation dropped.
    """
    t = text.strip()
    if answer_type == "number":
        m = _FIRST_NUMBER.search(t)
        v = _as_number(m.group(0)) if m else None
        return None if v is None else repr(round(v, 6))
    if answer_type == "letter":
        for pattern in _LETTER_PATTERNS:
            m = pattern.search(t)
            if m:
                return m.group(1)
        return None
    if answer_type == "boolean":
        words = re.findall(r"[a-z]+", t.lower())
        hit = next((w for w in words if w in _BOOL), None)
        return None if hit is None else ("yes" if _BOOL[hit] else "no")
    norm = re.sub(r"\s+", " ", t.lower()).strip(" .!")
    return norm or None


def is_correct(answer_text: str, problem: Problem) -> bool:
    """Whether ``answer_text`` (a trajectory's final answer) matches the gold answer."""
    got = normalise_answer(answer_text, problem.answer_type)
    return got is not None and got == normalise_answer(problem.gold, problem.answer_type)


# --------------------------------------------------------------------------------------------
# Benchmark loaders
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    """Where a benchmark's local copy lives and which fields hold what.

    ``file``: path under ``<datasets>/<name>/``; ``id``/``question``/``answer``: field names;
    ``choices``: the options field (a list), or None; ``image``: the image path field
    (relative to the benchmark directory), or None; ``answer_index``: the answer is an index
    into the choices (A-OKVQA's ``correct_choice_idx``) rather than a letter or value.
    """

    file: str
    id: str
    question: str
    answer: str
    choices: str | None = None
    image: str | None = None
    answer_index: bool = False


#: The expected local layout of each of the paper's benchmarks (see docs/grounding.md).
LAYOUTS: dict[str, Layout] = {
    "MathVista": Layout("testmini.jsonl", "pid", "question", "answer", "choices", "image"),
    "MathVerse": Layout("testmini.jsonl", "sample_index", "question", "answer", None, "image"),
    "DynaMath": Layout("sample_variant1.jsonl", "id", "question", "ground_truth", None, "image"),
    "Geo3K": Layout("test.jsonl", "id", "problem_text", "answer", "choices", "image"),
    "WeMath": Layout("testmini.jsonl", "ID", "question", "answer", None, "image_path"),
    "MATH-Vision": Layout("test.jsonl", "id", "question", "answer", "options", "image"),
    "LogicVista": Layout("dataset.jsonl", "id", "question", "answer", None, "imagename"),
    "A-OKVQA": Layout(
        "val.jsonl", "question_id", "question", "correct_choice_idx", "choices", "image", True
    ),
    "MMK12": Layout("test.jsonl", "id", "question", "answer", None, "image"),
    "MMMU-Pro": Layout("standard.jsonl", "id", "question", "answer", "options", "image"),
}


def read_records(path: Path) -> Iterator[dict[str, Any]]:
    """Records of a JSONL file, or of a JSON file holding a list or an id-keyed mapping of
    them (a file without the ``.jsonl`` suffix is read as JSON, or as JSONL when it holds one
    object per line); anything else is an InputError naming the file."""
    if not path.is_file():
        raise InputError(f"no problems in {path}: the file does not exist (see docs/grounding.md)")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"unreadable problems in {path}: {exc}") from exc
    data: Any = None
    if path.suffix != ".jsonl":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            if not exc.msg.startswith("Extra data"):
                raise InputError(f"invalid JSON in {path}: {exc}") from exc
        except RecursionError as exc:
            raise InputError(f"invalid JSON in {path}: nested too deeply") from exc
    if data is None:
        data = [value for _, value in jsonl_values(text, path)]
    if isinstance(data, dict) and all(isinstance(v, dict) for v in data.values()):
        data = [{"id": key, **rec} for key, rec in data.items()]
    if not isinstance(data, list) or not all(isinstance(rec, dict) for rec in data):
        raise InputError(
            f"invalid problems in {path}: a file holds JSON objects, one per line, in a list "
            "or in an id-keyed mapping"
        )
    yield from data


def with_options(question: str, options: Sequence[str]) -> str:
    """``question`` with its options listed under it as ``A. ...`` lines (none: unchanged)."""
    if not options:
        return question
    lines = [f"{LETTERS[i]}. {o}" for i, o in enumerate(options)]
    return question.rstrip() + "\n" + "\n".join(lines)


def record_problem(
    rec: Mapping[str, Any], layout: Layout, name: str, root: Path, n: int
) -> Problem:
    """Record ``n`` of benchmark ``name`` (read with ``layout``, images relative to ``root`` and
    resolving inside it: :func:`~clearsight.paths.inside_source`) as a problem; InputError
    naming the record and field for a record that cannot be one."""
    for field in (layout.question, layout.answer):
        if field not in rec:
            raise InputError(f"{name} record {n}: missing field {field!r}")
    choices = rec.get(layout.choices) if layout.choices else None
    texts = isinstance(choices, list) and all(
        isinstance(o, str | int | float) and not isinstance(o, bool) for o in choices
    )
    if choices and not (texts and len(choices) <= len(LETTERS)):
        raise InputError(
            f"invalid {layout.choices} in {name} record {n}: a list of at most {len(LETTERS)} "
            f"texts, got {short_repr(choices)}"
        )
    options = tuple(str(o) for o in choices or ())
    answer = rec[layout.answer]
    if layout.answer_index:
        index = int(answer) if isinstance(answer, str) and answer.isdecimal() else answer
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(options):
            raise InputError(
                f"invalid {layout.answer} in {name} record {n}: an index of its "
                f"{len(options)} choices, got {short_repr(answer)}"
            )
        answer = LETTERS[index]
    answer = str(answer).strip()
    if options and answer in options and not (len(answer) == 1 and answer in LETTERS):
        answer = LETTERS[options.index(answer)]  # answer given as the option text
    image = rec.get(layout.image) if layout.image else None
    image_ref = str(inside_source(root, str(image), f"{name} record {n}")) if image else None
    atype = rec.get("answer_type") if rec.get("answer_type") in ANSWER_TYPES else None
    return Problem(
        id=f"{name}/{rec.get(layout.id, n)}",
        benchmark=name,
        question=with_options(str(rec[layout.question]), options),
        gold=answer,
        answer_type=atype or infer_answer_type(answer, options),
        image=image_ref,
        options=options,
    )


def load_jsonl(path: Path | str, benchmark: str | None = None) -> list[Problem]:
    """Problems from a JSONL of normalised records (``id``, ``question``, ``answer``, optional
    ``choices``, ``image`` relative to the file, ``answer_type``, ``benchmark``)."""
    path = Path(path)
    layout = Layout(path.name, "id", "question", "answer", "choices", "image")
    out = []
    for n, rec in enumerate(read_records(path)):
        name = benchmark or str(rec.get("benchmark") or path.stem)
        p = record_problem(rec, layout, name, path.parent, n)
        out.append(p)
    refuse_repeats(out, path)
    return out


def refuse_repeats(problems: Sequence[Problem], path: Path) -> None:
    """Two problems under one id would be scored as one: an InputError naming the id and its
    records (numbered from 0, as a record without an id is named)."""
    refuse_repeated_ids(((p.id, f"{path} record {n}") for n, p in enumerate(problems)), "problem")
