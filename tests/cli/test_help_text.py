"""Help texts: a docstring's line breaks never show in ``--help`` (each paragraph reflowed)."""

from __future__ import annotations

import re
from typing import Any

import typer
from hypothesis import given
from hypothesis import strategies as st

from clearsight.cli import app
from clearsight.cli.errors import reflowed

_ITEM = re.compile(r"\s*(?:[-*\u2022]|\d+[.)])\s")


def _commands(group: Any, ctx: Any, path: str) -> list[tuple[str, Any]]:
    """Every command under ``group`` as its group hands it out, with its path."""
    found: list[tuple[str, Any]] = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is None:
            continue
        found.append((f"{path} {name}", command))
        if hasattr(command, "list_commands"):
            found += _commands(command, typer.Context(command, parent=ctx), f"{path} {name}")
    return found


def test_every_command_help_has_no_line_break_inside_a_paragraph() -> None:
    root = typer.main.get_command(app)
    commands = _commands(root, typer.Context(root), "clearsight")
    assert len(commands) > 25
    broken = []
    for path, command in commands:
        for paragraph in (command.help or "").split("\n\n"):
            lines = paragraph.split("\n")
            if paragraph.startswith("\b"):
                continue
            inner = [ln for ln in lines[1:] if not _ITEM.match(ln) and not ln.startswith(" ")]
            if inner:
                broken.append((path, inner[0]))
    assert broken == []


def test_reflowed_joins_lines_and_keeps_paragraphs_items_and_examples() -> None:
    text = (
        "Summary line.\n\nFirst paragraph\ngoes on here.\n\nSteps:\n- one\n- two\n"
        "  continued example\n\n\b\nkept\nas written"
    )
    assert reflowed(text) == (
        "Summary line.\n\nFirst paragraph goes on here.\n\nSteps:\n- one\n- two\n"
        "  continued example\n\n\b\nkept\nas written"
    )


_words = st.lists(st.text(alphabet="abcxyz.,'", min_size=1, max_size=8), min_size=1, max_size=6)


@given(st.lists(st.lists(_words, min_size=1, max_size=4), min_size=1, max_size=4))
def test_reflowed_keeps_every_word_in_order_and_is_idempotent(
    paragraphs: list[list[list[str]]],
) -> None:
    text = "\n\n".join("\n".join(" ".join(line) for line in p) for p in paragraphs)
    once = reflowed(text)
    assert once.split() == text.split()
    assert once.count("\n\n") == len(paragraphs) - 1
    assert "\n" not in once.replace("\n\n", "")
    assert reflowed(once) == once
