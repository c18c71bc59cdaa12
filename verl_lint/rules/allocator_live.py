"""The live allocator check: the rules only a running process can judge (VL651, VL652) and
`check_allocator`, which also runs the 6xx env rules on the process env.

`check_allocator()` is cheap enough to call right before the rollout server launches (the Hydra
callback and `verl-lint doctor` call it too). What it judges is gathered without importing
torch, torch_npu, vllm, sglang or verl (`allocator.host.inspect_runtime`).
"""

from ..allocator.host import RUNTIME_SPAN, RuntimeReport, inspect_runtime
from ..model import Diagnostic
from ..registry import declare

# Live rules are declared like every rule (docs, select/ignore, SARIF) but are found only in a
# running process: they have no example scripts. (Their docs keep the indentation they always had:
# SARIF carries the text verbatim.)
SETTER_MISSING = declare(
    "VL651",
    "allocator-setter-missing",
    "warning",
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
    live=True,
)
NEVER_ENABLES = declare(
    "VL652",
    "verl-never-enables-expandable-segments",
    "warning",
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
    live=True,
)


def _section(cfg, key):
    """`cfg[key]` of a dict, DictConfig or dataclass; None when absent or unresolvable."""
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


def runtime_findings(report: RuntimeReport, rollout_config=None) -> list[Diagnostic]:
    """The live findings of a report: API/regression checks plus the env rules (6xx) on os.environ."""
    diags: list[Diagnostic] = []
    acc = report.accelerator
    env = report.env
    rs = rollout_settings(rollout_config)
    npu_env = (env.get("PYTORCH_NPU_ALLOC_CONF") or "").replace(" ", "")
    npu_env_expandable = "expandable_segments:True" in npu_env
    vllm_sleep = (
        rs.get("name") == "vllm" and rs.get("engine_kwargs_sleep", rs.get("enable_sleep_mode", True)) is not False
    )
    sleep_note = (
        " (not with vllm-ascend sleep mode: its CaMemAllocator asserts when PYTORCH_NPU_ALLOC_CONF contains "
        "expandable_segments:True)"
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
                why = (
                    "no trainer-side worker (TrainingWorker, the engine workers) calls "
                    f"set_expandable_segments(True) (calls: {seen})"
                )
            diags.append(
                NEVER_ENABLES.finding(
                    f"this verl version ({v.version or 'unknown'}) never enables expandable segments for training on "
                    f"NPU: {why}; "
                    "training runs with expandable segments off (more fragmentation, OOM, no error)",
                    RUNTIME_SPAN,
                    key="PYTORCH_NPU_ALLOC_CONF",
                    help="set PYTORCH_NPU_ALLOC_CONF=expandable_segments:True" + sleep_note,
                )
            )
        elif sp is not None and report.npu_api.has_setter is False:
            swallow = (
                f"verl catches the error and only logs a warning ({sp.where})"
                if sp.swallows_errors
                else f"verl's call at {sp.where} raises AttributeError"
            )
            diags.append(
                SETTER_MISSING.finding(
                    "expandable segments will not be enabled on this NPU: torch-npu "
                    f"{report.npu_api.version or '(unknown version)'} "
                    f"lacks _set_allocator_settings ({report.npu_api.dir}/npu/memory.py), which verl calls; {swallow}",
                    RUNTIME_SPAN,
                    key="PYTORCH_NPU_ALLOC_CONF",
                    help="set PYTORCH_NPU_ALLOC_CONF=expandable_segments:True"
                    + sleep_note
                    + " or upgrade torch-npu (>= 2.6.0.post5 / 2.7.1.post2 / 2.8.0.post2 / 2.9.0)",
                )
            )
    if (
        acc.kind == "cuda"
        and v is not None
        and v.setter_for("cuda") is not None
        and report.torch_api.has_setter is False
    ):
        sp = v.setter_for("cuda")
        diags.append(
            SETTER_MISSING.finding(
                f"torch {report.torch_api.version or ''} lacks torch.cuda.memory._set_allocator_settings, which verl "
                f"calls at {sp.where}",
                RUNTIME_SPAN,
                key="PYTORCH_CUDA_ALLOC_CONF",
                help="upgrade torch (the setter exists since 1.13)",
            )
        )
    # The static allocator rules, on the env this process (and the workers it starts) has. Every
    # one of them needs an allocator variable, so their module is imported only when one is set.
    if any(v is not None for v in env.values()):
        from .allocator import (
            runtime_env_findings,
        )  # heavy (omegaconf through the config context): only when a variable is set

        diags.extend(runtime_env_findings(report, rs))
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
