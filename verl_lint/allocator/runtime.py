"""What only the live process can know about the caching allocator, read without importing.

`check_allocator()` is cheap enough to call right before the rollout server launches (the Hydra
callback and `verl-lint doctor` call it too). It determines:

* the accelerator kind (CUDA, NPU, none): from modules the caller already imported, else from
  device files (`/dev/davinci*`, `/proc/driver/nvidia`); it never initialises a device itself;
* the installed torch / torch-npu / vllm / vllm-ascend / sglang / torch_memory_saver versions
  (`importlib.metadata`, no import);
* what the installed verl does with the allocator, read from its source with `ast`: which
  function `set_expandable_segments` reaches on each platform, whether the NPU path swallows
  the exception, and which workers call `set_expandable_segments(True)`;
* whether the installed torch / torch-npu define the setter verl calls (`torch_npu/npu/memory.py`
  read with `ast`, never imported);
* the allocator settings in effect: the env vars, and the live getter
  (`torch._C._accelerator_getAllocatorSettings`, torch >= 2.12) when the caller already
  imported torch.

Nothing here imports torch, torch_npu, vllm, sglang or verl: modules are only *used* when they
are already in `sys.modules`.
"""

# Real (not postponed) annotations: NamedTuple classes define faster, at every Hydra job start.

import ast
import os
import re
import sys
from dataclasses import dataclass, field
from typing import NamedTuple
from functools import lru_cache
from pathlib import Path

from ..registry import REGISTRY, Rule
from ..environment import TRACKED, installed_version, package_dir
from ..model import Diagnostic, Severity, Span

RUNTIME_SPAN = Span("<runtime>", 1, 1, 1, 1)
ALLOC_VARS = ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF", "PYTORCH_HIP_ALLOC_CONF", "PYTORCH_NPU_ALLOC_CONF")


# ----------------------------------------------------------- live-only rules ----


# Live rules are registered like every rule (docs, select/ignore, SARIF) but are found
# only in a running process: they have no example scripts.
for _rule in (
        Rule(
            "VL651",
            "allocator-setter-missing",
            Severity.WARNING,
            """The installed torch / torch-npu lacks the allocator setter the installed verl calls.

            ## What it does
            Reads which function verl's `set_expandable_segments` calls on this accelerator
            (`torch.npu.memory._set_allocator_settings` on NPU in verl >= 0.8.0) and whether the
            installed torch-npu's `torch_npu/npu/memory.py` defines it (read with `ast`).

            ## Why is this bad?
            torch-npu 2.6.0, 2.6.0.post3, 2.7.1 and 2.8.0 have no `_set_allocator_settings`
            (added in 2.6.0.post5 / 2.7.1.post2 / 2.8.0.post2 / 2.9.0). verl catches the
            AttributeError and only logs "Current version of torch-npu does not support
            `_set_allocator_settings`" (verl 0.9.1 `verl/plugin/platform/platform_npu.py:100-107`),
            so training runs without expandable segments: more fragmentation and OOM, no error.

            ## Use instead
            Upgrade torch-npu, or set `PYTORCH_NPU_ALLOC_CONF=expandable_segments:True` when the
            rollout does not use vllm-ascend sleep mode (which asserts on it).
            """,
            None,
            live=True,
        ),
        Rule(
            "VL652",
            "verl-never-enables-expandable-segments",
            Severity.WARNING,
            """The installed verl never enables expandable segments for training on this accelerator.

            ## What it does
            Reads the installed verl's source with `ast`: the platforms `set_expandable_segments`
            reaches, and the trainer-side calls `set_expandable_segments(True)` (TrainingWorker,
            ActorRolloutRefWorker, legacy FSDP/Megatron workers, sharding managers).

            ## Why is this bad?
            When the helper has no path for the accelerator (verl 0.6.x/0.7.x:
            `verl/utils/device.py` calls the setter only `if is_cuda_available`) or no trainer-side
            call enables it, training on NPU runs with expandable segments off unless the env
            enables them: more fragmentation and OOM, with no error.

            ## Use instead
            `PYTORCH_NPU_ALLOC_CONF=expandable_segments:True` (not together with vllm-ascend sleep
            mode), or a verl release whose `set_expandable_segments` has an NPU path.
            """,
            None,
            live=True,
        ),
):
    REGISTRY.register(_rule)


# ------------------------------------------------------------- versions ----


def installed_versions_all() -> dict[str, str | None]:
    """{version key: version or None} of every tracked package (torch, torch_npu, vllm, ...)."""
    return {key: installed_version(dist) for dist, key in TRACKED.items()}


