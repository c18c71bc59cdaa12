"""What this host and the live process have for the caching allocator, read without importing.

* the accelerator kind (CUDA, NPU, none): from modules the caller already imported, else from
  device files (`/dev/davinci*`, `/proc/driver/nvidia`); it never initialises a device itself;
* the installed torch / torch-npu / vllm / vllm-ascend / sglang / torch_memory_saver versions
  (`importlib.metadata`, no import);
* whether the installed torch / torch-npu define the setter verl calls (`torch_npu/npu/memory.py`
  read with `ast`, never imported);
* the allocator settings in effect: the env vars, and the live getter
  (`torch._C._accelerator_getAllocatorSettings`, torch >= 2.12) when the caller already
  imported torch.

`inspect_runtime` gathers these and what the verl tree does with the allocator
(`allocator.verl_code`) into one `RuntimeReport`, which the live rules judge
(`rules.allocator_live`) and `verl-lint doctor` prints.

Nothing here imports torch, torch_npu, vllm, sglang or verl: modules are only *used* when they
are already in `sys.modules`.
"""

# Real (not postponed) annotations: NamedTuple classes define faster, at every Hydra job start.

import ast
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from ..cache import memo
from ..environment import TRACKED, installed_version, package_dir
from ..launch.locate import VerlTree, installed_tree
from ..model import Diagnostic, Span
from .alloc_conf import ALLOC_VARS
from .verl_code import VerlAllocatorCode, analyze_verl

RUNTIME_SPAN = Span("<runtime>", 1, 1, 1, 1)  # where every live finding is located


# ------------------------------------------------------------- versions ----


def installed_versions_all() -> dict[str, str | None]:
    """{version key: version or None} of every tracked package (torch, torch_npu, vllm, ...)."""
    return {key: installed_version(dist) for dist, key in TRACKED.items()}


# ---------------------------------------------------------- accelerator ----


class Accelerator(NamedTuple):
    kind: str  # "cuda" | "npu" | "none"
    detail: str

    def describe(self) -> str:
        return (
            "no accelerator" + (f" ({self.detail})" if self.detail else "")
            if self.kind == "none"
            else f"{self.kind.upper()} ({self.detail})"
        )


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
    nvidia = _names(root / "proc" / "driver" / "nvidia" / "gpus") or [
        n for n in dev if n.startswith("nvidia") and n[6:7].isdigit()
    ]
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


_VERSION_RE = r"""(?m)^__version__\s*=\s*['"]([^'"]+)['"]"""  # a pattern: compiled (by `re`) when torch_npu is read


def _package_version(pkg: Path, dist: str) -> str | None:
    """`<pkg>/version.py`'s `__version__`, else the dist-info next to the package."""
    try:
        m = re.search(_VERSION_RE, (pkg / "version.py").read_text(encoding="utf-8"))
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
    return AllocatorApi(
        "torch_npu", str(pkg), version, setter, _defines(pkg / "npu" / "memory.py", "_set_allocator_settings")
    )


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
    return AllocatorApi(
        "torch", str(pkg), version, setter, _defines(pkg / "cuda" / "memory.py", "_set_allocator_settings"), getter
    )


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
        return (
            None,
            f"the allocator rejected its config: {type(ex).__name__}: {str(ex).splitlines()[0] if str(ex) else ''}",
        )


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
    return {
        "installed": a.installed,
        "dir": a.dir,
        "version": a.version,
        "setter": a.setter,
        "has_setter": a.has_setter,
        "setter_line": a.setter_line,
        "getter": a.getter,
    }


def inspect_runtime(
    *,
    environ: dict[str, str] | None = None,
    accelerator: Accelerator | str | None = None,
    verl_tree: VerlTree | None = None,
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
        verl_tree = installed_tree()
    verl = analyze_verl(str(verl_tree.root), verl_tree.version) if verl_tree is not None else None
    live, how = live_allocator_settings()
    env = {k: environ.get(k) for k in ALLOC_VARS}
    return RuntimeReport(
        acc,
        vers,
        env,
        live,
        how,
        torch_api,
        npu_api,
        verl,
        verl_tree.describe() if verl_tree else "verl is not installed",
    )
