"""The viewer's pages as text: its templates (autoescaped, so model output reaches a page as
text) rendered with what every page needs, for the server (:mod:`~clearsight.view.app`) and the
static bundle (:mod:`~clearsight.view.bundle`) alike."""

from __future__ import annotations

from functools import cache
from typing import Any

import jinja2

__all__ = ["COLUMNS", "render"]

#: The listing's columns, in order (a view's row labels outside them are not shown).
COLUMNS = ("scene", "model", "task", "wording", "condition", "level", "answer", "gold", "outcome")


@cache
def _environment() -> jinja2.Environment:
    loader = jinja2.PackageLoader("clearsight.view", "templates")
    return jinja2.Environment(loader=loader, autoescape=True, undefined=jinja2.StrictUndefined)


def render(name: str, root: str, **context: Any) -> str:
    """The template ``name`` rendered with ``context``; ``root``: the relative path from the
    page to the site's top (its style sheet and the runs' index)."""
    return _environment().get_template(name).render(root=root, columns=COLUMNS, **context)