# ---------------------------------------------------------- accelerator ----


class Accelerator(NamedTuple):
    kind: str  # "cuda" | "npu" | "none"
    detail: str

    def describe(self) -> str:
        return "no accelerator" + (f" ({self.detail})" if self.detail else "") if self.kind == "none" else f"{self.kind.upper()} ({self.detail})"


def detect_accelerator(dev_root: str = "/") -> Accelerator:
    """The accelerator of this host, without importing torch or initialising a device."""
    torch_npu = sys.modules.get("torch_npu")
    torch = sys.modules.get("torch")
    if torch_npu is not None and torch is not None:
        npu = getattr(torch, "npu", None)
        try:
            if npu is not None and npu.is_available():
                return Accelerator("npu", f"torch.npu.is_available(), {npu.device_count()} device(s)")
        except Exception:  # noqa: BLE001 - a broken driver must not stop the launch check
            pass
    if torch is not None:
        try:
            # is_available() does not create a CUDA context (cudaGetDeviceCount / NVML only).
            if torch.cuda.is_available():
                hip = getattr(torch.version, "hip", None)
                return Accelerator("cuda", f"torch.cuda.is_available(){', ROCm ' + hip if hip else ''}")
        except Exception:  # noqa: BLE001
            pass
    root = Path(dev_root)
    dev = _names(root / "dev")
    davinci = [n for n in dev if n.startswith("davinci") and n[7:8].isdigit()]
    if davinci or "davinci_manager" in dev:
        return Accelerator("npu", f"{len(davinci)} Ascend device file(s) under /dev")
    nvidia = _names(root / "proc" / "driver" / "nvidia" / "gpus") or [n for n in dev if n.startswith("nvidia") and n[6:7].isdigit()]
    if nvidia:
        return Accelerator("cuda", f"{len(nvidia)} NVIDIA GPU(s) found by the driver")
    if "kfd" in dev and any(n.startswith("renderD") for n in _names(root / "dev" / "dri")):
        return Accelerator("cuda", "ROCm device files (/dev/kfd)")
    return Accelerator("none", "no CUDA or NPU device found")


def _names(d: Path) -> list[str]:
    try:
        return os.listdir(d)
    except OSError:
        return []


# -------------------------------------------------- torch / torch-npu APIs ----


def _per_file(path: Path, what: str, compute, kind: type | tuple[type, ...]):
    """`compute()`, a fact about the file `path`, kept on disk per file version: reading torch's
    sources (a 15 ms parse of memory.py, a 400 KB stub) would cost every job start."""
    from ..cache import memo

    try:
        st = path.stat()
    except OSError:
        return None
    return memo("verl-allocator", f"{what}\0{path}\0{st.st_size}\0{st.st_mtime_ns}", compute, kind)


def _defines(path: Path, name: str) -> int | None:
    """The line of a top-level `def name` / `name = ...` in `path`, or None (file read with ast)."""
    return _per_file(path, f"defines {name}", lambda: _parse_defines(path, name), (int, type(None)))


