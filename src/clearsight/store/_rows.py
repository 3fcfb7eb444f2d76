"""An item's key and its stored row in one pass: the store's fast path for typed specs.

Adding 1.8 million sweep items spent most of its time encoding each spec twice —
the canonical JSON of :attr:`clearsight.specs.Spec.key` (sorted keys, parts by their content
hash) and the packed JSON the store keeps (:mod:`clearsight.store._packed`, parts by their row id)
— through :func:`json.dumps` on a fresh dict per item. Both texts are made of the same field
values, and most of those values repeat across items (a category, a condition, a wording, a
model name, a scene's box, a shared part), so :class:`RowEncoder` writes each value's two JSON
pieces once, keeps them, and joins the pieces of an item in key order and in stored order.

The result is the generic encoding exactly: the same key (``sha256`` of the same text) and a
stored text that unpacks to the same value (``tests/test_spec_rows.py`` checks both on random
values of a test spec and on every item of a sweep; the protocols' own tests read back what
their kinds store). A field whose value is not a scalar, a tuple of scalars or a part
(a nested dataclass such as a shuffled control's ``shown``) is encoded by the generic functions
for that field alone.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from clearsight.seeding import canonical_json
from clearsight.specs import Part, Spec, to_plain
from clearsight.store._packed import Shapes, pack

__all__ = ["RowEncoder", "key_encoder"]

_SCALAR_TYPES = (str, int, float, bool, type(None))

#: Most strings, and most tuples and parts, an encoder remembers before it starts again.
CACHE_LIMIT = 1 << 16


def _number(value: int | float) -> str:
    """JSON text of an int or a float, as :mod:`json` writes it (NaN and infinities as tokens)."""
    if type(value) is int:
        return int.__repr__(value)
    if math.isfinite(value):
        return float.__repr__(value)
    return "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")


class RowEncoder:
    """Key and stored row of the items of one spec class (see the module docstring).

    ``part_id(digest, json)``: the store's id of a part (added if new); ``stored_json(value)``:
    the store's packed JSON text of a plain value. Pieces are remembered by value for strings
    and by identity for tuples and parts (the same object is shared by many items; the cache
    holds it, so its id is not reused), up to :data:`CACHE_LIMIT` of each.
    """

    def __init__(
        self,
        cls: type[Spec],
        shapes: Shapes,
        part_id: Callable[[str, Any], int],
        stored_json: Callable[[Any], str],
    ) -> None:
        fields = cls._stored_fields()
        self._fields = fields
        self._names = tuple(name for name, _ in fields)
        self._head = f"[{json.dumps(cls.kind, ensure_ascii=False)},{{"
        self._parts = frozenset(cls.parts)
        self._shapes = shapes
        self._shape_ids: dict[tuple[bool, ...], int] = {}
        self._part_id = part_id
        self._stored_json = stored_json
        self._strings: dict[str, str] = {}
        self._objects: dict[int, tuple[Any, str, str]] = {}
        self._entries: dict[int, tuple[Mapping[str, object], dict[str, tuple[str, str, int]]]] = {}
        self._layouts: dict[tuple[tuple[str, ...], ...], _Layout] = {}
        self._mask_shapes: dict[int, str] = {}
        namespace = {
            "S": self._strings,
            "new_str": self._string,
            "int_repr": int.__repr__,
            "number": _number,
            "O": self._objects,
            "slow": self._pieces,
            "shape": self._shape,
            "sha": hashlib.sha256,
            "P": json.dumps(cls.kind, ensure_ascii=False),
        }
        exec(_row_source(fields, self._parts), namespace)  # our own code, from identifiers
        self.row = cast(Callable[[Spec], tuple[str, bytes, str]], namespace["row"])
        """``(key, its 32 bytes, packed stored spec)`` of an item of the class."""

    def _string(self, value: str) -> str:
        """JSON of a string not seen before (remembered; the cache starts again when full)."""
        if len(self._strings) >= CACHE_LIMIT:
            self._strings.clear()
        piece = self._strings[value] = json.dumps(value, ensure_ascii=False)
        return piece

    def _shape(self, present: tuple[bool, ...]) -> int:
        """Shape id of the stored object with the fields ``present``."""
        found = self._shape_ids.get(present)
        if found is None:
            names = dict.fromkeys(n for n, p in zip(self._names, present, strict=True) if p)
            found = self._shape_ids[present] = self._shapes.id_of(names)
        return found

    def _pieces(self, name: str, value: Any) -> tuple[str, str]:
        """(key JSON, stored JSON) of one field's value."""
        kind = type(value)
        if name in self._parts and not isinstance(value, Part):
            raise TypeError(f"{name} is a part but holds {value!r}")
        if kind is str:
            piece = self._strings.get(value)
            if piece is None:
                piece = self._string(value)
            return piece, piece
        if kind is int or kind is float:
            piece = _number(value)
            return piece, piece
        if value is None or kind is bool:
            piece = "null" if value is None else ("true" if value else "false")
            return piece, piece
        cached = self._objects.get(id(value))
        if cached is not None and cached[0] is value:
            return cached[1], cached[2]
        if name in self._parts:
            pieces = (f'"{value.digest}"', str(self._part_id(value.digest, value.json)))
        elif kind is tuple and all(type(v) in _SCALAR_TYPES for v in value):
            items = [self._pieces(name, v) for v in value]
            keyed = ",".join(k for k, _ in items)
            pieces = (f"[{keyed}]", f"[0,{','.join(s for _, s in items)}]" if items else "[0]")
        else:  # nested values: the generic encoding, this field alone, never cached
            plain = to_plain(value)
            return canonical_json(plain), self._stored_json(pack(plain, self._shapes))
        if len(self._objects) >= CACHE_LIMIT:  # tuples made afresh per item would pile up
            self._objects.clear()
        self._objects[id(value)] = (value, *pieces)
        return pieces

    # ------------------------------------------------------------------------ grids of items

    def grid_rows(
        self, names: tuple[tuple[str, ...], ...], groups: Sequence[Sequence[Mapping[str, object]]]
    ) -> tuple[list[bytes], list[str]]:
        """The key digests and the packed stored texts of every item of the product of
        ``groups`` (entries naming the fields ``names`` of their group; a grid's groups with its
        defaults as a group of one entry: :attr:`clearsight.store._items.SpecGrid.product`), in
        order.

        The fields of the last group ("inner") and of the others ("outer") alternate in runs,
        in the key's sorted order and in the stored order alike; each outer combination's runs
        and each inner entry's runs are joined once, so an item costs the join of its runs and
        one SHA-256. The shape of the stored object follows from the fields left out (None
        where :data:`~clearsight.specs.OMIT_NONE`), one bit per field.
        """
        layout = self._layouts.get(names)
        if layout is None:
            layout = self._layouts[names] = _Layout.of(self._fields, frozenset(names[-1]))
        inner = [layout.join(self._entry_pieces(entry)) for entry in groups[-1]]
        # stored: "[<shape id>", the runs, "]"; the key: the runs, each piece led by a comma
        keyed, stored = [""] * layout.key_slots, ["", *[""] * layout.stored_slots, "]"]
        head, sha = self._head, hashlib.sha256
        key_inner, stored_inner = layout.key_inner, layout.stored_inner
        digests: list[bytes] = []
        texts: list[str] = []
        shaped: dict[int, list[tuple[list[str], list[str], str]]] = {}
        for combo in itertools.product(*groups[:-1]):
            pieces: dict[str, tuple[str, str, int]] = {}
            for entry in combo:
                pieces.update(self._entry_pieces(entry))
            outer_keys, outer_stored, outer_mask = layout.join(pieces, outer=True)
            keyed[layout.key_outer] = outer_keys
            stored[layout.stored_outer] = outer_stored
            with_shapes = shaped.get(outer_mask)
            if with_shapes is None:  # each inner entry's runs, and the shape it gives here
                with_shapes = shaped[outer_mask] = [
                    (k, s, self._mask_shape(outer_mask | m)) for k, s, m in inner
                ]
            for inner_keys, inner_stored, shape in with_shapes:
                keyed[key_inner] = inner_keys
                stored[stored_inner] = inner_stored
                stored[0] = shape
                body = "".join(keyed)
                digests.append(sha(f"{head}{body[1:]}}}]".encode()).digest())
                texts.append("".join(stored))
        return digests, texts

    def _entry_pieces(self, entry: Mapping[str, object]) -> dict[str, tuple[str, str, int]]:
        """Per stored field of a grid entry: its key piece (``,"name":json``), its stored
        piece (``,json``) and its bit when left out (then both pieces are empty); kept per
        entry object while the entry is alive in the cache."""
        cached = self._entries.get(id(entry))
        if cached is not None and cached[0] is entry:
            return cached[1]
        out: dict[str, tuple[str, str, int]] = {}
        for i, (name, omit) in enumerate(self._fields):
            if name not in entry:
                continue
            value = entry[name]
            if value is None and omit:
                out[name] = ("", "", 1 << i)
            else:
                key, stored = self._pieces(name, value)
                out[name] = (f',"{name}":{key}', f",{stored}", 0)
        if len(self._entries) >= CACHE_LIMIT:
            self._entries.clear()
        self._entries[id(entry)] = (entry, out)
        return out

    def _mask_shape(self, mask: int) -> str:
        """``[`` and the shape id of the stored object whose left-out fields are the bits of
        ``mask``: the start of its stored text."""
        found = self._mask_shapes.get(mask)
        if found is None:
            present = tuple(not mask >> i & 1 for i in range(len(self._fields)))
            found = self._mask_shapes[mask] = f"[{self._shape(present)}"
        return found


