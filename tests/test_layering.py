"""The package layering of src/nnperf, checked on the source (every import: module level, in functions, under
``if TYPE_CHECKING:``).

Layers, lowest first; a package may import its own layer and those below, never one above:

    errors, registry < ir < zoo < measure < primitives < store < prediction < campaign < fleet < accel < optimize < report
    < the public API (nnperf/__init__.py, nnperf/api/) < cli

and no module imports another top-level package's private module or name (``nnperf.X._y`` from outside ``X``,
``nnperf._y`` from anywhere but ``_y`` itself): the package exports what others use from its ``__init__``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "registry"),
    ("ir",),
    ("zoo",),
    ("measure",),
    ("primitives",),
    ("store",),
    ("prediction",),
    ("campaign",),
    ("fleet",),
    ("accel",),
    ("optimize",),
    ("report",),
    ("", "api"),  # "": nnperf/__init__.py, the public API
    ("cli",),
)
"""Top-level names under nnperf by layer, lowest first."""

LAYER_OF = {top: i for i, tops in enumerate(LAYERS) for top in tops}


@dataclass(frozen=True)
class Violation:
    path: str
    """The importing file, relative to the source root."""
    line: int
    importer: str
    imported: str
    rule: str
    """"layer" (imports a higher layer) or "private" (imports another package's private module or name)."""

    @property
    def key(self) -> tuple[str, str, str]:
        """What identifies the violation across edits (no line number)."""
        return self.importer, self.imported, self.rule

    def __str__(self) -> str:
        what = ("imports a higher layer" if self.rule == "layer" else "imports another package's private name")
        return f"{self.path}:{self.line}: {self.importer} {what}: {self.imported}"


def _private(part: str) -> bool:
    return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _top(module: str) -> str:
    """The top-level name under the package ("" for the package itself; ``__main__`` is the CLI's)."""
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else ""
    return "cli" if top == "__main__" else top


def _imports(tree: ast.AST, module: str, is_package: bool, modules: set[str]) -> set[tuple[int, str]]:
    """(line, dotted name) of everything imported; ``from M import n`` gives M.n when it is a module or private."""
    found: set[tuple[int, str]] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                anchor = anchor[:len(anchor) - node.level + (1 if is_package else 0)]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                full = f"{base}.{alias.name}"
                found.add((node.lineno, full if full in modules or _private(alias.name) else base))
    return found


def check_layering(root: Path, package: str = "nnperf") -> list[Violation]:
    """Every import in ``root/package`` that breaks the layering or reaches into another package's privates.

    A module whose top-level name is in no layer is reported too (rule "layer", imported ""), so that a new
    package has to be placed.
    """
    files = sorted((root / package).rglob("*.py"))
    modules = {_module_name(f, root) for f in files}
    violations: list[Violation] = []
    for path in files:
        module = _module_name(path, root)
        rel = path.relative_to(root).as_posix()
        top = _top(module)
        if top not in LAYER_OF:
            violations.append(Violation(rel, 1, module, "", "layer"))
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for line, name in _imports(tree, module, path.name == "__init__.py", modules):
            parts = name.split(".")
            if parts[0] != package:
                continue
            target = _top(name)
            if LAYER_OF.get(target, -1) > LAYER_OF[top]:
                violations.append(Violation(rel, line, module, name, "layer"))
            if target != top and any(_private(part) for part in parts[1:]):
                violations.append(Violation(rel, line, module, name, "private"))
    return sorted(violations, key=lambda v: (v.path, v.line, v.imported, v.rule))


def test_the_source_tree_keeps_its_layers() -> None:
    found = check_layering(SRC)
    assert not found, "layering violations:\n" + "\n".join(map(str, found))


CLI_IMPORTS = frozenset({"cli", "api", "report", "errors", ""})
"""What the command line may import (``""``: the package itself, for ``__version__``): it parses, calls
:mod:`nnperf.api` and prints; the library's work is behind the API."""


def check_cli_imports(root: Path, package: str = "nnperf") -> list[str]:
    """Every import in ``root/package/cli`` of a top-level package outside :data:`CLI_IMPORTS`."""
    files = sorted((root / package).rglob("*.py"))
    modules = {_module_name(f, root) for f in files}
    found = []
    for path in files:
        module = _module_name(path, root)
        if _top(module) != "cli":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for line, name in sorted(_imports(tree, module, path.name == "__init__.py", modules)):
            if name.split(".")[0] == package and _top(name) not in CLI_IMPORTS:
                found.append(f"{path.relative_to(root).as_posix()}:{line}: {module} imports {name}")
    return found


def test_the_command_line_imports_only_the_api_the_reports_and_the_errors() -> None:
    found = check_cli_imports(SRC)
    assert not found, "the CLI does library work:\n" + "\n".join(found)


def test_the_cli_rule_reports_what_the_cli_reaches_past_the_api(tmp_path: Path) -> None:
    for name in ("nnperf/__init__.py", "nnperf/errors.py", "nnperf/api/__init__.py", "nnperf/report/__init__.py",
                 "nnperf/report/tables.py", "nnperf/store/__init__.py", "nnperf/measure/__init__.py"):
        _write(tmp_path, name)
    _write(tmp_path, "nnperf/cli/run_cmd.py", "from nnperf import __version__\nfrom nnperf.api import predict\n"
                                              "from nnperf.errors import NnperfError\n"
                                              "from nnperf.report.tables import metrics_table\n"
                                              "from nnperf.cli import _parser\n\n\n"
                                              "def run():\n    from nnperf.store import Store\n"
                                              "    import nnperf.measure\n")
    _write(tmp_path, "nnperf/cli/_parser.py")
    _write(tmp_path, "nnperf/report/summary.py", "from nnperf.store import Store\n")  # not the CLI: allowed
    assert check_cli_imports(tmp_path) == [
        "nnperf/cli/run_cmd.py:9: nnperf.cli.run_cmd imports nnperf.store",
        "nnperf/cli/run_cmd.py:10: nnperf.cli.run_cmd imports nnperf.measure",
    ]


def _write(root: Path, name: str, text: str = "") -> None:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_a_lower_layer_importing_a_higher_one_and_a_private_import_are_reported(tmp_path: Path) -> None:
    for name in ("nnperf/__init__.py", "nnperf/errors.py", "nnperf/ir/__init__.py", "nnperf/measure/__init__.py",
                 "nnperf/measure/_stats.py", "nnperf/report/__init__.py", "nnperf/report/_format.py"):
        _write(tmp_path, name)
    _write(tmp_path, "nnperf/ir/_network.py", "from nnperf.errors import NnperfError\n\n\n"
                                              "def f():\n    from nnperf.measure import measure\n")
    _write(tmp_path, "nnperf/report/tables.py", "from typing import TYPE_CHECKING\n"
                                                "from nnperf.measure import summarize\n"  # allowed: lower layer
                                                "from ._format import si\n"  # allowed: its own private module
                                                "if TYPE_CHECKING:\n    from nnperf.measure._stats import x\n")
    _write(tmp_path, "nnperf/measure/sweep.py", "from . import _stats\nfrom ..report import tables\n")
    found = [str(v) for v in check_layering(tmp_path)]
    assert found == [
        "nnperf/ir/_network.py:5: nnperf.ir._network imports a higher layer: nnperf.measure",
        "nnperf/measure/sweep.py:2: nnperf.measure.sweep imports a higher layer: nnperf.report.tables",
        ("nnperf/report/tables.py:5: nnperf.report.tables imports another package's private name: "
         "nnperf.measure._stats"),
    ]


def test_a_package_in_no_layer_is_reported(tmp_path: Path) -> None:
    _write(tmp_path, "nnperf/__init__.py")
    _write(tmp_path, "nnperf/extras/__init__.py")
    assert [v.key for v in check_layering(tmp_path)] == [("nnperf.extras", "", "layer")]


@pytest.mark.parametrize(("text", "expected"), [
    ("import nnperf.store._schema\n", "nnperf.store._schema"),
    ("from nnperf.store import _schema\n", "nnperf.store._schema"),
    ("from nnperf.store import _private_helper\n", "nnperf.store._private_helper"),
    ("from ..store import _schema\n", "nnperf.store._schema"),
])
def test_private_imports_in_each_spelling(tmp_path: Path, text: str, expected: str) -> None:
    for name in ("nnperf/__init__.py", "nnperf/store/__init__.py", "nnperf/store/_schema.py"):
        _write(tmp_path, name)
    _write(tmp_path, "nnperf/cli/__init__.py", text)
    assert [(v.imported, v.rule) for v in check_layering(tmp_path)] == [(expected, "private")]


# ------------------------------------------------------------------------------------------------------- bench/

BENCH = SRC.parent / "bench"


def _changes_sys_path(node: ast.AST) -> bool:
    """``sys.path.insert(...)``, ``.append``, ``.extend``, ``sys.path += ...`` or ``sys.path = ...``."""
    def is_sys_path(target: ast.AST) -> bool:
        return (isinstance(target, ast.Attribute) and target.attr == "path" and isinstance(target.value, ast.Name)
                and target.value.id == "sys")

    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.attr in ("insert", "append", "extend") and is_sys_path(node.func.value)
    if isinstance(node, ast.Assign | ast.AugAssign):
        return any(is_sys_path(t) for t in (node.targets if isinstance(node, ast.Assign) else [node.target]))
    return False


def check_bench(bench: Path, tests: Path) -> list[str]:
    """What the bench scripts in ``bench`` may not do: import a private nnperf name (``nnperf.X._y``, ``from
    nnperf.X import _y``), import a module of ``tests``, or change ``sys.path`` (a script runs with the installed
    package and finds its neighbours in its own folder)."""
    test_modules = {p.stem for p in tests.glob("*.py")} | {p.name for p in tests.iterdir() if p.is_dir()}
    found = []
    for path in sorted(bench.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for line, name in sorted(_imports(tree, path.stem, False, set())):
            parts = name.split(".")
            if parts[0] == "nnperf" and any(_private(part) for part in parts[1:]):
                found.append(f"{path.name}:{line}: imports a private name: {name}")
            elif parts[0] in test_modules and not (bench / f"{parts[0]}.py").exists():
                found.append(f"{path.name}:{line}: imports from tests/: {name}")
        found += [f"{path.name}:{node.lineno}: changes sys.path" for node in ast.walk(tree) if _changes_sys_path(node)]
    return found


def test_bench_scripts_import_only_public_names() -> None:
    found = check_bench(BENCH, SRC.parent / "tests")
    assert not found, "bench/ breaks the import rules:\n" + "\n".join(found)


def test_bench_check_reports_private_imports_tests_and_sys_path(tmp_path: Path) -> None:
    _write(tmp_path / "tests", "fuzz/strategies.py")
    _write(tmp_path / "bench", "ok.py", "import nnperf\nfrom nnperf.measure import host_info\nfrom _shared import pct\n")
    _write(tmp_path / "bench", "bad.py", "import sys\nimport nnperf.ir.importers._onnx as x\n"
                                         "from nnperf.api import _primitives\nfrom fuzz.strategies import PARSERS\n"
                                         "sys.path.insert(0, 'tests')\n")
    assert check_bench(tmp_path / "bench", tmp_path / "tests") == [
        "bad.py:2: imports a private name: nnperf.ir.importers._onnx",
        "bad.py:3: imports a private name: nnperf.api._primitives",
        "bad.py:4: imports from tests/: fuzz.strategies",
        "bad.py:5: changes sys.path",
    ]
