"""What a verl tree does with the caching allocator, read from its source with `ast` (never imported).

* which function `set_expandable_segments` reaches on each platform (the allocator setter it
  calls, directly or one hop through a platform class), and whether the call swallows errors;
* which workers call `set_expandable_segments(...)`, with what value and under which guards;
* the allocator env var defaults verl's code writes;
* the defaults of `RolloutConfig` fields (sleep mode).

Results are kept on disk per tree (keyed by its sources' stamp) and in memory per process.
"""

# Real (not postponed) annotations: NamedTuple classes define faster, at every Hydra job start.

import ast
import os
import re
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

from ..cache import memo
from ..launch.locate import read_version, wheel_record
from .alloc_conf import ALLOC_VARS


class SetterPath(NamedTuple):
    """One way verl's `set_expandable_segments` reaches an allocator setter."""

    platform: str  # "cuda" | "npu" | other torch device module name
    api: str  # the dotted call as written, e.g. "torch.npu.memory._set_allocator_settings"
    where: str  # "verl/plugin/platform/platform_npu.py:102"
    via: str  # "direct" or the function/method in between ("PlatformNPU.set_allocator_settings")
    swallows_errors: bool  # inside `try: ... except Exception:` that does not re-raise


class CallSite(NamedTuple):
    """A call of `set_expandable_segments(...)` in verl."""

    path: str  # relative to the tree root
    line: int
    cls: str | None
    func: str | None
    enable: bool | None  # None: not a literal
    conditions: tuple[str, ...]  # enclosing `if` tests and earlier early-return guards
    side: str  # "trainer" | "rollout"

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"

    @property
    def owner(self) -> str:
        return ".".join(x for x in (self.cls, self.func) if x) or "<module>"


class EnvWrite(NamedTuple):
    """A string constant naming an allocator env var in verl's code (a default verl sets)."""

    var: str
    where: str
    value: str | None  # the constant assigned, when it is one


class VerlAllocatorCode(NamedTuple):
    root: str
    version: str | None
    helper: str | None  # "verl/utils/device.py:137" of `def set_expandable_segments`
    setters: tuple[SetterPath, ...]
    calls: tuple[CallSite, ...]
    env_writes: tuple[EnvWrite, ...] = ()

    def setter_for(self, platform: str) -> SetterPath | None:
        return next((s for s in self.setters if s.platform == platform), None)

    @property
    def platforms(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(s.platform for s in self.setters))

    @property
    def trainer_enables(self) -> tuple[CallSite, ...]:
        return tuple(c for c in self.calls if c.side == "trainer" and c.enable is True)

    def enables_training_on(self, platform: str) -> bool:
        """verl itself turns expandable segments on for training on `platform` (setter or env default)."""
        if self.setter_for(platform) is not None and self.trainer_enables:
            return True
        var = "PYTORCH_NPU_ALLOC_CONF" if platform == "npu" else "PYTORCH_CUDA_ALLOC_CONF"
        return any(
            w.var == var and w.value and "expandable_segments:True" in w.value.replace(" ", "") for w in self.env_writes
        )

    def toggles_allocator_on(self, platform: str) -> bool:
        """verl re-parses the allocator settings at run time on `platform` (which resets options)."""
        return self.setter_for(platform) is not None and any(c.enable is not None for c in self.calls)


_SETTER_ATTR = "_set_allocator_settings"
_BROAD = {"Exception", "BaseException", "AttributeError", "RuntimeError"}
_DEVICE_WORDS = ("cuda", "npu", "xpu", "mlu", "musa", "hpu")


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    elif isinstance(node, ast.Call):
        parts.append(_dotted(node.func) + "()")
    return ".".join(reversed(parts))