def _mentions(path: Path, text: str) -> bool:
    try:
        return text in path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def _parse_defines(path: Path, name: str) -> int | None:
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (OSError, SyntaxError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return node.lineno
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return node.lineno
    return None


_VERSION_RE = re.compile(r"""^__version__\s*=\s*['"]([^'"]+)['"]""", re.M)


def _package_version(pkg: Path, dist: str) -> str | None:
    """`<pkg>/version.py`'s `__version__`, else the dist-info next to the package."""
    try:
        m = _VERSION_RE.search((pkg / "version.py").read_text(encoding="utf-8"))
        if m:
            return m.group(1)
    except OSError:
        pass
    norm = dist.replace("-", "_").lower()
    for meta in sorted(pkg.parent.glob("*.dist-info/METADATA")):
        if meta.parent.name.lower().startswith(norm + "-"):
            for line in meta.read_text(encoding="utf-8", errors="replace").splitlines():
                if line.startswith("Version:"):
                    return line.split(":", 1)[1].strip()
    return None


class AllocatorApi(NamedTuple):
    """The allocator setter/getter one installed package defines (read from its source)."""

    package: str  # "torch" | "torch_npu"
    dir: str | None  # None: not installed
    version: str | None
    setter: str  # the dotted name verl calls
    setter_line: int | None  # line of its definition, None when absent
    getter: str | None = None  # a live getter the package has, if any

    @property
    def installed(self) -> bool:
        return self.dir is not None

    @property
    def has_setter(self) -> bool | None:
        return None if self.dir is None else self.setter_line is not None


def inspect_torch_npu(pkg: Path | None = None) -> AllocatorApi:
    """torch-npu's `torch_npu/npu/memory.py`: is `_set_allocator_settings` defined? Never imported."""
    pkg = pkg if pkg is not None else package_dir("torch_npu")
    setter = "torch.npu.memory._set_allocator_settings"
    if pkg is None or not (pkg / "npu" / "memory.py").is_file():
        return AllocatorApi("torch_npu", None, None, setter, None)
    version = _package_version(pkg, "torch_npu") or installed_version("torch-npu")
    return AllocatorApi("torch_npu", str(pkg), version, setter, _defines(pkg / "npu" / "memory.py", "_set_allocator_settings"))


def inspect_torch(pkg: Path | None = None) -> AllocatorApi:
    """torch's `torch/cuda/memory.py` setter and the `_C` allocator-settings getter (stub read as text)."""
    pkg = pkg if pkg is not None else package_dir("torch")
    setter = "torch.cuda.memory._set_allocator_settings"
    if pkg is None or not (pkg / "cuda" / "memory.py").is_file():
        return AllocatorApi("torch", None, None, setter, None)
    version = _package_version(pkg, "torch") or installed_version("torch")
    stub = pkg / "_C" / "__init__.pyi"
    has_getter = _per_file(stub, "getter", lambda: _mentions(stub, "def _accelerator_getAllocatorSettings"), bool)
    getter = "torch._C._accelerator_getAllocatorSettings" if has_getter else None
    return AllocatorApi("torch", str(pkg), version, setter, _defines(pkg / "cuda" / "memory.py", "_set_allocator_settings"), getter)


def live_allocator_settings() -> tuple[str | None, str]:
    """(the settings string in effect, how it was read); only when the caller already imported torch.

    torch >= 2.12 has `torch._C._accelerator_getAllocatorSettings()`; it returns the last
    settings string (env or `_set_allocator_settings`). It does not initialise a device, but
    it parses the env on first use, so a malformed config raises here (reported, not raised).
    """
    torch = sys.modules.get("torch")
    if torch is None:
        return None, "torch is not imported in this process"
    getter = getattr(getattr(torch, "_C", None), "_accelerator_getAllocatorSettings", None)
    if getter is None:
        return None, "the installed torch has no allocator-settings getter (torch < 2.12)"
    try:
        return str(getter()), "torch._C._accelerator_getAllocatorSettings()"
    except Exception as ex:  # noqa: BLE001 - exactly what the check wants to report
        return None, f"the allocator rejected its config: {type(ex).__name__}: {str(ex).splitlines()[0] if str(ex) else ''}"


# ------------------------------------------------------- verl's source ----


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
        return any(w.var == var and w.value and "expandable_segments:True" in w.value.replace(" ", "") for w in self.env_writes)

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
    from ..launch.locate import wheel_record

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
    from ..cache import memo

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
        if "set_expandable_segments(" in text or f"{_SETTER_ATTR}(" in text or "_ALLOC_CONF\"" in text or "_ALLOC_CONF'" in text:
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
            for call, anc in _find_calls(tree, lambda c: _call_name(c) == _SETTER_ATTR, _lines_with(texts[f], _SETTER_ATTR)):
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
                setters.append(SetterPath(_platform_of(api, conds, None, rel(helper_file)), api, f"{rel(helper_file)}:{call.lineno}", "direct", swallowed))
            elif name in direct and name != "set_expandable_segments":
                setters.extend(direct[name])
    setters = list(dict.fromkeys(setters))

    # 3. the call sites.
    calls: list[CallSite] = []
    for f, tree in trees.items():
        if "set_expandable_segments(" not in texts[f]:
            continue
        for call, anc in _find_calls(tree, lambda c: _call_name(c) == "set_expandable_segments", _lines_with(texts[f], "set_expandable_segments")):
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
        if "_ALLOC_CONF\"" not in texts[f] and "_ALLOC_CONF'" not in texts[f]:
            continue
        for node in ast.walk(tree):
            key = value = None
            if isinstance(node, ast.Dict):
                for k, v in zip(node.keys, node.values, strict=True):
                    if isinstance(k, ast.Constant) and isinstance(k.value, str) and k.value in ALLOC_VARS:
                        key, value = k.value, v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else None
                        writes.append(EnvWrite(key, f"{rel(f)}:{k.lineno}", value))
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Subscript):
                sl = node.targets[0].slice
                if isinstance(sl, ast.Constant) and sl.value in ALLOC_VARS:
                    value = node.value.value if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str) else None
                    writes.append(EnvWrite(sl.value, f"{rel(f)}:{node.lineno}", value))
            elif isinstance(node, ast.Call) and _call_name(node) == "setdefault" and node.args:
                a0 = node.args[0]
                if isinstance(a0, ast.Constant) and a0.value in ALLOC_VARS:
                    v = node.args[1] if len(node.args) > 1 else None
                    value = v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else None
                    writes.append(EnvWrite(a0.value, f"{rel(f)}:{node.lineno}", value))

    from ..launch.locate import read_version

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
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == field_name:
                    return stmt.value.value if isinstance(stmt.value, ast.Constant) else None
    return ...


