"""How every report writes its files: atomically, with Markdown tables in one format."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pandas as pd


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file, so a reader never sees half a file."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def md_table(frame: pd.DataFrame) -> str:
    """A GitHub-flavoured Markdown table ('|' in cells escaped)."""
    if frame.empty:
        return "_(none)_\n"

    def cell(v: Any) -> str:
        return str(v).replace("|", "\\|").replace("\n", " ")

    head = "| " + " | ".join(cell(c) for c in frame.columns) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    body = ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([head, rule, *body]) + "\n"
