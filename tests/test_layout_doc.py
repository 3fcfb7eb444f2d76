"""docs/layout.md is the layout as the code has it: the output of scripts/layout_tree.py (one
line per module, each paper's folder named), so a module added, moved or re-documented without
the page made again fails here."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("layout_tree", ROOT / "scripts/layout_tree.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_layout_page_is_the_code_s_own_tree() -> None:
    page = (ROOT / "docs/layout.md").read_text(encoding="utf-8")
    assert page == _script().render(ROOT), "run: python scripts/layout_tree.py > docs/layout.md"


def test_every_module_has_a_line_and_each_paper_its_folder() -> None:
    page = _script().render(ROOT)
    modules = [p for p in (ROOT / "src/clearsight").rglob("*.py") if p.name != "__init__.py"]
    for path in modules:
        assert f" {path.name} " in page or page.count(f"── {path.name}") >= 1, path
    assert page.count("── ") == len(modules) + sum(
        1 for p in (ROOT / "src/clearsight").rglob("__init__.py") if p.parent.name != "clearsight"
    )
    for folder in ("sweep/", "grounding/", "probe/"):
        line = next(ln for ln in page.splitlines() if ln.startswith(f"├── {folder}"))
        assert "open this folder" in line
