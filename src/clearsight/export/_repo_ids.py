"""Hub repository ids as clearsight reads them: ``--hub ORG/NAME`` (:func:`parse_repo_id`, the
rules of the Hub's own ``validate_repo_id`` with the namespace required) and the Hub id a model
spec names (:func:`hub_model_id`: ``hf:ORG/NAME`` -> ``ORG/NAME``)."""

from __future__ import annotations

import re

from clearsight.validate import InputError

__all__ = ["hub_model_id", "parse_repo_id"]

#: One part of a repository id: 1 to 96 of letters, digits, ``_``, ``-`` and ``.``, beginning
#: and ending with a letter, digit or ``_``.
_PART = r"[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,94}[A-Za-z0-9_])?"
_REPO_ID = re.compile(rf"({_PART})/({_PART})")


def _is_repo_id(text: str) -> bool:
    return (
        bool(_REPO_ID.fullmatch(text))
        and ".." not in text
        and "--" not in text
        and not (text.endswith(".git"))
    )


def parse_repo_id(text: str) -> str:
    """``text`` when it is a Hub repository id ``ORG/NAME``; an InputError saying the rules
    otherwise."""
    if not _is_repo_id(text):
        raise InputError(
            f"invalid Hub repository {text!r}: give ORG/NAME, each 1 to 96 of letters, digits, "
            "'_', '-' and '.', beginning and ending with a letter, digit or '_', with no '--' or "
            "'..' and not ending in '.git'"
        )
    return text


def hub_model_id(model: str) -> str | None:
    """The Hub id a model spec names (its argument after the backend's prefix, where that is an
    ``ORG/NAME`` id: ``hf:HuggingFaceTB/SmolVLM-256M-Instruct``), None where it names none
    (``observer``, a scripted model's file, a server's URL)."""
    _, _, argument = model.partition(":")
    return argument if _is_repo_id(argument) else None
