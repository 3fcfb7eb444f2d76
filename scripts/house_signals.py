"""Measure the house: the structural signals of issue 32, counted from the code itself.

Run from the repository root (or give it the root)::

    python scripts/house_signals.py [ROOT]

Every figure is read from ``src/clearsight`` with :mod:`ast` and :mod:`tokenize` (nothing is
imported or run), so two checkouts are measured the same way:

* ``largest_protocol_module``: lines of the largest module under ``sweep/``, ``grounding/`` or
  ``probe/``;
* ``loose_modules``: modules directly in ``src/clearsight/`` other than ``__init__.py``;
* ``import_circles``: strongly connected components of more than one module in the graph of
  ``clearsight`` imports (module level, inside functions and for type checking alike; a name a
  package's ``__init__`` hands on from a submodule counts as an import of that submodule);
* ``report_modules_importing_metrics``: modules under ``report/`` that import
  ``clearsight.metrics``;
* ``typer_options``: calls of ``typer.Option``;
* ``longest_function``: lines of the longest function or method body (its ``def`` to its end);
* ``largest_store_file``: lines of ``store.py`` or of the largest module under ``store/``;
* ``dict_str_any``: occurrences of ``dict[str, Any]`` in the source text;
* ``repeated_block_pairs``: pairs of places that share a run of six or more lines of the same
  token shape (names, strings and numbers replaced by placeholders; blank lines, comments and
  docstrings left out; overlapping windows of one pair of places counted once);
* ``protocols_in_init``: how many of the three protocols (sweep, grounding, probe) the lazy
  export table of ``clearsight/__init__.py`` reaches;
* ``protocol_top_modules``: per protocol package, its modules directly in its folder other than
  ``__init__.py`` (its sub-packages hold the rest), the largest count first;
* ``typed_readout_kinds``: item kinds (a class of the protocol packages or ``verify/`` that
  sets ``kind``) whose class also sets ``readout_type``, of all of them.
"""

from __future__ import annotations

import ast
import io
import sys
import tokenize
from collections import defaultdict
from pathlib import Path

PROTOCOLS = ("sweep", "grounding", "probe")
WINDOW = 6


