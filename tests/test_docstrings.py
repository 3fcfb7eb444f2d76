"""Every docstring of the package reads as written: no control character (a ``\\f`` or ``\\b``
escape in a non-raw docstring turns into one) other than newlines and tabs."""

from __future__ import annotations

import ast
from pathlib import Path

import clearsight

_DOCUMENTED = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def test_no_docstring_holds_a_control_character() -> None:
    root = Path(clearsight.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            doc = ast.get_docstring(node, clean=False) if isinstance(node, _DOCUMENTED) else None
            bad = sorted({hex(ord(c)) for c in doc or "" if ord(c) < 32 and c not in "\n\t"})
            if bad:
                found.append((str(path.relative_to(root)), getattr(node, "name", "<module>"), bad))
    assert found == []
