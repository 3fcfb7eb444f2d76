"""Input checks shared by physics, scenes, tasks and every set of options.

Every public entry point that takes pixels, depth or a visibility checks them here, so a user
gets an error naming the problem (dtype, shape, NaN, sign) instead of a broadcasting failure
deep inside numpy. Invalid options (a run's configuration, a backend's options, the flags of a
command) become one :class:`InputError` line of one form, :func:`invalid`; a JSONL file's lines
are read by :func:`jsonl_values`; the ids of a user's instances, problems or annotations must
be unique (:func:`refuse_repeated_ids`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy is imported where an array is checked: the command line starts without it
    import numpy as np
    import numpy.typing as npt
    from pydantic import ValidationError
    from pydantic_core import ErrorDetails

#: Longest rendering of an offending value in an options error (a YAML list can be long).
_MAX_VALUE_CHARS = 60


class InputError(ValueError):
    """Bad input given to clearsight: the message names the problem and the offending value."""


def invalid(what: str, problem: str, source: object = None) -> InputError:
    """The one form of an invalid-options error, ``invalid WHAT in SOURCE: PROBLEM`` on one
    line (``invalid sweep config in sweep.yaml: arms.0: ...``, what the command line prints
    after ``error:``): ``source`` says where the options came from (a file, a backend spec),
    when there is one to name."""
    where = f" in {source}" if source is not None else ""
    return InputError(" ".join(f"invalid {what}{where}: {problem}".split()))


def invalid_options(
    exc: ValidationError,
    what: str,
    source: object = None,
    sources: Mapping[str, str] | None = None,
    fields: Iterable[str] = (),
) -> InputError:
    """A pydantic :class:`~pydantic.ValidationError` as :func:`invalid`: every error pydantic
    found, ``field.path: message (got value)``, joined by ``; ``, so one try shows the user all
    that is wrong wherever the options came from. A key the model does not know is
    ``key: unknown field`` (the options models forbid extra fields). ``sources`` names where
    some top-level fields came from (``--wordings``, ``--set wordings=...``; the others from
    ``source``, else their defaults): where a problem concerns one of them (a check across
    fields: where its message names one of ``fields`` that is), each problem says where the
    fields it names came from, and the line does not blame ``source`` alone."""
    errors = exc.errors(include_url=False)
    named = [_fields_of(e, fields) for e in errors]
    if not any(f in (sources or {}) for names in named for f in names):
        return invalid(what, "; ".join(_problem(e) for e in errors), source)
    fallback = str(source) if source is not None else "the default"
    problems = []
    for error, names in zip(errors, named, strict=True):
        where = ", ".join(f"{f} from {(sources or {}).get(f, fallback)}" for f in names)
        problems.append(f"{_problem(error)} ({where})" if where else _problem(error))
    return invalid(what, "; ".join(problems))


def _fields_of(error: ErrorDetails, fields: Iterable[str]) -> list[str]:
    """The top-level fields an error concerns: its location's first, else (a check across
    fields) those of ``fields`` its message names."""
    if error["loc"]:
        return [str(error["loc"][0])]
    return list(dict.fromkeys(f for f in fields if re.search(rf"\b{re.escape(f)}\b", error["msg"])))


def _problem(error: ErrorDetails) -> str:
    """One pydantic error: its field path, its message and, where it helps, the value given."""
    field = ".".join(str(part) for part in error["loc"])
    if error["type"] == "extra_forbidden":
        return f"{field}: unknown field"
    message = error["msg"].removeprefix("Value error, ")
    if not field:  # a check across fields: its message names them
        return message
    if error["type"] != "missing":  # a missing field has no value to show
        message += f" (got {short_repr(error['input'])})"
    return f"{field}: {message}"


def short_repr(value: object) -> str:
    """``repr(value)`` cut to :data:`_MAX_VALUE_CHARS` characters: how an error quotes an
    offending value (a YAML list or a bad row can be long)."""
    text = repr(value)
    return text if len(text) <= _MAX_VALUE_CHARS else text[: _MAX_VALUE_CHARS - 3] + "..."


def refuse_repeated_ids(ids: Iterable[tuple[object, str]], what: str) -> None:
    """An InputError naming the first id given twice and both places it was given: ``ids``
    yields ``(id, where)`` pairs in order (``where``: a file and row, say). Two entries under
    one id would be run and analysed as one (two runs of one question), so a repeated id is
    refused even where the entries are the same."""
    seen: dict[object, str] = {}
    for key, where in ids:
        if key in seen:
            raise InputError(
                f"duplicate {what} id {short_repr(key)}: given in {seen[key]} and again in "
                f"{where} (ids must be unique)"
            )
        seen[key] = where


def jsonl_values(text: str, source: object) -> list[tuple[int, Any]]:
    r"""``(line number, value)`` of every non-blank line of JSONL ``text``; a line that is not
    JSON (or nests too deeply) is an InputError naming ``source`` and the line.

    Lines end at ``\n`` only (a ``\r`` before it is JSON whitespace): ``str.splitlines`` would
    also break at U+0085, U+2028 and U+2029, which JSON allows raw inside a string, so a file
    written with ``ensure_ascii=False`` would not load."""
    values = []
    for i, line in enumerate(text.split("\n"), 1):
        if line.strip():
            try:
                values.append((i, json.loads(line)))
            except (json.JSONDecodeError, RecursionError) as exc:
                raise InputError(f"invalid JSON in {source}:{i}: {exc}") from exc
    return values


def check_image(image: object, name: str = "image") -> npt.NDArray[np.uint8]:
    """Return ``image`` if it is a uint8 array of shape HxWx3 (RGB), else raise InputError."""
    import numpy as np

    if not isinstance(image, np.ndarray):
        raise InputError(f"{name} must be a numpy array, got {type(image).__name__}")
    if image.dtype != np.uint8:
        raise InputError(f"{name} must have dtype uint8 (8-bit sRGB), got {image.dtype}")
    if image.ndim != 3 or image.shape[2] != 3:
        raise InputError(f"{name} must have shape HxWx3 (RGB), got {image.shape}")
    if image.shape[0] < 1 or image.shape[1] < 1:
        raise InputError(f"{name} is empty: shape {image.shape}")
    return image


def check_depth(depth_m: object, shape: tuple[int, ...]) -> npt.NDArray[np.floating]:
    """Return ``depth_m`` if it is a finite, non-negative float HxW map matching ``shape[:2]``."""
    import numpy as np

    if not isinstance(depth_m, np.ndarray):
        raise InputError(f"depth_m must be a numpy array, got {type(depth_m).__name__}")
    if not np.issubdtype(depth_m.dtype, np.floating):
        raise InputError(f"depth_m must be a float array in metres, got dtype {depth_m.dtype}")
    if depth_m.shape != tuple(shape[:2]):
        raise InputError(
            f"depth_m shape {depth_m.shape} does not match the image's height x width "
            f"{tuple(shape[:2])}"
        )
    if not np.isfinite(depth_m).all():
        bad = int((~np.isfinite(depth_m)).sum())
        raise InputError(f"depth_m has {bad} NaN or infinite values; fill them first")
    if (depth_m < 0).any():
        raise InputError(f"depth_m has negative values (min {float(depth_m.min()):.4g} m)")
    return depth_m


def check_visibility(visibility_m: float) -> float:
    """Return the visibility as a float if it is finite and > 0 metres."""
    v = float(visibility_m)
    if not math.isfinite(v) or v <= 0:
        raise InputError(f"visibility must be a finite number of metres > 0, got {visibility_m!r}")
    return v
