"""Run configurations as data: loaded from YAML, with the command line's values laid over them.

:func:`load_config` reads any configuration (the sweep's
:class:`~clearsight.sweep.config.SweepConfig`, grounding's, the probe's, the build's, a
command's options) from a YAML file of its fields, with the command line's values laid over
the file: the one loader of every ``--config``. :func:`parse_assignment` reads one
``--set FIELD=VALUE`` (a dotted field path and a YAML value). The resolved configuration is
written to every run's manifest, and its content hash guards a run directory against records of
a different configuration.

A file is read within bounds (:func:`load_yaml`). PyYAML's safe loader shares an aliased node
instead of copying it, so a "billion laughs" file of nine lines loads at once into a tree that
is small in memory but astronomically large to walk: any later walk over it (the credential
scan, validation) never ends. And it composes nested collections by recursion, so a deeply
nested file is a ``RecursionError``. :func:`load_yaml` refuses both while the document is
composed, before anything walks it: the nodes brought in through aliases, counted as the tree
they expand to, may add up to :data:`MAX_ALIASED_NODES`, and collections may nest
:data:`MAX_DEPTH` deep. Either refusal is a :class:`yaml.YAMLError` with the line and column
where it happened, like any other YAML error; so is a scalar its tag cannot read (a date
``2001-02-30``), which the safe loader raises as a bare ``ValueError``.
"""

from __future__ import annotations

import codecs
import dataclasses
import enum
import typing
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, TypeVar, cast

import yaml
from pydantic import BaseModel, ValidationError
from yaml.composer import ComposerError
from yaml.constructor import ConstructorError
from yaml.error import Mark
from yaml.nodes import MappingNode, Node, SequenceNode
from yaml.scanner import ScannerError

from clearsight.credentials import refuse_credentials
from clearsight.validate import InputError, invalid, invalid_options, short_repr


class _Null(enum.Enum):
    NULL = "null"


NULL: Final = _Null.NULL
"""An override that sets its field to None (``--generator none``); a None override is a flag
the user did not give, which leaves the field as it is."""

#: One value laid over a configuration: the field's path (``("uot", "depth")``) and its value.
Assignment = tuple[tuple[str, ...], object]

M = TypeVar("M")


def load_config(
    path: Path | None,
    model: type[M],
    overrides: Mapping[str, object] | None = None,
    assignments: Sequence[Assignment] = (),
    *,
    what: str | None = None,
    sources: Mapping[str, str] | None = None,
    adjust: Callable[[dict[str, object]], dict[str, object]] | None = None,
) -> M:
    """A ``model`` (a protocol's configuration or a command's options: a pydantic model or a
    dataclass) from
    the YAML file at ``path`` of its fields (None: no file), with ``overrides`` and then
    ``assignments`` laid over the file: the one way every command reads ``--config`` and the
    values given on its command line.

    An override of None is a flag the user did not give: the file's value stands, else the
    model's default; :data:`NULL` sets a field to None; a mapping over a mapping sets only its
    keys. An assignment sets the field at its path to its value, replacing what was there (a
    mapping included: ``wording_scenes={}`` empties the file's), creating the mappings on the
    way from the file's or else the field's default (a dotted path sets one key of a mapping);
    None assigned to a mapping or list field that may not be None empties it. ``adjust`` sees
    the data last, before validation (a command narrows what a flag made inconsistent).
    Everything wrong (an unreadable file, bad YAML, a key the model does not know, a bad value
    from the file or the command line) is one :class:`InputError` line naming each bad field
    and where it came from (:func:`invalid_options`): ``sources`` maps the fields the command
    line set to the option that set them; the others came from the file. ``what`` names the
    configuration (default: from the model's name, ``sweep config`` for a SweepConfig). A key
    naming a credential anywhere in it is refused first, its value never quoted
    (:func:`~clearsight.credentials.refuse_credentials`).
    """
    what = what or f"{model.__name__.removesuffix('Config').lower()} config"
    data = _overlay(_read_yaml(path, what) if path is not None else {}, overrides or {})
    for keys, value in assignments:
        if value is None and len(keys) == 1:
            value = _emptied(model, keys[0])
        data = _assign(data, keys, value, _default_mapping(model, keys[0]))
    if adjust is not None:
        data = adjust(data)
    refuse_credentials(data, what, path)
    return _validated(model, data, what, path, sources or {})


