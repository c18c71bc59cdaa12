"""GPU memory: the device sizes `--gpu NAME` and the `gpu` setting name, and the memory of the
live device where the accelerator's Python module is already loaded (never imported here)."""

from __future__ import annotations

import sys

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
