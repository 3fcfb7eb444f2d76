"""Credentials stay in the environment: a configuration may not hold one, and nothing a run
writes holds the value of a key variable.

Backends read their keys from environment variables (the ``openai:`` backend from
``OPENAI_API_KEY``, or the variable its ``api_key_env`` option names; Hugging Face downloads
from ``HF_TOKEN``). Two guards keep a key out of a run directory:

* :func:`refuse_credentials`: a key of a configuration (at any depth, ``model_options``
  included) that names a credential (``api_key``, ``token``, ``password``, ``Authorization``,
  ...) is refused before the run starts, with the variable to use instead;
* :func:`redact`: the value of every key variable is replaced by ``***`` in text that leaves
  the process: the store applies it to the manifest, the items and every record it writes, the
  report writer to every file it writes.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

from clearsight.validate import InputError

#: The variables the backends read their keys from (``api_key_env`` adds its own).
KEY_VARIABLES: Final[tuple[str, ...]] = (
    "OPENAI_API_KEY",
    "HF_TOKEN",
    "HUGGING_FACE_HUB_TOKEN",
)
#: Which variable a backend prefix reads (what the refusal tells the user to set).
_VARIABLE_OF: Final[Mapping[str, str]] = {
    "openai": "OPENAI_API_KEY (or the variable named by the option api_key_env)",
    "hf": "HF_TOKEN",
    "vllm": "HF_TOKEN",
}
#: A key that names a credential (lower case, ``-`` read as ``_``): the word itself or a name
#: ending in it (``api_key``, ``access_token``, ``client_secret``); not ``api_key_env`` (a
#: variable's name) nor ``max_tokens`` (a count).
_CREDENTIAL_KEY: Final = re.compile(
    r"(?:^|_)(?:key|apikey|token|password|passwd|secret|authorization|auth|bearer|"
    r"credentials?|cookie)$"
)
_OPTION_NAME: Final = re.compile(r"[A-Za-z0-9_\-]+")
#: A variable whose name says it holds a key (``ANTHROPIC_API_KEY``, ``GH_TOKEN``).
_KEY_VARIABLE: Final = re.compile(r"(?:^|_)(?:API_?KEY|TOKEN|SECRET|PASSWORD)$")
#: Shorter values are not redacted: replacing a 3-letter value everywhere would mangle text.
MIN_SECRET_CHARS: Final = 8
_REDACTED: Final = "***"
_registered: set[str] = set()


def is_credential_key(key: object) -> bool:
    """Whether an option key names a credential (case-insensitive, see :data:`_CREDENTIAL_KEY`)."""
    if not isinstance(key, str) or not _OPTION_NAME.fullmatch(key.strip()):
        return False  # a model spec or a path as a key ("openai:URL#NAME") names no secret
    return bool(_CREDENTIAL_KEY.search(key.strip().lower().replace("-", "_")))


def credential_paths(data: object, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """The key paths of ``data`` (mappings and lists, at any depth) whose key names a
    credential, in order. A key naming the variable that holds one (``api_key_env``) is
    allowed, and that variable is registered for :func:`redact`."""
    found: list[tuple[str, ...]] = []
    if isinstance(data, Mapping):
        for key, value in data.items():
            here = (*path, str(key))
            if is_credential_key(key):
                found.append(here)
            elif isinstance(key, str) and key.endswith("_env") and is_credential_key(key[:-4]):
                if isinstance(value, str) and value:
                    register_key_variable(value)
            else:
                found += credential_paths(value, here)
    elif isinstance(data, list | tuple):
        for i, value in enumerate(data):
            found += credential_paths(value, (*path, str(i)))
    return found


def refuse_credentials(data: object, what: str, source: object = None) -> None:
    """Raise :class:`InputError` when ``data`` (a configuration or a backend's options) holds a
    key naming a credential: one line naming the key, where it is, and the environment
    variable to put the key in instead. The value itself is never quoted."""
    paths = credential_paths(data)
    if not paths:
        return
    where = f" in {source}" if source is not None else ""
    keys = ", ".join(".".join(p) for p in paths)
    variables = "; ".join(f"{prefix}: {var}" for prefix, var in _VARIABLE_OF.items())
    raise InputError(
        f"credential in {what}{where}: {keys} names a secret, and a secret is never put in "
        f"a configuration or options (they are stored with the run); set it in the "
        f"environment instead ({variables})"
    )


def register_key_variable(name: str) -> None:
    """Also redact the value of the environment variable ``name`` (a backend's
    ``api_key_env``)."""
    _registered.add(name)


def key_variables() -> list[str]:
    """The environment variables whose values :func:`redact` removes: the backends' own
    (:data:`KEY_VARIABLES`), the registered ones and every set variable named like a key."""
    named = {name for name in os.environ if _KEY_VARIABLE.search(name.upper())}
    return sorted({*KEY_VARIABLES, *_registered, *named})


def secret_values() -> list[str]:
    """The values of the set key variables, longest first (at least :data:`MIN_SECRET_CHARS`
    characters), so that a key containing another is replaced whole."""
    values = {os.environ.get(name, "") for name in key_variables()}
    return sorted((v for v in values if len(v) >= MIN_SECRET_CHARS), key=len, reverse=True)


def redact(text: str, values: Iterable[str] | None = None) -> str:
    """``text`` with every secret value (by default :func:`secret_values`) replaced by ``***``."""
    for value in secret_values() if values is None else values:
        if value in text:
            text = text.replace(value, _REDACTED)
    return text


def redact_value(obj: Any, values: Iterable[str] | None = None) -> Any:
    """``obj`` (JSON-like: mappings, lists, strings, numbers) with :func:`redact` applied to
    every string in it, keys included; other values as they are."""
    secrets = secret_values() if values is None else list(values)
    if not secrets:
        return obj
    if isinstance(obj, str):
        return redact(obj, secrets)
    if isinstance(obj, Mapping):
        return {redact_value(k, secrets): redact_value(v, secrets) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [redact_value(v, secrets) for v in obj]
    return obj
