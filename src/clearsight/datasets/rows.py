"""A hub split's rows read through its spec's mapping into :class:`HubRow` s.

One function, :func:`hub_rows`, reads every dataset: the spec says which column holds what and
in which form (:mod:`clearsight.datasets.hub`). A row is **multiple choice** when its options
are known (a non-empty list, the option columns, lettered options in its text) or, where the
options may be drawn in the image, when ``choice_when`` marks it or its answer is in the gold
form (a letter); otherwise its answer is a free value. The gold of a multiple-choice row is
read in the spec's form only: a letter, an index or an option's text that does not name one
of the row's options is **refused** with the row's id, never matched loosely or guessed.

:func:`load_rows` is every hub loader's one rule: each row read and converted into a protocol's
record, ids unique (a repeated one refused naming both rows), and only then the embedded images
written (:func:`clearsight.datasets.images.write_images`), so a refused source leaves nothing in
the cache. A path-only image must resolve inside the snapshot
(:func:`clearsight.paths.inside_source`).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal, Protocol, TypeVar

from clearsight.datasets.hub import HubSpec
from clearsight.datasets.images import write_images
from clearsight.datasets.snapshot import Located, check_schema, table_rows
from clearsight.paths import inside_source
from clearsight.validate import InputError, refuse_repeated_ids, short_repr

LETTERS: Final = "ABCDEFGHIJ"
Kind = Literal["choice", "choices", "value"]

# an option marker: "(A)", "A.", "A:", "A)", full-width forms, at the start or after a space
# or a separator
_MARKER = re.compile(r"(?:^|(?<=[\s;,，；]))(?:\(([A-J])\)|（([A-J])）|([A-J])[.．:：)])")
_LABEL = re.compile(r"(?:options?|choices?)\s*[:：]?\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class HubRow:
    """One question of a hub split, normalised.

    ``question``: the text as the dataset gives it (lettered options included where they are
    part of it); ``stem``: the question without those options; ``options``: the option texts
    (empty for a free answer, or where the options are only drawn in the image);
    ``options_in_text``: whether ``question`` lists them itself; ``gold``: the correct letter,
    letters (``"A, C"``) or free value; ``kind``: ``choice``, ``choices`` or ``value``;
    ``image``: embedded bytes, a file path, or None; ``row``: its row of the split (from 1).
    """

    id: str
    question: str
    stem: str
    options: tuple[str, ...]
    options_in_text: bool
    gold: str
    kind: Kind
    image: bytes | str | None
    category: str
    row: int = 0


def lettered_options(text: str) -> tuple[str, tuple[str, ...]]:
    """``(stem, options)`` of a text ending in lettered options (``Options: A: x, B: y``,
    ``A. x; B. y``, ``Choices:\\nA:1\\nB:2``, ``(A) x (B) y``): the last run of markers A, B,
    C, ... in order, at least two; ``(text, ())`` when there is none."""
    marks = [(m.start(), m.end(), next(g for g in m.groups() if g)) for m in _MARKER.finditer(text)]
    best: list[tuple[int, int, str]] = []
    for i, mark in enumerate(marks):
        if mark[2] != "A":
            continue
        run = [mark]
        for nxt in marks[i + 1 :]:
            if nxt[2] != LETTERS[len(run)]:
                break
            run.append(nxt)
        if len(run) >= 2:
            best = run
    if not best:
        return text.strip(), ()
    ends = [m[0] for m in best[1:]] + [len(text)]
    options = tuple(
        text[m[1] : end].strip().rstrip(",;，；").strip() for m, end in zip(best, ends, strict=True)
    )
    stem = _LABEL.sub("", text[: best[0][0]]).strip()
    return stem, options


def _text(value: Any) -> str:
    return "" if value is None else str(value).strip()


def _question(row: Mapping[str, object], spec: HubSpec) -> str:
    """The row's question text; the spec's ``stem`` where it has none (MMMU-Pro vision,
    MathVerse's vision-only rows: the question is in the image)."""
    return (_text(row.get(spec.question)) if spec.question else "") or spec.stem


def _list_options(raw: Any, form: str, key: str, spec: HubSpec) -> tuple[str, ...]:
    """Options held in a list column, or a Python list literal in a string column."""
    if form == "python_list" and isinstance(raw, str):
        try:
            raw = ast.literal_eval(raw) if raw.strip() else []
        except (ValueError, SyntaxError, RecursionError, MemoryError):
            raw = None
    if raw is None:
        return ()
    if not isinstance(raw, list | tuple) or not all(isinstance(o, str | int | float) for o in raw):
        raise InputError(
            f"{spec.name} row {key} refused: options {short_repr(raw)} are not a list of texts"
        )
    return tuple(str(o).strip() for o in raw)


def _options(row: Mapping[str, object], spec: HubSpec, key: str) -> tuple[tuple[str, ...], str]:
    """The row's options and its stem (the question without lettered options in its text)."""
    question = _question(row, spec)
    form = spec.options_form
    if form == "yes_no":
        return ("Yes", "No"), question
    if form == "columns":
        return tuple(_text(row[c]) for c in spec.options if _text(row.get(c))), question
    if form in ("list", "python_list"):
        return _list_options(row.get(spec.options[0]), form, key, spec), question
    if form == "text":
        stem, options = lettered_options(_text(row.get(spec.options[0])))
        return options, (stem or spec.stem) if spec.options[0] == spec.question else question
    return (), question


def _letters(answer: Any) -> list[str] | None:
    """The letters an answer names (``A``, ``(B)``, ``C.``, ``A, C``), or None."""
    if not isinstance(answer, str):
        return None
    parts = [p.strip().strip("()").rstrip(".:").strip() for p in re.split(r"[,，;\s]+", answer)]
    parts = [p for p in parts if p]
    if not parts or not all(len(p) == 1 and p in LETTERS for p in parts):
        return None
    return parts


def _gold(answer: Any, options: Sequence[str], spec: HubSpec, key: str) -> tuple[str, Kind]:
    """The gold of a multiple-choice row in the spec's form (module docstring)."""

    def refuse(why: str) -> InputError:
        shown = ", ".join(f"{LETTERS[i]}={short_repr(o)}" for i, o in enumerate(options[:10]))
        return InputError(
            f"{spec.name} row {key} refused: {spec.answer} {short_repr(answer)} {why} "
            f"(options: {shown or 'none listed'})"
        )

    if len(options) > len(LETTERS):
        raise refuse(f"has {len(options)} options, at most {len(LETTERS)} are lettered")
    form = spec.gold
    if form == "yes_no":
        text = _text(answer).lower().rstrip(".")
        if text in ("yes", "1", "true") or answer is True:
            return "A", "choice"
        if text in ("no", "0", "false") or answer is False:
            return "B", "choice"
        raise refuse("is not yes or no")
    if form == "index":
        if isinstance(answer, bool) or not isinstance(answer, int):
            raise refuse("is not an option index")
        if not 0 <= answer < len(options):
            raise refuse(f"is not the index of one of its {len(options)} options")
        return LETTERS[answer], "choice"
    if form == "text":
        hits = [i for i, o in enumerate(options) if o == _text(answer)]
        if len(hits) != 1:
            raise refuse("is not the text of exactly one option")
        return LETTERS[hits[0]], "choice"
    letters = _letters(answer)
    if letters is None or (form == "letter" and len(letters) != 1):
        raise refuse("is not " + ("a letter" if form == "letter" else "one or more letters"))
    outside = [x for x in letters if options and LETTERS.index(x) >= len(options)]
    if outside or len(set(letters)) != len(letters):
        raise refuse(f"names {', '.join(outside) or 'an option twice'}, not among its options")
    gold = ", ".join(sorted(letters))
    return gold, "choice" if len(letters) == 1 else "choices"


def _is_choice(row: Mapping[str, object], spec: HubSpec, options: Sequence[str]) -> bool:
    """Whether a row is multiple choice (module docstring)."""
    if spec.options_form == "yes_no":
        return True
    if spec.choice_when is not None:
        column, value = spec.choice_when
        return _text(row.get(column)) == value
    if spec.options_form == "text" and spec.gold in ("letter", "letters"):
        return bool(options) or _letters(row.get(spec.answer)) is not None
    return bool(options)


def _image(value: Any, root: Path, spec: HubSpec, key: str) -> bytes | str | None:
    """Embedded bytes or a path (relative ones under ``root``) of an Image value, or None."""
    if isinstance(value, list | tuple):
        value = value[0] if value else None
    if isinstance(value, Mapping):
        if isinstance(value.get("bytes"), bytes | bytearray) and value["bytes"]:
            return bytes(value["bytes"])
        value = value.get("path")
    if not value:
        return None
    path = inside_source(root, str(value), f"{spec.name} row {key} refused")
    if not path.is_file():
        raise InputError(
            f"{spec.name} row {key} refused: its image has no bytes and {path} does not exist"
        )
    return str(path)


def _row(row: Mapping[str, object], spec: HubSpec, key: str, root: Path, n: int) -> HubRow:
    """One question of the split (module docstring)."""
    options, stem = _options(row, spec, key)
    choice = _is_choice(row, spec, options)
    answer = row.get(spec.answer)
    if choice:
        gold, kind = _gold(answer, options, spec, key)
    else:
        gold, kind, options = _text(answer), "value", ()
        if not gold:
            raise InputError(f"{spec.name} row {key} refused: {spec.answer} is empty")
    return HubRow(
        id=key,
        question=_question(row, spec),
        stem=stem,
        options=options,
        options_in_text=spec.options_form == "text" and spec.options[0] == spec.question,
        gold=gold,
        kind=kind,
        image=_image(row.get(spec.image), root, spec, key) if spec.image else None,
        category=_text(row.get(spec.category)) if spec.category else "",
        row=n,
    )


def _questions(located: Located) -> Iterator[tuple[str, int, dict[str, object]]]:
    """``(id, row number from 1, row)`` of the split's kept rows, a list column's items
    exploded into rows."""
    spec = located.spec
    for n, row in enumerate(table_rows(located.files, spec.columns)):
        if any(_text(row.get(column)) != value for column, value in spec.keep):
            continue
        key = _text(row.get(spec.id)) if spec.id else str(n)
        if spec.explode is None:
            yield key, n + 1, row
            continue
        items = row.get(spec.explode)  # a list column (None or anything else: no rows)
        for k, item in enumerate(items if isinstance(items, list | tuple) else ()):
            yield f"{key}/{k}", n + 1, {**row, **(item if isinstance(item, Mapping) else {})}


def _image_table(located: Located) -> dict[str, object] | None:
    """Each image of the spec's image table by its key (None: the rows hold their images)."""
    table = located.spec.image_table
    if table is None:
        return None
    rows = table_rows(located.image_files, (table.key, table.image))
    return {_text(row.get(table.key)): row.get(table.image) for row in rows}


def _with_image(
    row: dict[str, object], spec: HubSpec, key: str, images: dict[str, object] | None
) -> dict[str, object]:
    """``row`` with its image column's key replaced by the image it names in the image table
    (``images``; as it is without one); InputError naming the row where the table lacks it."""
    if images is None or spec.image is None:
        return row
    ref = _text(row.get(spec.image))
    if ref not in images:
        raise InputError(
            f"{spec.name} row {key} refused: its {spec.image} {ref!r} is not in the image table"
        )
    return {**row, spec.image: images[ref]}


def hub_rows(
    located: Located, limit: int | None = None, refused: list[str] | None = None
) -> Iterator[HubRow]:
    """The rows of ``located``'s split, at most ``limit``, after its schema is checked
    (:func:`~clearsight.datasets.snapshot.check_schema`). A row that cannot be read is an
    InputError naming its id, or, given ``refused``, its message is appended there and the
    row left out (what ``clearsight instances`` / ``problems`` report)."""
    check_schema(located)
    images = _image_table(located)
    count = 0
    for key, n, row in _questions(located):
        if limit is not None and count >= limit:
            return
        try:
            out = _row(
                _with_image(row, located.spec, key, images), located.spec, key, located.root, n
            )
        except InputError as exc:
            if refused is None:
                raise
            refused.append(str(exc))
            continue
        count += 1
        yield out


class Record(Protocol):
    """What a hub loader makes of a row: a probe instance or a grounding problem, by its id."""

    @property
    def id(self) -> str: ...


R = TypeVar("R", bound=Record)


def load_rows(
    located: Located,
    convert: Callable[[HubRow], R],
    what: str,
    *,
    limit: int | None = None,
    write: bool = True,
    refused: list[str] | None = None,
) -> list[R]:
    """``convert`` of every row of ``located`` (:func:`hub_rows`, at most ``limit``): a row it
    refuses is an InputError, or, given ``refused``, its message is appended there and the row
    left out; two records under one id are an InputError naming both rows (``what``: the
    record's name, ``instance`` or ``problem``). Only then, and unless ``write`` is False, the
    rows' embedded images are written to the cache folder ``<protocol>-images/<dataset>``."""
    kept: list[tuple[HubRow, R]] = []
    for row in hub_rows(located, limit, refused):
        try:
            kept.append((row, convert(row)))
        except InputError as exc:
            if refused is None:
                raise
            refused.append(str(exc))
    where = f"{located.spec.name} ({located.root})"
    refuse_repeated_ids(((rec.id, f"{where} row {row.row}") for row, rec in kept), what)
    if write:
        write_images((row.image for row, _ in kept), image_folder(located.spec))
    return [record for _, record in kept]


def image_folder(spec: HubSpec) -> str:
    """The cache folder of a hub dataset's embedded images: ``<protocol>-images/<name>``."""
    return f"{spec.protocol}-images/{spec.name}"


def _image_provenance(spec: HubSpec) -> str:
    """Where a row's image comes from, as :func:`provenance` prints it."""
    table = spec.image_table
    if spec.image is None:
        return "none"
    if table is None:
        return f"{spec.image} (embedded bytes or a path)"
    return f"{spec.image}, a {table.key} of {', '.join(table.files)} (its {table.image})"


def provenance(spec: HubSpec) -> dict[str, str]:
    """Which column each field comes from, as ``clearsight instances`` / ``problems`` print it."""
    column = spec.options[0] if spec.options else ""
    options = {
        "list": f"{column} (a list)",
        "python_list": f"{column} (a Python list literal)",
        "columns": ", ".join(spec.options),
        "text": f"{column} (lettered options in its text)",
        "yes_no": "always Yes, No",
        "none": "none",
    }[spec.options_form]
    inner = f" (each item of {spec.explode})" if spec.explode else ""
    free = "; without options: a free value" if spec.protocol == "grounding" else ""
    out = {
        "id": spec.id or "row number" + (f"/item of {spec.explode}" if spec.explode else ""),
        "question": (spec.question + inner) if spec.question else f"none: {spec.stem!r}",
        "options": options,
        "gold": f"{spec.answer}{inner} ({spec.gold}{free})",
        "image": _image_provenance(spec),
    }
    if spec.protocol == "probe":
        out["category"] = spec.category or "none"
    if spec.keep:
        out["rows kept"] = ", ".join(f"{c} == {v!r}" for c, v in spec.keep)
    if spec.choice_when:
        out["multiple choice when"] = f"{spec.choice_when[0]} == {spec.choice_when[1]!r}"
    return out