def _call_name(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _swallows(handler: ast.ExceptHandler) -> bool:
    t = handler.type
    names = [] if t is None else [_dotted(e).rsplit(".", 1)[-1] for e in (t.elts if isinstance(t, ast.Tuple) else [t])]
    broad = t is None or any(n in _BROAD for n in names)
    return broad and not any(isinstance(n, ast.Raise) for n in ast.walk(handler))


def _find_calls(tree: ast.AST, wanted, lines: set[int] | None = None) -> list[tuple[ast.Call, tuple[ast.AST, ...]]]:
    """Calls for which `wanted(call)` holds, with their ancestor chain. With `lines`, only
    subtrees whose source range holds one of those lines are visited (the text was grepped)."""
    found: list[tuple[ast.Call, tuple[ast.AST, ...]]] = []

    def visit(node: ast.AST, stack: tuple[ast.AST, ...]) -> None:
        if isinstance(node, ast.Call) and wanted(node):
            found.append((node, stack))
        stack = stack + (node,)
        for child in ast.iter_child_nodes(node):
            lo, hi = getattr(child, "lineno", None), getattr(child, "end_lineno", None)
            if lines is not None and lo is not None and hi is not None and not any(lo <= n <= hi for n in lines):
                continue
            visit(child, stack)

    visit(tree, ())
    return found


def _lines_with(text: str, needle: str) -> set[int]:
    return {i for i, line in enumerate(text.splitlines(), 1) if needle in line}


def _contains(parent_list: list[ast.stmt], node: ast.AST) -> bool:
    """`node` lies inside one of the statements (by source position; statements do not overlap)."""
    pos = (node.lineno, node.col_offset)
    return any((s.lineno, s.col_offset) <= pos and pos < (s.end_lineno, s.end_col_offset) for s in parent_list)


def _context(call: ast.Call, ancestors: tuple[ast.AST, ...]):
    """(class, function, conditions, swallowed, guard names) for a call from its ancestors."""
    cls = func = None
    conds: list[str] = []
    swallowed = False
    chain = list(ancestors) + [call]
    for i, a in enumerate(ancestors):
        child = chain[i + 1]
        if isinstance(a, ast.ClassDef):
            cls = a.name
        elif isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef)):
            func = a.name
            conds = []  # conditions of an outer function do not guard an inner one
            # early returns before the statement that holds the call
            for stmt in a.body:
                if stmt is child or _contains([stmt], call):
                    break
                if isinstance(stmt, ast.If) and stmt.body and isinstance(stmt.body[-1], (ast.Return, ast.Raise)):
                    conds.append(f"not ({ast.unparse(stmt.test)})")
        elif isinstance(a, ast.If):
            test = ast.unparse(a.test)
            conds.append(test if _contains(a.body, call) else f"not ({test})")
        elif isinstance(a, ast.Try) and _contains(a.body, call):
            swallowed = swallowed or any(_swallows(h) for h in a.handlers)
    return cls, func, tuple(conds), swallowed


def _platform_of(api: str, conds: tuple[str, ...], cls: str | None, path: str) -> str:
    parts = api.lower().split(".")
    for word in _DEVICE_WORDS:
        if word in parts:
            return word
    hay = " ".join(conds + (cls or "", Path(path).stem)).lower()
    for word in _DEVICE_WORDS:
        if re.search(rf"(?<![a-z]){word}(?![a-z])", hay) or f"is_{word}_available" in hay or f"platform{word}" in hay:
            return word
    return "unknown"


def _py_files(pkg: Path):
    for dirpath, dirnames, filenames in os.walk(pkg):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__" and not d.startswith("."))
        for f in sorted(filenames):
            if f.endswith(".py"):
                yield Path(dirpath, f)


def _source_stamp(root: Path, version: str | None) -> str:
    """What identifies the verl sources at `root`: an installed wheel by its RECORD (installers
    replace files, they never edit them in place), anything else (a checkout, an editable
    install) by every `.py` file's path, size and mtime, read with os.scandir."""
    record = wheel_record(root)
    if record is not None:
        return record
    out = []
    stack = [str(root / "verl")]
    while stack:
        try:
            entries = sorted(os.scandir(stack.pop()), key=lambda e: e.name)
        except OSError:
            continue
        for e in entries:
            try:
                if e.is_dir(follow_symlinks=False):
                    if e.name != "__pycache__" and not e.name.startswith("."):
                        stack.append(e.path)
                elif e.name.endswith(".py"):
                    st = e.stat()
                    out.append(f"{e.path}\0{st.st_size}\0{st.st_mtime_ns}")
            except OSError:
                continue
    return "\n".join(out)


@lru_cache(maxsize=16)
def analyze_verl(root: str | Path, version: str | None = None) -> VerlAllocatorCode:
    """What verl at `root` (the directory containing `verl/`) does with the allocator, from its source.

    Reading ~400 files costs ~0.1-0.2 s, so the result is kept on disk, keyed by the sources'
    stamp (a changed checkout is read again)."""
    ident = f"{root}\0{version}\0{_source_stamp(Path(root), version)}"
    return memo("verl-allocator", ident, lambda: _analyze_verl(Path(root), version), VerlAllocatorCode)


