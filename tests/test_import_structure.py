"""The package's imports point one way.

Read from the source with ``ast`` (nothing is imported): every ``import`` and ``from … import``
counts, at module level, inside functions and under ``if TYPE_CHECKING:`` alike, each as an
arrow from its file to the file it names (``from pkg import mod`` names ``pkg/mod.py``; a name
defined in ``pkg/__init__.py`` names that file).  Then:

* no circle: no file reaches itself along the arrows (a circle means one idea has two homes);
* nothing below the CLI imports it (``cli/`` and ``__main__`` only);
* only the backend packages (``sqlite/``, ``postgres/``) and ``backend.py``, the one place that
  picks a backend, ask which backend is in use: no comparison with a backend's name, no lookup
  by ``dialect.name``, no test of a location for a server, no ``isinstance`` of a backend's
  class.  What differs is a method of the database object.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).parent.parent / "zett_sessions"
BACKEND_NAMES = {"sqlite", "postgres"}
BACKEND_CLASSES = {
    "Database",
    "PgDatabase",
    "SQLiteSessionStorage",
    "PostgresSessionStorage",
    "Upgradable",
}
LOCATION_TESTS = {"is_server", "is_dsn"}


def _modules() -> dict[str, Path]:
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


MODULES = _modules()


def _base(name: str, path: Path, level: int, module: str | None) -> str:
    here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    if level:
        here = here[: len(here) - (level - 1)]
        return ".".join([*here, *([module] if module else [])])
    return module or ""


def _arrows(name: str, path: Path) -> set[str]:
    """The package's modules this file imports."""
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _base(name, path, node.level, node.module)
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                targets.add(submodule if submodule in MODULES else base)
    return {target for target in targets if target in MODULES and target != name}


GRAPH = {name: _arrows(name, path) for name, path in MODULES.items()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one file (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_file_of_the_package_imports_itself_through_others() -> None:
    assert circles(GRAPH) == []


def test_the_circle_finder_sees_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [["a", "b", "c"]]


def test_nothing_below_the_cli_imports_it() -> None:
    importers = {
        name
        for name, targets in GRAPH.items()
        if any(t == "zett_sessions.cli" or t.startswith("zett_sessions.cli.") for t in targets)
    }
    below = {
        name
        for name in importers
        if not name.startswith("zett_sessions.cli") and name != "zett_sessions.__main__"
    }
    assert below == set()


def _is_backend_name(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value in BACKEND_NAMES


def _is_dialect_name(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "name"
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "dialect"
    )


def backend_branches(tree: ast.AST) -> list[int]:
    """Lines of ``tree`` that ask which backend is in use."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_is_backend_name(side) or _is_dialect_name(side) for side in sides):
                lines.append(node.lineno)
        elif (isinstance(node, ast.Subscript) and _is_dialect_name(node.slice)) or (
            isinstance(node, ast.Dict) and sum(map(_is_backend_name, node.keys)) >= 2
        ):
            lines.append(node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in LOCATION_TESTS:
                lines.append(node.lineno)
            elif node.func.id == "isinstance" and len(node.args) == 2:
                kinds = node.args[1]
                names = kinds.elts if isinstance(kinds, ast.Tuple) else [kinds]
                if any(isinstance(n, ast.Name) and n.id in BACKEND_CLASSES for n in names):
                    lines.append(node.lineno)
    return lines


def test_only_the_backends_ask_which_backend_is_in_use() -> None:
    allowed = ("zett_sessions.sqlite", "zett_sessions.postgres", "zett_sessions.backend")
    found = {
        str(path.relative_to(PACKAGE.parent)): lines
        for name, path in MODULES.items()
        if not name.startswith(allowed) and (lines := backend_branches(ast.parse(path.read_text())))
    }
    assert found == {}


def test_the_branch_finder_sees_each_kind_of_question() -> None:
    code = """
if db.dialect.name == "postgres": pass
facts = FACTS[db.dialect.name]
SOURCES = {"sqlite": A, "postgres": B}
if is_server(location): pass
if isinstance(db, PgDatabase): pass
if space.backend != "sqlite": pass
backend = db.dialect.name  # a value reported, not a question
"""
    assert backend_branches(ast.parse(code)) == [2, 3, 4, 5, 6, 7]
