"""The house rules that keep the source easy to read, checked on the source: no import circle between files (module
level, inside functions and under ``if TYPE_CHECKING:`` alike), no function longer than 60 lines, and no issue
number in the source or the docs (code and docs name the concept)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
PACKAGE = SRC / "nnperf"
MAX_FUNCTION_LINES = 60


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _imported(node: ast.AST, importer: str, is_package: bool) -> Iterator[str]:
    """The modules an import statement names (a name imported from a package counts as its submodule where one
    exists, which the caller resolves)."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
        if node.level:
            base = importer.split(".")
            base = base[: len(base) - node.level + (1 if is_package else 0)]
            module = ".".join([*base, node.module] if node.module else base)
        else:
            module = node.module or ""
        yield module
        yield from (f"{module}.{alias.name}" for alias in node.names)


def import_graph() -> dict[str, set[str]]:
    """Each nnperf module and the nnperf modules it imports anywhere in its body."""
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            for target in _imported(node, name, path.name == "__init__.py"):
                if target in modules and target != name:
                    graph[name].add(target)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
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
                    found.append(sorted(component))
    return found


def _package_inits(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The graph without the edges from a module to the ``__init__`` of a package that contains it: a package's
    ``__init__`` gathers what its files offer, and a file reading a sibling through it is the package's business,
    not a circle between two files (a module whose name starts another's is that package's ``__init__``)."""
    return {name: {t for t in targets if not name.startswith(t + ".")} for name, targets in graph.items()}


def test_the_circle_finder_finds_a_circle_and_passes_a_chain() -> None:
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_no_file_imports_a_file_that_imports_it_back() -> None:
    found = circles(_package_inits(import_graph()))
    assert not found, "import circles between files:\n" + "\n".join(" <-> ".join(c) for c in found)


def _long_functions() -> Iterator[str]:
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = node.end_lineno - node.lineno + 1  # type: ignore[operator]
                if lines > MAX_FUNCTION_LINES:
                    yield f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({lines} lines)"


def test_no_function_in_src_is_longer_than_60_lines() -> None:
    long = list(_long_functions())
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines:\n" + "\n".join(long)


ISSUE_NUMBER = re.compile(r"\bissue [0-9]", re.IGNORECASE)


def test_source_and_docs_name_concepts_not_issue_numbers() -> None:
    files = [*PACKAGE.rglob("*.py"), *(ROOT / "docs").rglob("*.md"), ROOT / "README.md"]
    hits = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}" for path in files
            for number, line in enumerate(path.read_text().splitlines(), 1) if ISSUE_NUMBER.search(line)]
    assert not hits, "issue numbers where a concept should be named:\n" + "\n".join(hits)