def _analyze_verl(root: Path, version: str | None) -> VerlAllocatorCode:
    root = Path(root)
    pkg = root / "verl"
    texts: dict[Path, str] = {}
    for f in _py_files(pkg):
        try:
            text = f.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if (
            "set_expandable_segments(" in text
            or f"{_SETTER_ATTR}(" in text
            or '_ALLOC_CONF"' in text
            or "_ALLOC_CONF'" in text
        ):
            texts[f] = text
    trees: dict[Path, ast.AST] = {}
    for f, text in texts.items():
        try:
            trees[f] = ast.parse(text, filename=str(f))
        except (SyntaxError, ValueError):
            continue

    def rel(f: Path) -> str:
        return f.relative_to(root).as_posix()

    # 1. functions/methods that call a `*._set_allocator_settings(...)` directly.
    direct: dict[str, list[SetterPath]] = {}  # function name -> setter paths
    helper_node = helper_file = None
    for f, tree in trees.items():
        if f"{_SETTER_ATTR}(" in texts[f]:
            for call, anc in _find_calls(
                tree, lambda c: _call_name(c) == _SETTER_ATTR, _lines_with(texts[f], _SETTER_ATTR)
            ):
                cls, func, conds, swallowed = _context(call, anc)
                api = _dotted(call.func)
                via = f"{cls}.{func}" if cls else (func or "<module>")
                sp = SetterPath(_platform_of(api, conds, cls, rel(f)), api, f"{rel(f)}:{call.lineno}", via, swallowed)
                direct.setdefault(func or "<module>", []).append(sp)
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name == "set_expandable_segments":
                if helper_node is None or rel(f).endswith("utils/device.py"):
                    helper_node, helper_file = node, f

    # 2. what the helper reaches: its own setter calls, or one hop into a function that has them.
    setters: list[SetterPath] = []
    if helper_node is not None:
        for call, anc in _find_calls(helper_node, lambda c: True):
            name = _call_name(call)
            if name == _SETTER_ATTR:
                _, _, conds, swallowed = _context(call, anc)
                api = _dotted(call.func)
                setters.append(
                    SetterPath(
                        _platform_of(api, conds, None, rel(helper_file)),
                        api,
                        f"{rel(helper_file)}:{call.lineno}",
                        "direct",
                        swallowed,
                    )
                )
            elif name in direct and name != "set_expandable_segments":
                setters.extend(direct[name])
    setters = list(dict.fromkeys(setters))

    # 3. the call sites.
    calls: list[CallSite] = []
    for f, tree in trees.items():
        if "set_expandable_segments(" not in texts[f]:
            continue
        for call, anc in _find_calls(
            tree, lambda c: _call_name(c) == "set_expandable_segments", _lines_with(texts[f], "set_expandable_segments")
        ):
            cls, func, conds, _ = _context(call, anc)
            enable = None
            arg = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "enable"), None)
            if isinstance(arg, ast.Constant) and isinstance(arg.value, bool):
                enable = arg.value
            side = "rollout" if "/rollout/" in f"/{rel(f)}" else "trainer"
            calls.append(CallSite(rel(f), call.lineno, cls, func, enable, conds, side))

    # 4. allocator env vars that verl's code names as a string (defaults it writes).
    writes: list[EnvWrite] = []
    for f, tree in trees.items():
        if '_ALLOC_CONF"' not in texts[f] and "_ALLOC_CONF'" not in texts[f]:
            continue
        for node in ast.walk(tree):
            key = value = None
            if isinstance(node, ast.Dict):
                for k, v in zip(node.keys, node.values, strict=True):
                    if isinstance(k, ast.Constant) and isinstance(k.value, str) and k.value in ALLOC_VARS:
                        key, value = (
                            k.value,
                            v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else None,
                        )
                        writes.append(EnvWrite(key, f"{rel(f)}:{k.lineno}", value))
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Subscript):
                sl = node.targets[0].slice
                if isinstance(sl, ast.Constant) and sl.value in ALLOC_VARS:
                    value = (
                        node.value.value
                        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
                        else None
                    )
                    writes.append(EnvWrite(sl.value, f"{rel(f)}:{node.lineno}", value))
            elif isinstance(node, ast.Call) and _call_name(node) == "setdefault" and node.args:
                a0 = node.args[0]
                if isinstance(a0, ast.Constant) and a0.value in ALLOC_VARS:
                    v = node.args[1] if len(node.args) > 1 else None
                    value = v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else None
                    writes.append(EnvWrite(a0.value, f"{rel(f)}:{node.lineno}", value))

    return VerlAllocatorCode(
        str(root),
        version or read_version(root),
        f"{rel(helper_file)}:{helper_node.lineno}" if helper_node is not None else None,
        tuple(setters),
        tuple(sorted(calls, key=lambda c: (c.path, c.line))),
        tuple(writes),
    )


@lru_cache(maxsize=16)
def rollout_config_default(root: str | Path, field_name: str):
    """The default of a `RolloutConfig` dataclass field in verl's source (ast), or `...` when absent."""
    f = Path(root) / "verl" / "workers" / "config" / "rollout.py"
    try:
        tree = ast.parse(f.read_bytes(), filename=str(f))
    except (OSError, SyntaxError, ValueError):
        return ...
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "RolloutConfig":
            for stmt in node.body:
                if (
                    isinstance(stmt, ast.AnnAssign)
                    and isinstance(stmt.target, ast.Name)
                    and stmt.target.id == field_name
                ):
                    return stmt.value.value if isinstance(stmt.value, ast.Constant) else None
    return ...
