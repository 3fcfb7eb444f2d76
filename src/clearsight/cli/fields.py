"""A configuration's fields as command-line options: what each field is called, takes and means.

:func:`config_fields` lists the fields of a configuration (a pydantic model, or a dataclass
whose attributes carry docstrings) with their types, defaults and descriptions; :func:`shape_of`
says what kind of option a field's type makes, and :func:`option_value` turns what the command
line gave into the field's value:

* a ``bool`` is a flag pair ``--name/--no-name``;
* a list or tuple takes comma-separated values, and is repeatable (``none``: empty, or None
  where the field may be None);
* a mapping or a nested model takes a YAML mapping (``'{batch_size: 8}'``), which replaces the
  file's (``none``: empty, or None where the field may be None);
* a field of any type (``Any``) or of any JSON value (pydantic's ``JsonValue``, as backend
  options' entries are) takes a YAML value;
* anything else takes one value, converted to an ``int``, ``float`` or path where the field is
  one (``none``: None, where a text field may be None).

Nothing here imports a configuration, nor pydantic or YAML at import: :mod:`clearsight.cli.generate`
hands the model in when a command is built.
"""

from __future__ import annotations

import ast
import dataclasses
import enum
import inspect
import itertools
import textwrap
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

Kind = Literal["flag", "list", "mapping", "yaml", "value"]

#: What ``none`` gives a field that may be None, or a list (emptied).
NONE = "none"


@dataclass(frozen=True)
class ConfigField:
    """One field of a configuration: its name, type, default and description."""

    name: str
    annotation: Any
    default: Any
    description: str
    required: bool = False


@dataclass(frozen=True)
class Shape:
    """What kind of option a field makes (see the module docstring): ``kind``, the type one
    value is converted to (``value`` kind), and whether the field may be None."""

    kind: Kind
    type: type[Any] = str
    optional: bool = False


def config_fields(model: type[Any]) -> dict[str, ConfigField]:
    """The fields of ``model`` in order: a pydantic model's ``model_fields``, or a dataclass's
    fields with their attribute docstrings as descriptions (a type named only for type
    checking counts as ``Any``)."""
    from pydantic import BaseModel  # here, not at start-up: the command line starts without it

    if issubclass(model, BaseModel):
        return {
            name: ConfigField(
                name,
                f.annotation,
                None if f.is_required() else f.get_default(call_default_factory=True),
                f.description or "",
                f.is_required(),
            )
            for name, f in model.model_fields.items()
        }
    docs = _attribute_docs(model)
    hints = _dataclass_hints(model)
    return {
        f.name: ConfigField(f.name, hints[f.name], _dataclass_default(f), docs.get(f.name, ""))
        for f in dataclasses.fields(model)
    }


def field_at(model: type[Any], keys: Sequence[str]) -> ConfigField:
    """The field at the dotted path ``keys`` of ``model``, through nested models and mappings
    (a mapping's entry: its value type, no default or description; past anything else:
    ``Any``); a KeyError for a field ``model`` does not have."""
    from pydantic import BaseModel

    found = config_fields(model)[keys[0]]
    for key in keys[1:]:
        inner = _without_none(found.annotation)[0]
        if isinstance(inner, type) and issubclass(inner, BaseModel):
            found = config_fields(inner)[key]
        elif typing.get_origin(inner) in (dict, Mapping):
            found = ConfigField(key, typing.get_args(inner)[1], None, "")
        else:
            found = ConfigField(key, Any, None, "")
    return found


def shape_of(annotation: Any) -> Shape:
    """The kind of option a field of type ``annotation`` makes (see the module docstring)."""
    from pydantic import BaseModel, JsonValue

    inner, optional = _without_none(annotation)
    origin = typing.get_origin(inner)
    if inner is bool:
        return Shape("flag", bool, optional)
    if origin in (tuple, list, set, frozenset) or origin is Sequence:
        return Shape("list", str, optional)
    if origin in (dict, Mapping) or (isinstance(inner, type) and issubclass(inner, BaseModel)):
        return Shape("mapping", str, optional)
    if inner is Any or inner is JsonValue:
        return Shape("yaml", str, optional)
    if origin is Literal:
        kinds = {type(v) for v in typing.get_args(inner)}
        return Shape("value", kinds.pop() if len(kinds) == 1 else str, optional)
    if inner in (int, float, Path):
        return Shape("value", inner, optional)
    return Shape("value", str, optional)


def option_value(shape: Shape, given: Any) -> Any:
    """The field's value from what the command line ``given`` for it (see the module
    docstring); a YAML value that is not YAML is an InputError saying so."""
    if shape.kind == "list":
        values = [v.strip() for item in given for v in str(item).split(",") if v.strip()]
        if values == [NONE]:
            return None if shape.optional else []
        return values
    if shape.kind == "mapping" and given == NONE:
        return None if shape.optional else {}
    if shape.kind in ("mapping", "yaml"):
        from clearsight.config import parse_assignment

        return parse_assignment(f"value={given}")[1]
    if shape.optional and given == NONE:
        return None
    return given


def default_text(shape: Shape, default: Any) -> str:
    """How ``--help`` shows a field's default, in the form the option takes."""
    import yaml
    from pydantic import BaseModel

    if isinstance(default, BaseModel):
        default = default.model_dump(mode="json")
    if default is None:
        return NONE
    if shape.kind == "list":
        return ",".join(str(v) for v in default) or NONE
    if isinstance(default, Mapping | list | tuple):
        flow = yaml.safe_dump(plain(default), default_flow_style=True, width=1_000_000)
        return flow.strip()
    if isinstance(default, enum.Enum):
        return str(default.value)
    return str(default)


def plain(value: Any) -> Any:
    """``value`` with tuples as lists and paths as text (what YAML writes)."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return str(value) if isinstance(value, Path) else value


def _without_none(annotation: Any) -> tuple[Any, bool]:
    """``annotation`` without ``None`` (``int | None`` -> ``int``; a union of several other
    types -> ``Any``) and whether it allowed None."""
    if typing.get_origin(annotation) not in (typing.Union, types.UnionType):
        return annotation, False
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    optional = len(args) < len(typing.get_args(annotation))
    return (args[0] if len(args) == 1 else Any), optional


def _dataclass_hints(model: type[Any]) -> dict[str, object]:
    """A dataclass's field types, each resolved in the dataclass's module; a type named there
    only for type checking is ``Any``."""
    hints = {}
    for f in dataclasses.fields(model):
        one = type(model.__name__, (), {"__annotations__": {f.name: f.type}})
        one.__module__ = model.__module__
        try:
            hints[f.name] = typing.get_type_hints(one)[f.name]
        except NameError:
            hints[f.name] = Any
    return hints


def _dataclass_default(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return None


def _attribute_docs(model: type[Any]) -> dict[str, str]:
    """The docstrings written under a class's attributes, by attribute name."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(model)))
    except (OSError, TypeError):
        return {}
    body = tree.body[0].body if isinstance(tree.body[0], ast.ClassDef) else []
    docs = {}
    for node, after in itertools.pairwise(body):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            docs[node.target.id] = " ".join(after.value.value.split())
    return docs