# ------------------------------------------------------------- report ----


@dataclass(eq=False, repr=False)  # an entity, compared by identity: cheaper to define
class RuntimeReport:
    """Everything the live allocator check read from this process and host."""

    accelerator: Accelerator
    versions: dict[str, str | None]
    env: dict[str, str | None]
    live_settings: str | None
    live_settings_source: str
    torch_api: AllocatorApi
    npu_api: AllocatorApi
    verl: VerlAllocatorCode | None
    verl_origin: str
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def to_json(self) -> dict:
        v = self.verl
        return {
            "accelerator": {"kind": self.accelerator.kind, "detail": self.accelerator.detail},
            "versions": self.versions,
            "allocator_env": self.env,
            "live_settings": self.live_settings,
            "live_settings_source": self.live_settings_source,
            "torch": _api_json(self.torch_api),
            "torch_npu": _api_json(self.npu_api),
            "verl": None
            if v is None
            else {
                "root": v.root,
                "version": v.version,
                "origin": self.verl_origin,
                "set_expandable_segments": v.helper,
                "setters": [s._asdict() for s in v.setters],
                "calls": [{**c._asdict(), "conditions": list(c.conditions)} for c in v.calls],
                "env_writes": [w._asdict() for w in v.env_writes],
            },
            "diagnostics": [d.to_json() for d in self.diagnostics],
        }


def _api_json(a: AllocatorApi) -> dict:
    return {"installed": a.installed, "dir": a.dir, "version": a.version, "setter": a.setter, "has_setter": a.has_setter, "setter_line": a.setter_line, "getter": a.getter}


def _section(cfg, key):
    if cfg is None:
        return None
    try:
        if isinstance(cfg, dict) or hasattr(cfg, "keys"):
            return cfg.get(key) if key in cfg else None
    except Exception:  # noqa: BLE001 - an OmegaConf node with an interpolation error
        return None
    return getattr(cfg, key, None)


def rollout_settings(rollout_config) -> dict:
    """name / enable_sleep_mode / free_cache_engine / vLLM engine_kwargs sleep mode from a rollout
    config (dict, DictConfig or dataclass); the whole trainer config is accepted too."""
    cfg = rollout_config
    aro = _section(cfg, "actor_rollout_ref")
    if aro is not None:
        cfg = _section(aro, "rollout")
    out = {}
    for k in ("name", "enable_sleep_mode", "free_cache_engine"):
        v = _section(cfg, k)
        if v is not None:
            out[k] = v
    ek = _section(_section(cfg, "engine_kwargs"), "vllm")
    v = _section(ek, "enable_sleep_mode")
    if v is not None:
        out["engine_kwargs_sleep"] = v
    return out


def inspect_runtime(
    *,
    environ: dict[str, str] | None = None,
    accelerator: Accelerator | str | None = None,
    verl_tree=None,
    torch_dir: Path | None = None,
    torch_npu_dir: Path | None = None,
    versions: dict[str, str | None] | None = None,
    dev_root: str = "/",
) -> RuntimeReport:
    """Everything the live check reads. Every input can be injected (tests, `doctor --verl`)."""
    environ = dict(os.environ if environ is None else environ)
    if isinstance(accelerator, str):
        accelerator = Accelerator(accelerator, "given by the caller")
    acc = accelerator or detect_accelerator(dev_root)
    torch_api = inspect_torch(torch_dir)
    npu_api = inspect_torch_npu(torch_npu_dir)
    vers = installed_versions_all()
    if torch_api.version:
        vers["torch"] = torch_api.version
    if npu_api.version:
        vers["torch_npu"] = npu_api.version
    vers.update(versions or {})
    if verl_tree is None:
        from ..launch.locate import installed_tree

        verl_tree = installed_tree()
    verl = analyze_verl(str(verl_tree.root), verl_tree.version) if verl_tree is not None else None
    live, how = live_allocator_settings()
    env = {k: environ.get(k) for k in ALLOC_VARS}
    return RuntimeReport(acc, vers, env, live, how, torch_api, npu_api, verl, verl_tree.describe() if verl_tree else "verl is not installed")


