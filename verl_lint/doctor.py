"""`verl-lint doctor`: a readable report of the environment a verl job would run in.

Versions, accelerator, the allocator env, what the verl tree does with the allocator (read from
its source), and the live allocator findings (`rules.allocator_live`). Nothing is imported in
this process: not torch, torch-npu, vllm, sglang nor verl. The device (its name and memory, what
the memory checks of `verl-lint check --gpu-memory` need) is read by a child interpreter that
imports torch (`gpus.probe_device`), unless `--accelerator` says what to check as.

    verl-lint doctor [--verl-root DIR | --verl VERSION] [--accelerator cuda|npu|none]
                     [--rollout vllm|sglang] [--format text|json]

Exit code: 0 clean, 1 findings, 2 usage or input errors.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from .gpus import Device, probe_device

if TYPE_CHECKING:  # the CLI imports this module to build its parser: the inspection loads when doctor runs
    from .allocator.host import RuntimeReport
    from .launch.locate import VerlTree
    from .model import Diagnostic

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2
_LABELS = {
    "torch": "torch",
    "torch_npu": "torch-npu",
    "vllm": "vllm",
    "vllm_ascend": "vllm-ascend",
    "sglang": "sglang",
    "torch_memory_saver": "torch_memory_saver",
    "megatron_core": "megatron-core",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_mutually_exclusive_group()
    g.add_argument(
        "--verl-root",
        help="read this verl checkout's allocator code (default: a checkout above the cwd, else the installed verl)",
    )
    g.add_argument(
        "--verl", metavar="VERSION", help="read this verl release's allocator code (downloaded once, no dependencies)"
    )
    parser.add_argument(
        "--accelerator",
        choices=["cuda", "npu", "none"],
        help="check as if on this accelerator (default: detected without initialising a device)",
    )
    parser.add_argument(
        "--rollout",
        choices=["vllm", "sglang"],
        help="the rollout engine the job uses (sleep mode on, as verl's default)",
    )
    parser.add_argument("--format", choices=["text", "json"], default="text", help="%(choices)s (default: %(default)s)")


def _tree(args) -> VerlTree | None:
    """The verl tree to read: --verl-root, --verl, a checkout above the cwd, else the installed verl.
    Raises LocateError for a bad --verl-root or --verl."""
    from .launch.locate import (
        find_checkout,
        installed_tree,
        release_tree,
        tree_at,
    )  # when doctor runs, not to build the CLI

    if getattr(args, "verl_root", None):
        return tree_at(args.verl_root, "--verl-root")
    if getattr(args, "verl", None):
        return release_tree(args.verl)
    return find_checkout(Path.cwd()) or installed_tree()


def build(args) -> RuntimeReport:
    """The report with its findings. Raises LocateError for a bad --verl-root or --verl."""
    from .allocator.host import Accelerator, inspect_runtime  # when doctor runs, not to build the CLI
    from .rules.allocator_live import runtime_findings  # when doctor runs, not to build the CLI

    tree = _tree(args)
    acc = getattr(args, "accelerator", None)
    report = inspect_runtime(accelerator=Accelerator(acc, "--accelerator") if acc else None, verl_tree=tree)
    rollout = {"name": args.rollout} if getattr(args, "rollout", None) else None
    report.diagnostics = runtime_findings(report, rollout)
    return report


def run(args) -> int:
    from .launch.locate import LocateError  # when doctor runs, not to build the CLI

    try:
        report = build(args)
    except LocateError as ex:
        print(f"verl-lint doctor: error: {ex}", file=sys.stderr)
        return EXIT_USAGE
    device = None if getattr(args, "accelerator", None) else probe_device()  # --accelerator: checked as if on it
    if getattr(args, "format", "text") == "json":
        data = report.to_json()
        data["device"] = _device_json(device)
        print(json.dumps(data, indent=2, sort_keys=True))
    else:
        sys.stdout.write(render_text(report, device))
    return EXIT_FINDINGS if report.diagnostics else EXIT_CLEAN


def _device_json(d: Device | None) -> dict | None:
    if d is None:
        return None
    return {"torch": d.torch, "kind": d.kind, "count": d.count, "name": d.name, "gib": d.gib, "error": d.error}


def render_text(r: RuntimeReport, device: Device | None = None) -> str:
    out: list[str] = []
    w = out.append
    w("verl-lint doctor")
    w("")
    w(f"accelerator      {r.accelerator.describe()}")
    if device is not None:
        w(f"device           {device.describe()}")
        if device.gib is not None:
            w(f"                 (verl-lint check --gpu-memory {device.gib:.1f} judges memory against it)")
    w("")
    w("versions (installed, read without importing)")
    for key, label in _LABELS.items():
        w(f"  {label:<20} {r.versions.get(key) or 'not installed'}")
    w("")
    w("allocator env")
    for var, value in r.env.items():
        w(f"  {var:<24} {value if value is not None else '(unset)'}")
    w(
        f"  {'in effect (live)':<24} "
        f"{r.live_settings if r.live_settings is not None else '(unknown: ' + r.live_settings_source + ')'}"
    )
    w("")
    w("allocator API")
    for api in (r.torch_api, r.npu_api):
        if not api.installed:
            w(f"  {api.setter:<48} ({api.package} not installed)")
        else:
            where = f"{api.dir}/{'npu' if api.package == 'torch_npu' else 'cuda'}/memory.py:{api.setter_line}"
            w(f"  {api.setter:<48} {'defined at ' + where if api.has_setter else 'MISSING in ' + api.dir}")
    if r.torch_api.getter:
        w(f"  {r.torch_api.getter:<48} available")
    w("")
    w(f"verl             {r.verl_origin}")
    v = r.verl
    if v is not None:
        w(f"  set_expandable_segments   {v.helper or 'not found (verl never toggles the allocator)'}")
        for s in v.setters:
            note = ", errors swallowed (only a warning is logged)" if s.swallows_errors else ""
            w(f"  on {s.platform:<4} -> {s.api} at {s.where} (via {s.via}{note})")
        for p in ("cuda", "npu"):
            if v.setter_for(p) is None and v.helper:
                w(f"  on {p:<4} -> no path: verl does not touch the allocator there")
        if v.calls:
            w("  calls")
            for c in v.calls:
                cond = f"  when {' and '.join(c.conditions)}" if c.conditions else ""
                w(f"    {c.side:<8} {str(c.enable):<5} {c.owner} ({c.where}){cond}")
        trainer_classes = sorted({c.cls for c in v.trainer_enables if c.cls})
        w(f"  training enables expandable segments via: {', '.join(trainer_classes) or 'nothing'}")
        for w_ in v.env_writes:
            w(f"  env default      {w_.var}={w_.value!r} at {w_.where}")
    w("")
    if r.diagnostics:
        w(f"findings ({len(r.diagnostics)})")
        for d in r.diagnostics:
            w(_line(d))
    else:
        w("no findings")
    return "\n".join(out) + "\n"


def _line(d: Diagnostic) -> str:
    s = f"  {d.code} [{d.severity}] {d.message}"
    if d.help:
        s += f"\n    help: {d.help}"
    return s


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="verl-lint doctor", description="Report the environment a verl job would run in.")
    add_arguments(p)
    return run(p.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
