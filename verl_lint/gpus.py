"""GPU memory: the device sizes `--gpu NAME` and the `gpu` setting name, the memory of the
live device where the accelerator's Python module is already loaded (never imported here), and,
for `verl-lint doctor`, the device torch sees in a child interpreter (`probe_device`)."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass

GIB = 1 << 30
GPUS = {  # --gpu NAME -> GiB of device memory, as the vendors' data sheets state it
    "H100": 80,
    "H800": 80,
    "H200": 141,
    "H20": 96,
    "A100-40GB": 40,
    "A100-80GB": 80,
    "A800": 80,
    "L40S": 48,
    "L20": 48,
    "A10": 24,
    "RTX4090": 24,
    "910B": 64,
    "B200": 180,
}


def gpu_gib(value: str | float | int) -> float:
    """The GiB of a GPU given by name (`H100`, `a100_80gb`) or as a number of GiB; ValueError
    saying what is accepted otherwise."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if value <= 0:
            raise ValueError(f"{value!r} GiB: the memory must be above 0")
        return float(value)
    name = str(value).strip().upper().replace("_", "-")
    if name in GPUS:
        return float(GPUS[name])
    raise ValueError(f"{value!r}: not a GPU verl-lint knows ({', '.join(GPUS)}); give its memory in GiB")


def live_gpu_gib() -> tuple[float, str] | None:
    """(GiB, which device) of this process's accelerator, read through torch (or torch_npu)
    only when the running job has already imported it and initialised the device; None
    otherwise. Nothing is imported and no device is initialised for the linter's sake (reading
    the properties of a device not yet initialised would initialise it in the job's process)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    for module, api in (("torch_npu", "npu"), ("torch", "cuda")):
        device = getattr(torch, api, None) if module in sys.modules else None
        try:
            if device is None or not device.is_initialized():
                continue
            props = device.get_device_properties(device.current_device())
        except Exception:  # noqa: BLE001 - a broken driver must not stop the launch check
            continue
        return device_gib(props.total_memory), f"{getattr(props, 'name', api)}, the live device"
    return None


def device_gib(total_bytes: int) -> float:
    """A device's total memory as the GiB the memory rules judge against."""
    return total_bytes / GIB


# Run by `probe_device` in a child interpreter: the accelerator module is imported there, never in
# verl-lint's process, and a hung driver costs the timeout, not the command.
_PROBE = """
import importlib.util, json
out = {"torch": None, "kind": None}
try:
    import torch
except Exception as ex:
    out["error"] = f"{type(ex).__name__}: {ex}"
else:
    out["torch"] = str(torch.__version__)
    if importlib.util.find_spec("torch_npu") is not None:
        import torch_npu  # noqa: F401 - registers torch.npu
    for kind in ("npu", "cuda"):
        device = getattr(torch, kind, None)
        try:
            if device is None or not device.is_available() or not device.device_count():
                continue
            props = device.get_device_properties(0)
        except Exception as ex:
            out["error"] = f"{kind}: {type(ex).__name__}: {ex}"
            continue
        out.update(kind=kind, count=device.device_count(), name=str(getattr(props, "name", kind)),
                   total_memory=int(props.total_memory))
        break
print(json.dumps(out))
"""


@dataclass(frozen=True, eq=False)  # never compared: no generated __eq__/__hash__ (~0.5 ms a job start)
class Device:
    """What torch (and torch_npu) in an environment see: the first accelerator, or none."""

    torch: str | None  # torch's version, None when it cannot be imported
    kind: str | None = None  # "cuda" or "npu"; None: no device
    count: int = 0
    name: str = ""
    gib: float | None = None  # the first device's total memory
    error: str = ""  # why torch or the device could not be read

    def describe(self) -> str:
        if self.torch is None:
            return f"unknown: torch cannot be imported here ({self.error or 'not installed'})"
        if self.kind is None:
            why = f"; {self.error}" if self.error else ""
            return f"none: torch {self.torch} sees no CUDA or NPU device{why}"
        return f"{self.count} x {self.name}, {self.gib:.1f} GiB each ({self.kind.upper()}, torch {self.torch})"


def probe_device(python: list[str] | None = None, timeout: float = 120.0) -> Device:
    """The accelerator torch sees in the environment of `python` (default: this interpreter),
    read in a child process that imports torch (and torch_npu where installed); a child that
    fails or hangs is a Device without torch, saying why."""
    import subprocess  # why: doctor only; the Hydra callback imports this module at every job start

    cmd = [*(python or [sys.executable]), "-c", _PROBE]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        got = json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 and done.stdout.strip() else None
    except subprocess.TimeoutExpired:
        return Device(None, error=f"importing torch took over {timeout:g} s")
    except (OSError, ValueError) as ex:
        return Device(None, error=str(ex))
    if not isinstance(got, dict):
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return Device(None, error=f"the probe failed: {last}")
    total = got.get("total_memory")
    return Device(
        torch=got.get("torch"),
        kind=got.get("kind"),
        count=int(got.get("count") or 0),
        name=str(got.get("name") or ""),
        gib=device_gib(total) if isinstance(total, int) else None,
        error=str(got.get("error") or ""),
    )