def _diag(code: str, message: str, key: str = "", help: str = "") -> Diagnostic:
    r = REGISTRY.get(code)
    return Diagnostic(code, r.name, r.severity, message, RUNTIME_SPAN, help, key)


def runtime_findings(report: RuntimeReport, rollout_config=None) -> list[Diagnostic]:
    """The live findings of a report: API/regression checks plus the env rules (6xx) on os.environ."""
    diags: list[Diagnostic] = []
    acc = report.accelerator
    env = report.env
    rs = rollout_settings(rollout_config)
    npu_env = (env.get("PYTORCH_NPU_ALLOC_CONF") or "").replace(" ", "")
    npu_env_expandable = "expandable_segments:True" in npu_env
    vllm_sleep = rs.get("name") == "vllm" and rs.get("engine_kwargs_sleep", rs.get("enable_sleep_mode", True)) is not False
    sleep_note = (
        " (not with vllm-ascend sleep mode: its CaMemAllocator asserts when PYTORCH_NPU_ALLOC_CONF contains expandable_segments:True)"
        if vllm_sleep or rs.get("name") is None
        else ""
    )
    v = report.verl
    if acc.kind == "npu" and v is not None and not npu_env_expandable:
        sp = v.setter_for("npu")
        if not v.enables_training_on("npu"):
            if sp is None and v.helper:
                why = f"its set_expandable_segments ({v.helper}) has no NPU path"
            elif sp is None:
                why = "it has no set_expandable_segments helper"
            else:
                seen = ", ".join(f"{c.owner}({c.enable}) at {c.where}" for c in v.calls) or "none"
                why = f"no trainer-side worker (TrainingWorker, the engine workers) calls set_expandable_segments(True) (calls: {seen})"
            diags.append(
                _diag(
                    "VL652",
                    f"this verl version ({v.version or 'unknown'}) never enables expandable segments for training on NPU: {why}; "
                    "training runs with expandable segments off (more fragmentation, OOM, no error)",
                    "PYTORCH_NPU_ALLOC_CONF",
                    "set PYTORCH_NPU_ALLOC_CONF=expandable_segments:True" + sleep_note,
                )
            )
        elif sp is not None and report.npu_api.has_setter is False:
            swallow = (
                f"verl catches the error and only logs a warning ({sp.where})"
                if sp.swallows_errors
                else f"verl's call at {sp.where} raises AttributeError"
            )
            diags.append(
                _diag(
                    "VL651",
                    f"expandable segments will not be enabled on this NPU: torch-npu {report.npu_api.version or '(unknown version)'} "
                    f"lacks _set_allocator_settings ({report.npu_api.dir}/npu/memory.py), which verl calls; {swallow}",
                    "PYTORCH_NPU_ALLOC_CONF",
                    "set PYTORCH_NPU_ALLOC_CONF=expandable_segments:True" + sleep_note
                    + " or upgrade torch-npu (>= 2.6.0.post5 / 2.7.1.post2 / 2.8.0.post2 / 2.9.0)",
                )
            )
    if acc.kind == "cuda" and v is not None and v.setter_for("cuda") is not None and report.torch_api.has_setter is False:
        sp = v.setter_for("cuda")
        diags.append(
            _diag(
                "VL651",
                f"torch {report.torch_api.version or ''} lacks torch.cuda.memory._set_allocator_settings, which verl calls at {sp.where}",
                "PYTORCH_CUDA_ALLOC_CONF",
                "upgrade torch (the setter exists since 1.13)",
            )
        )
    # The static allocator rules, on the env this process (and the workers it starts) has. Every
    # one of them needs an allocator variable, so the rule pack is imported only when one is set.
    if any(v is not None for v in env.values()):
        from ..rules import allocator as alloc_rules

        diags.extend(alloc_rules.runtime_env_findings(report, rs))
    return diags


def check_allocator(rollout_config=None, **inputs) -> list[Diagnostic]:
    """Live allocator check; call it right before the rollout server launches.

    `rollout_config`: `actor_rollout_ref.rollout` (or the whole trainer config), a dict,
    DictConfig or dataclass; it tells the rollout engine and whether sleep mode is on.
    Keyword `inputs` are passed to `inspect_runtime` (environ, accelerator, verl_tree, ...).
    Returns diagnostics located at `<runtime>:1:1`; never raises for a bad environment.
    """
    report = inspect_runtime(**inputs)
    return runtime_findings(report, rollout_config)
