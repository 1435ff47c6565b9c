"""The shape of src/hybridfd's imports: no cycle, the library below its command line, and
the tuner in modules and functions of a readable size.

Every import statement of every module counts, those inside functions included (a
function's import runs when it is called, and a cycle through it is a cycle all the
same). An edge goes to the module an import names: ``from hybridfd.tune import cache``
names the submodule ``hybridfd.tune.cache``, ``from hybridfd.tune import plan`` the
package ``hybridfd.tune`` (its ``__init__``). Python runs a package's ``__init__``
before any of its submodules, but that implied step is not an edge: a package whose
``__init__`` re-exports its submodules' names imports them, and that is no cycle unless
one of them imports the package back (``from hybridfd.tune import X`` in a submodule of
hybridfd.tune, which would find it half made).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"
PACKAGE = "hybridfd"
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted((SRC / PACKAGE).rglob("*.py"))}


def is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def defined_names(tree: ast.Module) -> set[str]:
    """The names a module's top level binds (what ``from module import name`` can find
    without a submodule of that name)."""
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for target in targets for t in ast.walk(target) if isinstance(t, ast.Name))
    return names


def imported(name: str, path: Path, tree: ast.Module, known: dict[str, Path], trees: dict) -> set[str]:
    """The modules of the package that module ``name`` imports anywhere in its text."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                # Relative to the module's package (a package's __init__ is its own package).
                base = name.split(".") if is_package(path) else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                # A name the package binds itself is the package's; any other is a submodule
                # (a compiled extension such as hybridfd._core has no source here).
                bound = target in trees and alias.name in defined_names(trees[target])
                found.add(sub if sub in known or (target in known and not bound) else target)
    return {module for module in found if module == PACKAGE or module.startswith(PACKAGE + ".")}


def graph() -> dict[str, set[str]]:
    known = modules()
    trees = {name: ast.parse(path.read_text(), str(path)) for name, path in known.items()}
    return {name: imported(name, known[name], trees[name], known, trees) - {name} for name in known}


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``edges`` as the modules along it (first repeated last), else None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(edges):
        if start not in state and (cycle := visit(start)):
            return cycle
    return None


def test_the_graph_sees_imports_in_functions_and_relative_ones() -> None:
    tree = ast.parse("from . import b\nfrom .c import d\ndef f():\n    import hybridfd.e\n")
    known = {name: Path(name) for name in ("hybridfd.x", "hybridfd.x.a", "hybridfd.x.b", "hybridfd.x.c", "hybridfd.e")}
    path = Path("src/hybridfd/x/a.py")
    trees = {"hybridfd.x.c": ast.parse("d = 1")}
    assert imported("hybridfd.x.a", path, tree, known, trees) == {"hybridfd.x.b", "hybridfd.x.c", "hybridfd.e"}
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle() -> None:
    cycle = find_cycle(graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_library_never_imports_the_command_line() -> None:
    # The command line is hybridfd.cli and ``python -m hybridfd``, which runs it.
    cli = PACKAGE + ".cli"
    entry = PACKAGE + ".__main__"
    offenders = {
        name: sorted(m for m in targets if m == cli or m.startswith(cli + "."))
        for name, targets in graph().items()
        if not (name in (cli, entry) or name.startswith(cli + "."))
    }
    assert {name: found for name, found in offenders.items() if found} == {}


TUNE = [path for name, path in modules().items() if name == PACKAGE + ".tune" or name.startswith(PACKAGE + ".tune.")]


@pytest.mark.parametrize("path", TUNE, ids=lambda path: path.name)
def test_the_tuner_s_modules_and_functions_are_short(path: Path) -> None:
    text = path.read_text()
    assert len(text.splitlines()) <= MAX_MODULE_LINES
    long = [
        f"{node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for node in ast.walk(ast.parse(text))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert long == []