@dataclass(frozen=True)
class _Layout:
    """Where a grid's inner and outer fields sit: their runs in the key's sorted order and in
    the stored order, and the slots (every other one) each side's joined runs fill."""

    key_runs: tuple[tuple[tuple[str, ...], ...], tuple[tuple[str, ...], ...]]
    stored_runs: tuple[tuple[tuple[str, ...], ...], tuple[tuple[str, ...], ...]]
    key_outer: slice
    key_inner: slice
    key_slots: int
    stored_outer: slice
    stored_inner: slice
    stored_slots: int

    @classmethod
    def of(cls, fields: Sequence[tuple[str, bool]], inner: frozenset[str]) -> _Layout:
        """The layout of a spec class's stored ``fields`` with ``inner`` the last group's."""
        names = [name for name, _ in fields]
        key = _runs(sorted(names), inner, 0)
        stored = _runs(names, inner, 1)  # after the shape
        return cls(key[0], stored[0], *key[1], *stored[1])

    def join(
        self, pieces: Mapping[str, tuple[str, str, int]], *, outer: bool = False
    ) -> tuple[list[str], list[str], int]:
        """One side's joined key runs, joined stored runs and left-out bits, from the pieces
        of its fields."""
        side = 0 if outer else 1
        keys = ["".join(pieces[n][0] for n in run) for run in self.key_runs[side]]
        stored = ["".join(pieces[n][1] for n in run) for run in self.stored_runs[side]]
        mask = 0
        for run in self.stored_runs[side]:
            for n in run:
                mask |= pieces[n][2]
        return keys, stored, mask


