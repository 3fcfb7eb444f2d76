"""Credentials stay in the environment: a configuration may not hold one, and nothing a run
writes holds the value of a key variable.

Backends read their keys from environment variables (the ``openai:`` backend from
``OPENAI_API_KEY``, or the variable its ``api_key_env`` option names; Hugging Face downloads
from ``HF_TOKEN``). Two guards keep a key out of a run directory:

* :func:`refuse_credentials`: a key of a configuration (at any depth, ``model_options``
  included) that names a credential (``api_key``, ``token``, ``password``, ``Authorization``,
  ...), a URL holding one (a user name or password, ``https://user:pass@host``, or a key-like
  query parameter, ``?api_key=...``: a model's ``openai:URL#NAME`` included), or an
  ``api_key_env`` that is no variable's name (a pasted key) is refused before the run starts,
  with the variable to use instead;
* :func:`redact`: the value of every key variable, and every credential a URL holds, is
  replaced by ``***`` in text that leaves the process: the store applies it to the manifest,
  the items and every record it writes, the report writer to every file it writes, the
  command line to what it prints.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final
from urllib.parse import SplitResult, unquote, urlsplit, urlunsplit

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
#: The name of an environment variable (what a ``*_env`` option such as ``api_key_env`` holds).
_VARIABLE_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: A URL in a text (a model's ``openai:URL#NAME``, a message quoting one): up to a space, a
#: double quote or an angle bracket (a single quote may be part of a password).
_URL: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s\"<>]+")
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


def credential_paths(data: object) -> list[tuple[str, ...]]:
    """The paths of ``data`` (mappings and lists, at any depth) that hold a credential, in
    order: a key naming one, a URL with a user name, password or key in it, a variable-name
    option (``api_key_env``) that is no variable's name (see :func:`refuse_credentials`). A key
    naming the variable that holds a key (``api_key_env``) is allowed, and that variable is
    registered for :func:`redact`."""
    return [path for path, _ in _credentials(data, ())]


def _credentials(data: object, path: tuple[str, ...]) -> list[tuple[tuple[str, ...], str]]:
    """``(path, what is wrong there)`` of every credential in ``data`` (see
    :func:`credential_paths`)."""
    found: list[tuple[tuple[str, ...], str]] = []
    if isinstance(data, str):
        found += [(path, problem) for problem in url_problems(data)]
    elif isinstance(data, Mapping):
        for key, value in data.items():
            here = (*path, str(key))
            if is_credential_key(key):
                found.append((here, "names a secret"))
            elif isinstance(key, str) and key.endswith("_env") and is_credential_key(key[:-4]):
                if not isinstance(value, str) or not _VARIABLE_NAME.fullmatch(value):
                    found.append((here, "is not the name of an environment variable"))
                else:
                    register_key_variable(value)
            else:
                found += [(p, f"(a key) {why}") for p, why in _credentials(key, here)]
                found += _credentials(value, here)
    elif isinstance(data, list | tuple):
        for i, value in enumerate(data):
            found += _credentials(value, (*path, str(i)))
    return found


def url_problems(text: str) -> list[str]:
    """What makes each URL in ``text`` hold a credential: a user name or password
    (``https://user:pass@host``), or a query parameter named like a key
    (``?api_key=...``, ``&access_token=...``); empty when none does."""
    if "://" not in text:
        return []
    problems = []
    for match in _URL.finditer(text):
        parts = _split(match.group())
        if "@" in parts.netloc:
            problems.append("holds a URL with a user name or password in it")
        names = [name for name, _ in _query_credentials(parts.query)]
        if names:
            problems.append(f"holds a URL with a key in its query ({', '.join(names)})")
    return problems


def url_secrets(text: str) -> list[str]:
    """The credentials the URLs in ``text`` hold, as they are written there (user names and
    passwords, the values of key-like query parameters): what :func:`redact` removes."""
    if "://" not in text:
        return []
    found = []
    for match in _URL.finditer(text):
        parts = _split(match.group())
        userinfo, at, _ = parts.netloc.rpartition("@")
        found += [userinfo] if at and userinfo else []
        found += [value for _, value in _query_credentials(parts.query) if value]
    return found


def _split(url: str) -> SplitResult:
    """``url``'s parts; a malformed host (``http://[x``) read as the text up to the path."""
    try:
        return urlsplit(url)
    except ValueError:
        rest = url.partition("://")[2]
        netloc = re.split(r"[/?#]", rest, maxsplit=1)[0]
        return SplitResult("", netloc, "", rest.partition("?")[2].partition("#")[0], "")


def _query_credentials(query: str) -> list[tuple[str, str]]:
    """``(name, value)`` of each query parameter named like a key (as written, not decoded)."""
    pairs = (item.partition("=") for item in re.split(r"[&;]", query) if item)
    return [(name, value) for name, _, value in pairs if _is_url_credential(name)]


def _is_url_credential(name: str) -> bool:
    """Whether a URL's query parameter ``name`` names a credential (an option's key words,
    and a signature: ``X-Amz-Signature``, ``sig``)."""
    plain = unquote(name).strip().lower().replace("-", "_")
    return is_credential_key(plain) or bool(re.search(r"(?:^|_)(?:signature|sig)$", plain))


def refuse_credentials(data: object, what: str, source: object = None) -> None:
    """Raise :class:`InputError` when ``data`` (a configuration or a backend's options) holds a
    credential (:func:`credential_paths`): one line naming each place, where it is, and the
    environment variable to put the key in instead. The value itself is never quoted (and a
    URL's credential is shown as ``***``)."""
    found = _credentials(data, ())
    if not found:
        return
    where = f" in {source}" if source is not None else ""
    places = "; ".join(f"{'.'.join(path)} {why}".strip() for path, why in found)
    variables = "; ".join(f"{prefix}: {var}" for prefix, var in _VARIABLE_OF.items())
    raise InputError(
        redact(
            f"credential in {what}{where}: {places}; a secret is never put in a configuration, "
            f"options or a model's URL (they are stored with the run): set it in the "
            f"environment instead ({variables})"
        )
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
    """``text`` with every secret value (by default :func:`secret_values`) and every
    credential a URL in it holds (:func:`url_secrets`) replaced by ``***``."""
    for value in secret_values() if values is None else values:
        if value in text:
            text = text.replace(value, _REDACTED)
    return _URL.sub(_redacted_url, text) if "://" in text else text


def _redacted_url(match: re.Match[str]) -> str:
    """A URL with its user name, password and key-like query values replaced by ``***``
    (as it is when it holds none)."""
    url = match.group()
    try:
        parts = urlsplit(url)
    except ValueError:  # a malformed host ("http://[x"): whatever precedes an "@" goes
        return re.sub(r"(?<=://)[^/?#]*@", f"{_REDACTED}@", url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{_REDACTED}@{netloc.rpartition('@')[2]}"
    items = re.split(r"([&;])", parts.query) if parts.query else []
    for i, item in enumerate(items):
        name, eq, value = item.partition("=")
        if eq and value and _is_url_credential(name):
            items[i] = f"{name}={_REDACTED}"
    query = "".join(items)
    if netloc == parts.netloc and query == parts.query:
        return url
    return urlunsplit(parts._replace(netloc=netloc, query=query))


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