def _modules(pkg: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` under ``pkg``."""
    out = {}
    for path in sorted(pkg.rglob("*.py")):
        parts = list(path.relative_to(pkg.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines())


def _reexports(modules: dict[str, Path]) -> dict[str, dict[str, str]]:
    """Per package, the names its ``__init__`` hands on from its submodules (name -> module),
    so an import of such a name through the package is an arrow to the module that defines it
    (a package's face is no room of its own)."""
    out: dict[str, dict[str, str]] = {}
    for name, path in modules.items():
        if path.name != "__init__.py":
            continue
        table: dict[str, str] = {}
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ImportFrom) and node.module:
                base = node.module if not node.level else f"{name}.{node.module}"
                if base in modules:
                    table.update({a.asname or a.name: base for a in node.names})
        out[name] = table
    return out


def _imports(
    name: str, path: Path, modules: dict[str, Path], faces: dict[str, dict[str, str]]
) -> set[str]:
    """The ``clearsight`` modules that module ``name`` imports (anywhere in it, type-checking
    imports included: each is an arrow of the picture)."""
    is_pkg = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".") if is_pkg else name.split(".")[:-1]
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                full = f"{base}.{alias.name}"
                targets.append(
                    full if full in modules else faces.get(base, {}).get(alias.name, base)
                )
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def _longest_function(paths: list[Path]) -> tuple[int, str]:
    best = (0, "")
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = (node.end_lineno or node.lineno) - node.lineno + 1
                best = max(best, (n, f"{path.name}:{node.name}"))
    return best


def _docstring_lines(tree: ast.Module) -> set[int]:
    """Line numbers of every docstring in ``tree``."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                lines.update(range(first.lineno, (first.end_lineno or 0) + 1))
    return lines


def _shapes(path: Path) -> list[str]:
    """The token shape of each line with code (names, strings and numbers as placeholders,
    keywords and operators kept); blank lines, comments, docstrings, import lines and lines
    of lone punctuation or literals are passed over."""
    import keyword

    text = path.read_text()
    skip = _docstring_lines(ast.parse(text))
    per_line: dict[int, list[str]] = defaultdict(list)
    ignored = {
        tokenize.COMMENT,
        tokenize.NL,
        tokenize.NEWLINE,
        tokenize.INDENT,
        tokenize.DEDENT,
        tokenize.ENCODING,
        tokenize.ENDMARKER,
    }
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type in ignored or tok.start[0] in skip:
            continue
        if tok.type == tokenize.NAME and not keyword.iskeyword(tok.string):
            shape = "N"
        elif tok.type in (tokenize.STRING, getattr(tokenize, "FSTRING_START", -1)):
            shape = "S"
        elif tok.type == tokenize.NUMBER:
            shape = "0"
        else:
            shape = tok.string
        per_line[tok.start[0]].append(shape)
    shapes = []
    for n in sorted(per_line):
        line = per_line[n]
        if line[0] in ("import", "from") or all(t in "()[]{},:;.S0" for t in line):
            continue  # imports, lone punctuation and data (literals) are no code to copy
        shapes.append(" ".join(line))
    return shapes


def _repeated_pairs(paths: list[Path]) -> int:
    """Pairs of files (a file with itself where two places in it match) that share a run of
    :data:`WINDOW` code lines of the same shape; a run found in more than eight places is too
    common to be a copy and is left out."""
    windows: dict[tuple[str, ...], list[tuple[int, int]]] = defaultdict(list)
    for f, path in enumerate(paths):
        shapes = _shapes(path)
        for i in range(len(shapes) - WINDOW + 1):
            windows[tuple(shapes[i : i + WINDOW])].append((f, i))
    pairs: set[tuple[int, int]] = set()
    for places in windows.values():
        if len(places) > 8:
            continue
        for a in range(len(places)):
            for b in range(a + 1, len(places)):
                (fa, ia), (fb, ib) = places[a], places[b]
                if fa != fb or abs(ia - ib) >= WINDOW:  # a run overlapping itself is no copy
                    pairs.add((min(fa, fb), max(fa, fb)))
    return len(pairs)


def _protocols_in_init(init: Path) -> int:
    text = init.read_text()
    return sum(f"clearsight.{p}" in text for p in PROTOCOLS)


def _top_modules(pkg: Path) -> str:
    """``name count`` per protocol package, the largest count first."""
    counts = {p: sum(f.name != "__init__.py" for f in (pkg / p).glob("*.py")) for p in PROTOCOLS}
    return ", ".join(f"{p} {n}" for p, n in sorted(counts.items(), key=lambda kv: -kv[1]))


def _typed_kinds(pkg: Path) -> str:
    """``typed of all`` item kinds: classes that assign ``kind``, and of those the ones that
    also assign ``readout_type`` in their body."""
    kinds = typed = 0
    for folder in (*PROTOCOLS, "verify"):
        for path in sorted((pkg / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if not isinstance(node, ast.ClassDef):
                    continue
                names = {
                    target.id
                    for stmt in node.body
                    if isinstance(stmt, ast.Assign | ast.AnnAssign)
                    for target in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target])
                    if isinstance(target, ast.Name)
                    and (not isinstance(stmt, ast.AnnAssign) or stmt.value is not None)
                }
                if "kind" in names:
                    kinds += 1
                    typed += "readout_type" in names
    return f"{typed} of {kinds}"


def measure(root: Path) -> dict[str, object]:
    """Every signal of the module docstring for the checkout at ``root``."""
    pkg = root / "src" / "clearsight"
    modules = _modules(pkg)
    faces = _reexports(modules)
    graph = {name: _imports(name, path, modules, faces) for name, path in modules.items()}
    paths = list(modules.values())
    protocol_files = [p for p in paths if p.relative_to(pkg).parts[0] in PROTOCOLS]
    store_files = [p for p in paths if p.relative_to(pkg).parts[0] in ("store", "store.py")]
    report_mods = [n for n in modules if n.startswith("clearsight.report")]
    metrics_users = [
        n for n in report_mods if any(m.startswith("clearsight.metrics") for m in graph[n])
    ]
    typer_options = sum(
        isinstance(node, ast.Call) and ast.unparse(node.func) == "typer.Option"
        for p in paths
        for node in ast.walk(ast.parse(p.read_text()))
    )
    longest, where = _longest_function(paths)
    circles = _circles(graph)
    return {
        "largest_protocol_module": max(_lines(p) for p in protocol_files),
        "loose_modules": sum(1 for p in pkg.glob("*.py") if p.name != "__init__.py"),
        "import_circles": len(circles),
        "import_circle_members": "; ".join(" <-> ".join(c) for c in circles) or "-",
        "report_modules_importing_metrics": len(metrics_users),
        "typer_options": typer_options,
        "longest_function": longest,
        "longest_function_at": where,
        "largest_store_file": max(_lines(p) for p in store_files),
        "dict_str_any": sum(p.read_text().count("dict[str, Any]") for p in paths),
        "repeated_block_pairs": _repeated_pairs(paths),
        "protocols_in_init": _protocols_in_init(pkg / "__init__.py"),
        "protocol_top_modules": _top_modules(pkg),
        "typed_readout_kinds": _typed_kinds(pkg),
    }


def main() -> None:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path.cwd()
    for name, value in measure(root).items():
        print(f"{name}: {value}")


if __name__ == "__main__":
    main()