def parse_assignment(text: str) -> Assignment:
    """``FIELD=VALUE`` (what ``--set`` takes) as the field's path and its value: the field's
    names joined by dots (``uot.depth``, ``model_options.batch_size``), the value read as YAML
    (``3`` an integer, ``[fog, water]`` a list, ``null`` None, ``{k: 1}`` a mapping; anything
    else a string). A text without ``=``, an empty name in the path, a path deeper than a file
    may nest (:data:`MAX_DEPTH`) or a value that is not YAML is an :class:`InputError` naming
    the text."""
    path, sep, value = text.partition("=")
    if not sep:
        raise InputError(f"--set {text!r}: give FIELD=VALUE (a dotted FIELD for a nested field)")
    keys = tuple(key.strip() for key in path.split("."))
    if len(keys) > MAX_DEPTH:
        raise InputError(
            f"--set {short_repr(text)}: the field path nests {len(keys)} names deep, at most "
            f"{MAX_DEPTH} (as a configuration file may)"
        )
    if not all(keys):
        raise InputError(f"--set {text!r}: {path!r} is not a field path (names joined by dots)")
    try:
        return keys, load_yaml(value)
    except yaml.YAMLError as exc:
        raise InputError(
            f"--set {text!r}: the value is not valid YAML: {_yaml_problem(exc)}"
        ) from None


def _validated(
    model: type[Any],
    data: dict[str, object],
    what: str,
    path: Path | None,
    sources: Mapping[str, str],
) -> Any:
    """``data`` as a ``model``: a pydantic model validates it (its errors naming where each
    field came from: ``sources``, else ``path``); a dataclass refuses a key it does not have
    and checks its values itself (its ``__post_init__``)."""
    if issubclass(model, BaseModel):
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            raise invalid_options(exc, what, path, sources, model.model_fields) from exc
    known = {f.name for f in dataclasses.fields(model)}
    unknown = [key for key in data if key not in known]
    if unknown:
        raise invalid(what, "; ".join(f"{key}: unknown field" for key in unknown), path)
    return model(**data)


def _emptied(model: type[Any], name: str) -> object:
    """What None assigned to ``model``'s field ``name`` means: None where the field may be
    None, else the empty value of a mapping or list field (``--set wording_scenes=null``)."""
    fields = getattr(model, "model_fields", {})
    if name not in fields:
        return None
    annotation = fields[name].annotation
    if type(None) in typing.get_args(annotation):
        return None
    origin = typing.get_origin(annotation)
    if origin in (dict, Mapping):
        return {}
    return [] if origin in (list, tuple, Sequence) else None


def _default_mapping(model: type[Any], name: str) -> Mapping[str, object]:
    """The default of ``model``'s field ``name`` as a mapping (a nested model dumped), where
    it is one: what a nested field set on the command line starts from when the file leaves
    the field out (``--set model_options.device=cpu`` keeps the default batch size)."""
    if not issubclass(model, BaseModel) or name not in model.model_fields:
        return {}
    default = model.model_fields[name].get_default(call_default_factory=True)
    if isinstance(default, BaseModel):
        return default.model_dump(mode="json")
    return default if isinstance(default, Mapping) else {}


def _read_yaml(path: Path, what: str) -> dict[str, object]:
    """The mapping of fields in the YAML file ``path`` (empty for an empty file), read within
    the bounds of :func:`load_yaml` (an alias bomb or deep nesting is
    refused before anything walks the tree)."""
    try:
        data = load_yaml(_utf8_text(path.read_bytes(), what, path))
    except OSError as exc:
        raise invalid(what, f"cannot read the file: {exc.strerror or exc}", path) from exc
    except yaml.YAMLError as exc:
        raise invalid(what, f"not valid YAML: {_yaml_problem(exc)}", path) from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise invalid(
            what, f"the file must hold a mapping of fields, got {type(data).__name__}", path
        )
    return data


def _utf8_text(data: bytes, what: str, path: Path) -> str:
    """``data`` decoded as UTF-8 (a byte-order mark dropped); anything else (UTF-16, a binary
    file) is one error line saying where the first bad byte is."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise invalid(what, "the file is UTF-16 text: save it as UTF-8", path)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise invalid(
            what,
            f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}): a "
            "configuration is a YAML text file in UTF-8",
            path,
        ) from None


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """Where in the file and what: PyYAML's own message spreads over several lines."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None)
    if mark is not None and problem:
        return f"line {mark.line + 1}, column {mark.column + 1}: {problem}"
    return str(exc)


