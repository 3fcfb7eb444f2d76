"""JSON with the key names of its objects stored once: the run store's encoding of specs,
raw outputs and read-outs.

A run holds millions of objects with the same few sets of keys (every read-out of a letter
wording has ``chance, n_options, answer, ...``); writing the names into every row was about a
third of a row's bytes. Packed form, applied recursively:

* an object ``{k1: v1, ..., kn: vn}`` becomes the array ``[s, v1, ..., vn]`` where ``s >= 1``
  is the id of its *shape*, the key tuple ``(k1, ..., kn)`` in order (a table of the store);
* an array ``[v1, ..., vn]`` becomes ``[0, v1, ..., vn]`` (so it is told from an object);
* every other value (string, number, boolean, null) is itself.

Unpacking inverts it exactly, key order included, so a value read back equals the value
written. :class:`Shapes` is the in-memory side of the shape table: the store loads it, asks it
for ids while packing and saves the shapes it added in the same transaction.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["Shapes", "pack", "unpack"]


class Shapes:
    """Shape id <-> key tuple, as read from the store, plus the shapes added since (``new``)."""

    def __init__(self, rows: Iterable[tuple[int, str]] = ()) -> None:
        """Start from stored ``(id, keys JSON)`` rows."""
        self.ids: dict[tuple[str, ...], int] = {}
        self.keys: dict[int, tuple[str, ...]] = {}
        self.new: list[tuple[int, str]] = []
        self.next_id = 1
        self.add_rows(rows)

    def add_rows(self, rows: Iterable[tuple[int, str]]) -> None:
        """Learn stored shapes (a reader catching up with its writer)."""
        for shape_id, text in rows:
            keys = tuple(json.loads(text))
            self.ids[keys] = shape_id
            self.keys[shape_id] = keys
            self.next_id = max(self.next_id, shape_id + 1)

    def id_of(self, obj: Mapping[Any, Any]) -> int:
        """The id of the shape of ``obj`` (a new id, remembered in :attr:`new`, if unseen)."""
        keys = tuple(obj)
        found = self.ids.get(keys)
        if found is not None:
            return found
        if not all(type(k) is str for k in keys):  # JSON turns keys into strings: do it here
            keys = tuple(json.loads(json.dumps(dict.fromkeys(obj))))
            found = self.ids.get(keys)
            if found is not None:
                return found
        shape_id = self.next_id
        self.next_id += 1
        self.ids[keys] = shape_id
        self.keys[shape_id] = keys
        self.new.append((shape_id, json.dumps(list(keys), ensure_ascii=False)))
        return shape_id

    def forget_new(self) -> None:
        """Drop the shapes added since the last save (their transaction was rolled back)."""
        for shape_id, _ in self.new:
            del self.ids[self.keys.pop(shape_id)]
        self.next_id = max(self.keys, default=0) + 1
        self.new.clear()


_SCALARS = frozenset({str, int, float, bool, type(None)})


def pack(value: Any, shapes: Shapes) -> Any:
    """``value`` in packed form (see the module docstring); numpy values become plain ones."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is dict or isinstance(value, Mapping):
        out: list[Any] = [shapes.id_of(value)]
        out += [v if type(v) in _SCALARS else pack(v, shapes) for v in value.values()]
        return out
    if kind is list or kind is tuple:
        return [0, *(v if type(v) in _SCALARS else pack(v, shapes) for v in value)]
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return pack(value.tolist(), shapes)
    return value  # dates, paths: the store's JSON encoder writes them as strings


def unpack(value: Any, shapes: Shapes) -> Any:
    """The value a packed ``value`` stands for (KeyError: a shape id the table lacks)."""
    if type(value) is not list:
        return value
    head = value[0]
    if head == 0:
        return [v if type(v) is not list else unpack(v, shapes) for v in value[1:]]
    keys = shapes.keys[head]
    return {
        k: v if type(v) is not list else unpack(v, shapes)
        for k, v in zip(keys, value[1:], strict=True)
    }