def _runs(
    order: Sequence[str], inner: frozenset[str], start: int
) -> tuple[
    tuple[tuple[tuple[str, ...], ...], tuple[tuple[str, ...], ...]], tuple[slice, slice, int]
]:
    """The outer and inner runs of ``order`` (maximal stretches of one side's fields) and the
    slots they take from index ``start`` on: (outer slice, inner slice, number of slots)."""
    runs = [tuple(run) for _, run in itertools.groupby(order, key=lambda n: n in inner)]
    first_inner = bool(order) and order[0] in inner
    outer_runs, inner_runs = (runs[1::2], runs[0::2]) if first_inner else (runs[0::2], runs[1::2])
    stop = start + len(runs)
    outer, other = slice(start, stop, 2), slice(start + 1, stop, 2)
    slots = (other, outer) if first_inner else (outer, other)
    return (tuple(outer_runs), tuple(inner_runs)), (*slots, len(runs))


_KEY_ENCODERS: dict[type[Spec], RowEncoder] = {}


def key_encoder(cls: type[Spec]) -> RowEncoder:
    """An encoder of ``cls`` for keys alone, outside any store (its stored texts name no real
    part or shape ids); one per class, its caches bounded as every encoder's."""
    found = _KEY_ENCODERS.get(cls)
    if found is None:
        found = _KEY_ENCODERS[cls] = RowEncoder(cls, Shapes(), lambda digest, value: 0, json.dumps)
    return found


