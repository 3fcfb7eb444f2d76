"""Run configurations as data: pydantic models, loadable from YAML, mirrored by the CLI flags.

:func:`load_config` reads any protocol's configuration model (the sweep's
:class:`~clearsight.sweep.config.SweepConfig`, grounding's, the probe's, the build's) from YAML
with flags laid over it, the one loader of every ``--config``.
The resolved configuration is written to every run's manifest, and its content hash guards a
run directory against records of a different configuration.
"""

from __future__ import annotations

import codecs
import enum
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, TypeVar, overload

import yaml
from pydantic import (
    BaseModel,
    ValidationError,
)

from clearsight.credentials import refuse_credentials
from clearsight.sweep.config import SweepConfig
from clearsight.validate import invalid, invalid_options
from clearsight.yaml_input import load_yaml


class _Null(enum.Enum):
    NULL = "null"


NULL: Final = _Null.NULL
"""An override that sets its field to None (``--generator none``); a None override is a flag
the user did not give, which leaves the field as it is."""

M = TypeVar("M", bound=BaseModel)


@overload
def load_config(path: Path | None) -> SweepConfig: ...


@overload
def load_config(
    path: Path | None, model: type[M], overrides: Mapping[str, object] | None = None
) -> M: ...


def load_config(
    path: Path | None,
    model: type[BaseModel] = SweepConfig,
    overrides: Mapping[str, object] | None = None,
) -> BaseModel:
    """A ``model`` (by default a :class:`SweepConfig`) from the YAML file at ``path`` of its
    fields (None: no file), with ``overrides`` laid over the file: the one way every command
    reads ``--config`` and its flags.

    An override of None is a flag the user did not give: the file's value stands, else the
    model's default; :data:`NULL` sets a field to None; a mapping over a mapping sets only its
    keys (``--batch-size`` over the file's ``model_options``). Everything wrong (an unreadable
    file, bad YAML, a key the model does not know, a bad value from the file or a flag) is one
    :class:`InputError` line naming the file and each bad field (:func:`invalid_options`); a
    key naming a credential anywhere in it is refused first, its value never quoted
    (:func:`~clearsight.credentials.refuse_credentials`).
    """
    what = f"{model.__name__.removesuffix('Config').lower()} config"
    data = _overlay(_read_yaml(path, what) if path is not None else {}, overrides or {})
    refuse_credentials(data, what, path)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise invalid_options(exc, what, path) from exc


def _read_yaml(path: Path, what: str) -> dict[str, Any]:
    """The mapping of fields in the YAML file ``path`` (empty for an empty file), read within
    the bounds of :func:`~clearsight.yaml_input.load_yaml` (an alias bomb or deep nesting is
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


def _overlay(base: Mapping[str, Any], overrides: Mapping[str, object]) -> dict[str, Any]:
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
