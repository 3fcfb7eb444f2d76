"""The backend registry: prefixes to lazily imported factories, how a model spec splits,
and loading a backend by name (once per process with :func:`shared_backend`)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from clearsight.models.base import Backend
from clearsight.models.extras import add_install_hint, install_hint
from clearsight.validate import InputError

if TYPE_CHECKING:
    from pydantic import JsonValue

#: prefix -> "module:factory"; the factory takes (argument after the colon, options) -> Backend.
_REGISTRY: dict[str, str] = {
    "observer": "clearsight.sweep.references.recognition:make_observer",
    "scripted": "clearsight.models.scripted:make_scripted",
    "hf": "clearsight.models.hf:make_hf",
    "openai": "clearsight.models.openai_api:make_openai",
    "vllm": "clearsight.models.vllm:make_vllm",
    "perceiver": "clearsight.perceiver:make_perceiver",
    "guard": "clearsight.guard.backend:make_guard",
}


def register_backend(prefix: str, factory: str, install_hint: str = "") -> None:
    """Register a backend factory ``"module:callable"`` under ``prefix`` (imported when used),
    with the hint an error gives when its module cannot be imported."""
    if ":" not in factory:
        raise InputError(f"factory must be 'module:callable', got {factory!r}")
    _REGISTRY[prefix] = factory
    if install_hint:
        add_install_hint(prefix, install_hint)


def backend_names() -> list[str]:
    """The registered backend prefixes."""
    return sorted(_REGISTRY)


def split_model_spec(spec: str) -> tuple[str, str]:
    """``"hf:org/model"`` -> ``("hf", "org/model")``; ``"observer"`` -> ``("observer", "")``.
    A name holding a credential (a URL's password or key) is refused, the credential unsaid
    (:func:`~clearsight.credentials.refuse_credentials`)."""
    from clearsight.credentials import refuse_credentials

    refuse_credentials(spec, "the model name", spec)
    prefix, _, arg = spec.partition(":")
    if prefix not in _REGISTRY:
        raise InputError(
            f"unknown model {spec!r}: the prefix must be one of {', '.join(backend_names())} "
            "(e.g. observer, hf:HuggingFaceTB/SmolVLM-256M-Instruct, openai:URL#NAME)"
        )
    return prefix, arg


def load_backend(spec: str, options: Mapping[str, JsonValue] | None = None) -> Backend:
    """Instantiate the backend named by ``spec``, importing its module only now, with
    ``options`` over the options of its preset, if one applies
    (:func:`clearsight.models.resolve.resolve_options`)."""
    from clearsight.models.resolve import backend_options

    prefix, arg = split_model_spec(spec)
    options = backend_options(spec, options)
    module_name, _, attr = _REGISTRY[prefix].partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        needs = exc.name or module_name
        raise InputError(f"model {spec!r} needs {needs}: {install_hint(prefix)}".strip()) from exc
    factory: Callable[[str, Mapping[str, JsonValue]], Backend] = getattr(module, attr)
    return factory(arg, options)


#: The backends :func:`shared_backend` made in this process, each with its model spec.
_SHARED: dict[str, tuple[str, Backend]] = {}

#: What ``batch_size: auto`` chose per model spec: image size -> ``{"rows", "how"}``.
BatchSizes = dict[str, dict[str, dict[str, object]]]


def shared_backend(spec: str, options: Mapping[str, JsonValue] | None = None) -> Backend:
    """The backend :func:`load_backend` makes for ``spec`` and ``options``, made once per
    process: a protocol's worker runs many units of one model, and a model loads in seconds.
    Options with and without their preset's resolved are the same options here."""
    from clearsight.models.resolve import resolve_options
    from clearsight.seeding import content_hash

    key = content_hash([spec, resolve_options(spec, options)])
    if key not in _SHARED:
        _SHARED[key] = (spec, load_backend(spec, options))
    return _SHARED[key][1]


def batch_sizes_found() -> BatchSizes:
    """The batch sizes ``batch_size: auto`` chose so far in this process, by the spec of each
    shared backend that chose one (the ``hf`` backend's ``batch_sizes``, found with its first
    batch of each image size). The executors send them back with each unit's records, so the
    driver writes them to the run's manifest (a pool's models live in its workers)."""
    found: BatchSizes = {}
    for spec, backend in _SHARED.values():
        sizes = getattr(backend, "batch_sizes", None)
        if isinstance(sizes, Mapping) and sizes:
            found.setdefault(spec, {}).update({k: dict(v) for k, v in sizes.items()})
    return found
