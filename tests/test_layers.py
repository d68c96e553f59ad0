"""The layers of docs/architecture.md, held against the code's imports.

Every `import` of the package is read from the source (function-level ones too: a lazy import
is still an arrow), and three rules are checked: arrows only point down the layers, no two
modules import each other (directly or around a loop), and no module imports another module's
private names. A new upward arrow, a cycle or a private import fails here, naming the modules.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

from tests.conftest import REPO

PACKAGE = REPO / "selfcorrect"
# Higher may import lower, never the reverse. `hooks` sits under `cli` (the click command
# `hook --help` shows the hooks) and over `commands` (a failure hook decides through a run).
RANK = {
    "entry": 6,
    "cli": 5,
    "hooks": 4,
    "commands": 3,
    "effects": 2,
    "checks": 1.5,  # the built-in validator's checks: they read the project through io
    "io": 1,
    "core": 0,
}
BASE = {"errors", "layout", "clock", "__init__"}  # import nothing of the package: every layer's


def _module(path: Path) -> str:
    return ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")


def _layer(module: str) -> str | None:
    parts = module.split(".")
    if len(parts) < 2 or parts[1] in BASE:
        return None
    return "entry" if parts[1] == "__main__" else parts[1]  # `python -m` is the front door too


@functools.cache
def _sources() -> dict[Path, ast.Module]:
    """Every module of the package, read and parsed once for all the tests of this file."""
    return {path: ast.parse(path.read_text("utf-8")) for path in sorted(PACKAGE.rglob("*.py"))}


@functools.cache
def _imports() -> dict[str, frozenset[tuple[str, tuple[str, ...]]]]:
    """module -> {(imported module, names imported from it)}."""
    found: dict[str, set[tuple[str, tuple[str, ...]]]] = {}
    for path, tree in _sources().items():
        module = _module(path)
        arrows = found.setdefault(module, set())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                if node.module.startswith("selfcorrect"):
                    arrows.add((node.module, tuple(a.name for a in node.names)))
            elif isinstance(node, ast.Import):
                arrows |= {(a.name, ()) for a in node.names if a.name.startswith("selfcorrect")}
    return {module: frozenset(arrows) for module, arrows in found.items()}


def _target(imported: str, names: tuple[str, ...], modules: set[str]) -> list[str]:
    """The modules an import reaches: `from selfcorrect.core import plan` reaches core.plan."""
    reached = [f"{imported}.{name}" for name in names if f"{imported}.{name}" in modules]
    return reached or ([imported] if imported in modules else [])


def test_arrows_only_point_down() -> None:
    upward = []
    for module, arrows in _imports().items():
        source = _layer(module)
        for imported, _names in arrows:
            target = _layer(imported)
            if source is None or target is None or source == target:
                continue
            if RANK[target] >= RANK[source] and not (source == "io" and target == "core"):
                upward.append(f"{module} -> {imported}")
    assert upward == [], "imports against docs/architecture.md's layers:\n" + "\n".join(upward)


def test_no_import_cycles() -> None:
    imports = _imports()
    modules = set(imports)
    graph = {
        module: {t for imported, names in arrows for t in _target(imported, names, modules)}
        - {module}
        for module, arrows in imports.items()
    }
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1 on the current path, 2 done

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for nxt in sorted(graph.get(module, ())):
            if state.get(nxt) == 1:
                cycles.append([*path[path.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert cycles == [], "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_no_module_imports_another_modules_private_names() -> None:
    private = [
        f"{module} imports {name} from {imported}"
        for module, arrows in _imports().items()
        for imported, names in arrows
        for name in names
        if name.startswith("_") and not name.startswith("__") and imported != module
    ]
    assert private == [], "\n".join(private)


def test_no_function_is_over_complexity_30() -> None:
    """A function past cyclomatic complexity 30 is several decisions in one: split it
    (radon's measure, which counts boolean operators too)."""
    from radon.complexity import cc_visit_ast

    over = [
        f"{path.relative_to(REPO)}:{block.lineno} {block.name}: {block.complexity}"
        for path, tree in _sources().items()
        for block in cc_visit_ast(tree)  # radon's cc_visit is ast.parse, then this
        if block.complexity > 30
    ]
    assert over == [], "\n".join(over)
