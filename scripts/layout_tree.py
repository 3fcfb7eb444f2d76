"""Print the source layout as a tree, one line per module with the first line of its docstring.

The tree in ``docs/layout.md`` is this script's output (``tests/test_layout_doc.py`` keeps the
two equal), so the map a newcomer reads is made from the code, not written beside it. Each
paper's folder is named on its package's line. Run from the repository root::

    python scripts/layout_tree.py > docs/layout.md
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

#: The folder a reader opens to see each paper's method (its numbers in ``analysis``).
PAPERS = {
    "sweep": "paper 1, the visibility sweep",
    "grounding": "paper 2, trajectory grounding",
    "probe": "paper 3, active reasoning through a noisy sensor",
}
WIDTH = 120


def _summary(path: Path) -> str:
    """The first line of a module's docstring (empty when it has none)."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    return doc.strip().splitlines()[0].strip() if doc.strip() else ""


def _line(prefix: str, name: str, text: str) -> str:
    """One tree line: the branch, the name padded to a column, the text cut to the width."""
    head = f"{prefix}{name}".ljust(34)
    room = WIDTH - len(head) - 1
    if len(text) > room:
        text = text[: room - 1].rstrip() + "…"
    return f"{head} {text}".rstrip()


def _walk(folder: Path, prefix: str, top: bool) -> list[str]:
    """The lines of ``folder``'s modules and subpackages, files first, each level indented."""
    files = sorted(p for p in folder.glob("*.py") if p.name != "__init__.py")
    packages = sorted(p for p in folder.iterdir() if (p / "__init__.py").is_file())
    entries: list[tuple[str, Path]] = [("file", p) for p in files]
    entries += [("package", p) for p in packages]
    lines = []
    for i, (kind, path) in enumerate(entries):
        last = i == len(entries) - 1
        branch, below = ("└── ", "    ") if last else ("├── ", "│   ")
        if kind == "file":
            lines.append(_line(prefix + branch, path.name, _summary(path)))
            continue
        text = _summary(path / "__init__.py")
        if top and path.name in PAPERS:
            text = f"[{PAPERS[path.name]}: open this folder] {text}"
        lines.append(_line(prefix + branch, path.name + "/", text))
        lines += _walk(path, prefix + below, top=False)
    return lines


def render(root: Path) -> str:
    """The whole page: a title, how it is made, and the tree of ``src/clearsight``."""
    pkg = root / "src" / "clearsight"
    head = [
        "# Layout",
        "",
        "Every module of `src/clearsight`, one line each: the first line of its docstring.",
        "Each paper's method lives in its protocol's folder (its numbers in `analysis.py`);",
        "`report/` only renders them. Made by `python scripts/layout_tree.py > docs/layout.md`.",
        "",
        "```",
        _line("", "src/clearsight/", _summary(pkg / "__init__.py")),
    ]
    return "\n".join([*head, *_walk(pkg, "", top=True), "```", ""])


if __name__ == "__main__":
    sys.stdout.write(render(Path.cwd()))
