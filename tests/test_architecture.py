"""docs/ARCHITECTURE.md's rules of the house, checked on the source (read with ast, nothing imported):
the stages import only downward, a function-local import says why on its line, no module is over
600 lines."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "verl_lint"

# The layers, lowest first, as docs/ARCHITECTURE.md lists them. A module imports from its own
# group and from lower layers only; groups that share a layer (engines/, allocator/) do not
# import each other. Every module belongs to exactly one group.
BASE = (
    "model",
    "runs",
    "limits",
    "terminal",
    "files",
    "cache",
    "download",
    "environment",
    "evidence",
    "places",
    "registry",
    "examples",
    "catalogue",
    "knowledge",
    "table_checks",
    "table_records",
    "data_tables",
    "model_records",
    "embedded",
    "launchers",
    "models",
    "gpus",
)
FRONT = (
    "pipeline",
    "runner",
    "walk",
    "upgrade",
    "results",
    "settings",
    "check",
    "cli",
    "wrapper",
    "callback",
    "live",
    "config_view",
    "memory",
    "doctor",
    "__main__",
)
LAYERS: list[tuple[str, ...]] = [
    ("verl_lint", *(f"verl_lint.{m}" for m in BASE)),  # the package's own __init__: its version
    ("verl_lint.shell",),
    ("verl_lint.launch",),
    ("verl_lint.config",),
    ("verl_lint.engines", "verl_lint.allocator"),
    ("verl_lint.rules",),
    ("verl_lint.report",),
    tuple(f"verl_lint.{m}" for m in FRONT),
]
MAX_LINES = 600


def _name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _group(module: str) -> tuple[int, str]:
    """(layer, group) of a module: a package of the stages is one group, each base or front-end module its own."""
    for layer, groups in enumerate(LAYERS):
        for g in groups:
            if module == g or (g != "verl_lint" and module.startswith(g + ".")):
                return layer, g if layer not in (0, len(LAYERS) - 1) else ("base" if layer == 0 else "front")
    raise AssertionError(f"{module} is in no layer: place it in tests/test_architecture.py and docs/ARCHITECTURE.md")


def _imports(module: str, path: Path, type_only: bool = False):
    """(line, imported module, in a function, the source line) of each verl_lint import, not
    counting those under `if TYPE_CHECKING:` (annotations only) unless `type_only`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    lines = path.read_text(encoding="utf-8").splitlines()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    skip: set[int] = set()
    local: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test) and not type_only:
            skip |= {id(n) for n in ast.walk(node)}
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            local |= {id(n) for n in ast.walk(node)}
    for node in ast.walk(tree):
        if id(node) in skip or not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
            targets = (
                [".".join([*base, node.module])] if node.module else [".".join([*base, a.name]) for a in node.names]
            )
        elif isinstance(node, ast.ImportFrom):
            targets = [node.module]
        else:
            targets = [a.name for a in node.names]
        text = " ".join(lines[node.lineno - 1 : node.end_lineno])
        for t in targets:
            yield node.lineno, t, id(node) in local, text


def test_every_module_is_in_one_layer():
    for module in MODULES:
        _group(module)


def test_stages_import_only_downward():
    wrong = []
    for module, path in MODULES.items():
        layer, group = _group(module)
        for line, target, _, _ in _imports(module, path):
            if target != "verl_lint" and not target.startswith("verl_lint."):
                continue
            target = next(
                (m for m in (target, target.rpartition(".")[0]) if m in MODULES), target
            )  # `from .x import name`
            t_layer, t_group = _group(target)
            if t_layer > layer or (t_layer == layer and t_group != group):
                wrong.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {module} imports {target}")
    assert wrong == [], "\n".join(wrong)


def _module_graph() -> dict[str, set[str]]:
    """Each module's verl_lint imports, resolved to modules: every import, function-local and
    annotation-only ones included (`from .x import name` is module x, or x.name if a module)."""
    graph: dict[str, set[str]] = {}
    for module, path in MODULES.items():
        out = graph.setdefault(module, set())
        for _, target, _, _ in _imports(module, path, type_only=True):
            if target in MODULES or target.rpartition(".")[0] in MODULES:
                out.add(target if target in MODULES else target.rpartition(".")[0])
        out.discard(module)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles_type_only_included():
    """No module reaches itself through imports of any kind: a layer owns the protocols it is
    typed against (registry.Context, shell.values.Expanding), never an annotation from above."""
    assert _cycles(_module_graph()) == []


def test_the_cycle_check_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_function_local_imports_say_why():
    silent = []
    for module, path in MODULES.items():
        for line, target, in_function, text in _imports(module, path):
            if in_function and "#" not in text:
                silent.append(
                    f"{path.relative_to(PACKAGE.parent)}:{line}: import {target} inside a function, without a reason on its line"
                )
    assert silent == [], "\n".join(silent)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_is_over_the_limit(module):
    n = len(MODULES[module].read_text(encoding="utf-8").splitlines())
    assert n <= MAX_LINES, f"{MODULES[module]} has {n} lines (limit {MAX_LINES}): split it along a real seam"


def test_the_checks_catch_what_they_check(tmp_path):
    """The checks above judge real imports: an upward import and a silent local import in a
    written module are found."""
    shell = tmp_path / "verl_lint" / "shell"
    shell.mkdir(parents=True)
    (shell / "bad.py").write_text("from ..rules import pack\n\n\ndef f():\n    import json\n")
    found = list(_imports("verl_lint.shell.bad", shell / "bad.py"))
    assert [(t, local) for _, t, local, _ in found] == [("verl_lint.rules", False), ("json", True)]
    assert _group("verl_lint.rules.pack")[0] > _group("verl_lint.shell.bad")[0]