def _overlay(base: Mapping[str, object], overrides: Mapping[str, object]) -> dict[str, object]:
    """``base`` with the given ``overrides`` laid over it (see :func:`load_config`)."""
    merged = dict(base)
    for key, value in overrides.items():
        if value is None:
            continue
        below = merged.get(key)
        if value is NULL:
            merged[key] = None
        elif isinstance(value, Mapping) and isinstance(below, Mapping):
            merged[key] = _overlay(below, value)
        else:
            merged[key] = value
    return merged


def _assign(
    base: Mapping[str, object], keys: tuple[str, ...], value: object, default: Mapping[str, object]
) -> dict[str, object]:
    """``base`` with ``value`` at the path ``keys`` (see :func:`load_config`); ``default`` is
    what the first key's mapping starts from when ``base`` has none."""
    head, rest = keys[0], keys[1:]
    merged = dict(base)
    below = merged.get(head, default)
    if rest:
        merged[head] = _assign(below if isinstance(below, Mapping) else {}, rest, value, {})
    else:
        merged[head] = value
    return merged


# --- YAML within bounds ---------------------------------------------------------------

#: Most nodes that aliases may bring into a document, each alias counted as the whole tree it
#: stands for (a configuration that reuses a block a few times stays far below it).
MAX_ALIASED_NODES: Final = 10_000
#: Deepest nesting of collections (a run's configuration nests five or six levels).
MAX_DEPTH: Final = 100


class _BoundedLoader(yaml.SafeLoader):
    """The safe loader, counting while it composes (see the module docstring)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._aliased = 0
        #: Nodes each composed collection expands to (by ``id``; the tree keeps them alive).
        self._sizes: dict[int, int] = {}

    def fetch_flow_collection_start(self, token_class: Any) -> None:
        """Open a ``[`` or ``{`` collection, refusing one nested past :data:`MAX_DEPTH` (the
        scanner's work grows with the square of the depth of flow collections)."""
        if self.flow_level >= MAX_DEPTH:
            raise ScannerError(
                None, None, f"collections nested more than {MAX_DEPTH} deep", self.get_mark()
            )
        super().fetch_flow_collection_start(token_class)

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        """Compose one node, refusing alias expansion and nesting past the bounds."""
        event = self.peek_event()  # type: ignore[no-untyped-call]  # PyYAML's stubs
        if isinstance(event, yaml.AliasEvent):
            node = super().compose_node(parent, index)
            self._aliased += self._sizes.get(id(node), 1)
            if self._aliased > MAX_ALIASED_NODES:
                raise ComposerError(
                    None,
                    None,
                    f"aliases expand to more than {MAX_ALIASED_NODES} nodes (an alias bomb?)",
                    cast("Mark", event.start_mark),
                )
            return node
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise ComposerError(
                None,
                None,
                f"collections nested more than {MAX_DEPTH} deep",
                cast("Mark", event.start_mark),
            )
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        if isinstance(node, SequenceNode | MappingNode):
            self._sizes[id(node)] = 1 + sum(self._sizes.get(id(c), 1) for c in _children(node))
        return node

    def construct_object(self, node: Node, deep: bool = False) -> Any:
        """Construct one value; a scalar its tag cannot read (``2001-02-30``, ``!!int x``)
        is a :class:`yaml.YAMLError` at its line and column, not a ``ValueError``."""
        try:
            return super().construct_object(node, deep)
        except (ValueError, OverflowError) as exc:
            raise ConstructorError(
                None, None, f"cannot read the value: {exc}", node.start_mark
            ) from None


def _children(node: SequenceNode | MappingNode) -> list[Node]:
    """The nodes directly inside a collection (a mapping's keys and values)."""
    if isinstance(node, SequenceNode):
        return list(node.value)
    return [part for pair in node.value for part in pair]


def load_yaml(text: str) -> Any:
    """The one document in ``text``, as :func:`yaml.safe_load` reads it, within the bounds of
    the module docstring (:class:`yaml.YAMLError` past them)."""
    loader = _BoundedLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()