def _row_source(fields: tuple[tuple[str, bool], ...], parts: frozenset[str]) -> str:
    """Source of ``row(item)`` for a spec class with stored ``fields`` ((name, omitted while
    None); names are identifiers; ``P`` is the JSON of the kind; ``parts`` the fields holding
    a part): each field's two pieces (:func:`_field_lines`), then the key text in sorted field
    order and the stored text in field order (:func:`_text_lines`)."""
    lines = ["def row(item):"]
    for i, (name, omit) in enumerate(fields):
        lines += _field_lines(i, name, omit, name in parts)
    lines += _text_lines(fields)
    lines += [
        "    digest = sha(text.encode()).digest()",
        "    return digest.hex(), digest, stored",
    ]
    return "\n".join(lines) + "\n"


def _field_lines(i: int, name: str, omit: bool, part: bool) -> list[str]:
    """Lines of ``row`` setting ``k<i>`` and ``s<i>``, the key and stored pieces of field
    ``name`` (None for both when it is left out while None): strings and shared objects from
    the caches, numbers by ``repr``, the rest by :meth:`RowEncoder._pieces`; a part by its
    cached pieces, or by ``slow`` (which refuses a value that is no part)."""
    if part:
        lookup = [
            "c = O.get(id(x))",
            "if c is not None and c[0] is x:",
            f"    k{i} = c[1]",
            f"    s{i} = c[2]",
            "else:",
            f"    k{i}, s{i} = slow({name!r}, x)",
        ]
        pad = "        " if omit else "    "
        lines = [f"    x = item.{name}"]
        if omit:
            lines += ["    if x is None:", f"        k{i} = s{i} = None", "    else:"]
        return lines + [pad + line for line in lookup]
    return [
        f"    x = item.{name}",
        "    if type(x) is str:",
        f"        k{i} = S.get(x)",
        f"        if k{i} is None:",
        f"            k{i} = new_str(x)",
        f"        s{i} = k{i}",
        "    elif x is None:",
        f"        k{i} = s{i} = {'None' if omit else repr('null')}",
        "    elif type(x) is int:",
        f"        k{i} = s{i} = int_repr(x)",
        "    elif type(x) is float:",
        f"        k{i} = s{i} = number(x)",
        "    else:",
        "        c = O.get(id(x))",
        "        if c is not None and c[0] is x:",
        f"            k{i} = c[1]",
        f"            s{i} = c[2]",
        "        else:",
        f"            k{i}, s{i} = slow({name!r}, x)",
    ]


def _text_lines(fields: tuple[tuple[str, bool], ...]) -> list[str]:
    """Lines of ``row`` joining the pieces into ``text`` (the key's JSON) and ``stored`` (the
    packed stored spec): one pair of f-strings per pattern of omitted fields, chosen by the
    mask ``m`` of the fields left out."""
    omittable = [i for i, (_, omit) in enumerate(fields) if omit]
    mask = " | ".join(f"((k{i} is None) << {b})" for b, i in enumerate(omittable)) or "0"
    lines = [f"    m = {mask}"]
    for pattern in range(2 ** len(omittable)):
        gone = {i for b, i in enumerate(omittable) if pattern >> b & 1}
        shown = [i for i in range(len(fields)) if i not in gone]
        ordered = sorted(shown, key=lambda i: fields[i][0])
        key = ",".join(f'"{fields[i][0]}":{{k{i}}}' for i in ordered)
        present = tuple(i in shown for i in range(len(fields)))
        stored = "".join(f",{{s{i}}}" for i in shown)
        lines += [
            f"    {'if' if pattern == 0 else 'elif'} m == {pattern}:",
            f"        text = f'[{{P}},{{{{{key}}}}}]'",
            f"        stored = f'[{{shape({present!r})}}{stored}]'",
        ]
    return lines
