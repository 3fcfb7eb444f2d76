"""The attention kernel an ``hf`` model of a run computes with, where the run's options name
none: its family's (:attr:`clearsight.models.families.Family.attention`, ``sdpa`` wherever it
reproduces the backend's custom masks) for a new run, ``eager`` for a run stored before.

The choice is written into the model's options when they are resolved
(:func:`clearsight.models.resolve.resolve_options`, through :func:`fill`), so a new run's items
and manifest record it and a resume of that run computes with it again. Options that lack the
field mean ``eager`` (the ``hf`` backend's default): what every run stored before did. So the
driver fills in the family's choice only for a new run, and for a run whose manifest says it
was made so (:data:`MANIFEST_KEY`); a run stored before resumes with the options it stored.
Whether to fill is a context variable the driver sets around a run (:func:`by_family`); outside
it nothing is filled (a worker process is given options already resolved).

This module imports neither torch nor transformers.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache

from pydantic import JsonValue

#: The option that names the attention kernel (``HfOptions.attn_implementation``).
OPTION = "attn_implementation"
#: The manifest entry of a run whose ``hf`` models got their family's attention.
MANIFEST_KEY = "attention"
#: Its value.
BY_FAMILY = "by family"

#: The options that say where a model's config is (:func:`clearsight.models.hf.config_of`).
_WHERE = ("revision", "cache_dir", "preset")

_FILL: ContextVar[bool | None] = ContextVar("clearsight_attention_by_family", default=None)


@contextmanager
def by_family(on: bool) -> Iterator[None]:
    """Within this block, resolving an ``hf`` model's options fills in its family's attention
    where they name none (``on``) or leaves them as they are (off: ``eager``)."""
    token = _FILL.set(on)
    try:
        yield
    finally:
        _FILL.reset(token)


def filling() -> bool:
    """Whether resolving options fills in the family's attention here (:func:`by_family`)."""
    return bool(_FILL.get())


def run_rule(manifest: Mapping[str, object] | None) -> bool:
    """Whether a run fills in the family's attention: a run stored before that rule (a
    manifest without :data:`MANIFEST_KEY`) does not; a new run (``manifest`` None) does,
    unless the caller made it inside ``by_family(False)`` (a run made as one stored before)."""
    if manifest:
        return manifest.get(MANIFEST_KEY) == BY_FAMILY
    return _FILL.get() is not False


def fill(model: str, options: Mapping[str, JsonValue]) -> dict[str, JsonValue]:
    """``options`` of ``model`` with its family's attention filled in, where ``model`` is an
    ``hf`` model, its options name no kernel, the family's choice is not ``eager`` (what the
    field's absence means) and the current context fills (:func:`by_family`)."""
    out = dict(options)
    backend, _, arg = model.partition(":")
    if backend != "hf" or OPTION in out or not filling():
        return out
    where = tuple((k, v) for k in _WHERE if isinstance(v := out.get(k), str))
    choice = family_attention(arg, where)
    if choice is not None and choice != "eager":
        out[OPTION] = choice
    return out


@cache
def family_attention(arg: str, options: tuple[tuple[str, str], ...]) -> str | None:
    """The attention of ``hf:<arg>``'s family, from its config as
    :func:`clearsight.models.hf.config_of` reads it (``options``: the options of
    :data:`_WHERE` that are given, as pairs); None where no config is found. Cached: a plan
    may resolve a model's options once per item."""
    from clearsight.models.families import family_of_json
    from clearsight.models.hf import config_of

    config = config_of(arg, dict(options))
    return None if config is None else family_of_json(config).attention
