"""6xx: caching-allocator configuration (CUDA and Ascend NPU) and its clash with the rollout
engine's memory pool (vLLM sleep mode, SGLang's torch_memory_saver): the rules VL601-VL610.

Logic as code over knowledge as data: the checks are in `rules.allocator_checks`, the settings
grammar and which options each torch / torch-npu release accepts in `allocator.alloc_conf`
(`rules/allocator_options.yaml`); what verl does with the allocator is read from the verl
tree's source (`allocator.verl_code`). The same checks run on a script's env (exports, command
prefixes, `ray_kwargs.ray_init.runtime_env.env_vars.*`) and, through `runtime_env_findings`,
on the live process env (`rules.allocator_live`).
"""

from ..allocator.alloc_conf import ALLOC_VARS
from ..allocator.host import RUNTIME_SPAN, RuntimeReport
from ..allocator.verl_code import analyze_verl, rollout_config_default
from ..config.context import MISSING
from ..evidence import Evidence
from ..model import Diagnostic, EnvVar
from ..registry import family, parse_version, rule
from .allocator_checks import AllocInput, all_findings

# ---------------------------------------------------------- the inputs ----


def _sleep_mode(ctx) -> bool | None:
    """vLLM sleep mode in this launch (None: not known statically)."""
    ek = ctx.get("actor_rollout_ref.rollout.engine_kwargs.vllm.enable_sleep_mode", None)
    if isinstance(ek, bool):
        return ek  # verl passes engine_kwargs last: `**engine_kwargs` wins (0.9.1 vllm_async_server.py:349)
    v = ctx.get("actor_rollout_ref.rollout.enable_sleep_mode")
    if isinstance(v, bool):
        return v
    if v is not MISSING:
        return None  # set, but not known statically
    root = ctx.app.verl.root if ctx.app.verl is not None else None
    default = rollout_config_default(str(root), "enable_sleep_mode") if root is not None else ...
    if default is ...:  # no such RolloutConfig field: older verl passed free_cache_engine as sleep mode
        return ctx.flag("actor_rollout_ref.rollout.free_cache_engine")
    return default if isinstance(default, bool) else None


def _ctx_input(ctx) -> AllocInput:
    """The checks' input for a launch, built once per context."""
    cached = getattr(ctx, "_alloc_input", None)
    if cached is not None:
        return cached
    env = {k: ctx.env[k] for k in ALLOC_VARS if k in ctx.env}
    if not env:  # every 6xx check needs an allocator variable: skip the config and source reads
        ctx._alloc_input = AllocInput({}, {}, "either", None, None, None)
        return ctx._alloc_input
    device = "npu" if ctx.text("trainer.device") == "npu" else "either"
    name = ctx.text("actor_rollout_ref.rollout.name")
    tree = ctx.app.verl
    verl = analyze_verl(str(tree.root), tree.version) if tree is not None else None
    inp = AllocInput(env, dict(ctx.versions), device, name, _sleep_mode(ctx) if name == "vllm" else None, verl)
    ctx._alloc_input = inp
    return inp


@family
def analyse(ctx) -> list[Diagnostic]:
    """Every 6xx finding of a launch's env: the family of the rules below."""
    return all_findings(_ctx_input(ctx))


def runtime_env_findings(report: RuntimeReport, rollout: dict) -> list[Diagnostic]:
    """The 6xx checks on the live process env (`rules.allocator_live.check_allocator`)."""
    env = {k: EnvVar(k, v, RUNTIME_SPAN) for k, v in report.env.items() if v is not None}
    versions = {k: parse_version(v) for k, v in report.versions.items()}
    device = {"npu": "npu", "cuda": "cuda"}.get(report.accelerator.kind, "either")
    name = rollout.get("name")
    sleep = rollout.get("engine_kwargs_sleep", rollout.get("enable_sleep_mode", True)) if name == "vllm" else None
    inp = AllocInput(env, versions, device, name, bool(sleep) if sleep is not None else None, report.verl)
    return all_findings(inp)


# -------------------------------------------------------------- rules ----

VLLM = "actor_rollout_ref.rollout.name=vllm"
SGLANG = "actor_rollout_ref.rollout.name=sglang"
NPU = "trainer.device=npu"


@rule(
    "VL601",
    "alloc-conf-unknown-option",
    "error",
    producer=analyse,
)
def unknown_option():
    """An allocator env var names an option the caching allocator does not have.

    ## What it does
    Parses `PYTORCH_CUDA_ALLOC_CONF`, `PYTORCH_ALLOC_CONF`, `PYTORCH_HIP_ALLOC_CONF` and
    `PYTORCH_NPU_ALLOC_CONF` (exports, command prefixes and
    `ray_kwargs.ray_init.runtime_env.env_vars.*`) the way c10's `ConfigTokenizer` does, and
    checks every option against the options of the installed torch / torch-npu
    (`rules/allocator_options.yaml`), or of any release when the version is unknown. Suggests
    the closest real option.

    ## Why is this bad?
    The allocator rejects the whole string when a worker first uses the device:
    `RuntimeError: Unrecognized CachingAllocator option: <key>` (torch <= 2.9, torch-npu <= 2.12)
    or `ValueError: Unrecognized key '<key>' in ... allocator config` (torch >= 2.10,
    torch-npu >= 2.13). That happens inside the Ray workers, after the cluster is up.

    ## Use instead
    The option the did-you-mean names, e.g. `expandable_segments:True`.

    ## Where in verl
    Not verl: torch `c10/core/AllocatorConfig.h` (`getKeys`, 2.13.0) and
    `c10/cuda/CUDAAllocatorConfig.h:158-177` (2.13.0); torch-npu `NPUAllocatorConfig.cpp`
    (option names checked in the 2.6.0 ... 2.13.0 wheels).
    """


@rule(
    "VL602",
    "alloc-conf-bad-value",
    "error",
    producer=analyse,
)
def bad_value():
    """An allocator option has a value (or a `key=value` form) the allocator rejects.

    ## What it does
    Validates each option's value: booleans are exactly `True`/`False`; sizes in MB are
    integers >= 20 (> 20 on torch <= 2.9 and torch-npu <= 2.12); `garbage_collection_threshold`
    is in (0, 1); `roundup_power2_divisions` is a power of 2 or `[interval:divisions,...]`;
    `backend` is `native` or `cudaMallocAsync`; NPU `page_size` is `1g`. Flags `key=value`,
    which the allocator reads as one unknown option.

    ## Why is this bad?
    The allocator raises when a worker first uses the device, e.g. `ValueError: Expected 'True'
    or 'False' at index 2 in ConfigTokenizer but got 'true'` or `garbage_collect_threshold is
    invalid, set it in (0.0, 1.0)` (messages checked with torch 2.13.0).

    ## Use instead
    `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` (colon, capital T).

    ## Where in verl
    Not verl: torch `c10/core/AllocatorConfig.h:80-96` (`ConfigTokenizer::toBool`, 2.13.0).
    """


@rule(
    "VL603",
    "alloc-conf-malformed",
    "error",
    producer=analyse,
)
def malformed():
    """An allocator config string has an option without a value, or a stray separator.

    ## What it does
    Tokenizes the string like c10's `ConfigTokenizer` (`, : [ ]` separate, whitespace is
    ignored) and flags an option with no `:value`, an empty value, a second `:value`, or an
    unclosed `[` list. A trailing `,` and spaces are accepted by the allocator and not flagged.

    ## Why is this bad?
    The allocator aborts with `RuntimeError: ... INTERNAL ASSERT FAILED at
    "c10/core/AllocatorConfig.h":124 ... Index out of bounds in ConfigTokenizer` when a worker
    first uses the device (reproduced with torch 2.13.0; pytorch/pytorch#186453).

    ## Use instead
    `key:value` pairs separated by commas: `expandable_segments:True,max_split_size_mb:512`.

    ## Where in verl
    Not verl: torch `c10/core/AllocatorConfig.h:98-127` (2.13.0).
    """


@rule(
    "VL604",
    "alloc-conf-var-ignored",
    "warning",
    producer=analyse,
)
def var_ignored():
    """An allocator env var that the allocator in use never reads.

    ## What it does
    Flags `PYTORCH_ALLOC_CONF` when `PYTORCH_CUDA_ALLOC_CONF` is also set (with a different
    value), or on torch <= 2.9 (or an unknown torch); `PYTORCH_ALLOC_CONF` on NPU with
    torch-npu < 2.13; `PYTORCH_CUDA_ALLOC_CONF` alone with `trainer.device=npu`; and
    `PYTORCH_HIP_ALLOC_CONF` on a torch that is not a ROCm build.

    ## Why is this bad?
    The settings are silently dropped. torch 2.9.x reads only `PYTORCH_CUDA_ALLOC_CONF` for CUDA
    (2.9.1 `c10/cuda/CUDAAllocatorConfig.h:100-114`) even though it prints that this name is
    deprecated (pytorch/pytorch#183387). torch >= 2.10 reads `PYTORCH_CUDA_ALLOC_CONF` first and
    `PYTORCH_ALLOC_CONF` only when it is unset (2.13.0 `CUDAAllocatorConfig.h:133-154`; with
    both set, torch 2.13.0 reports the `PYTORCH_CUDA_ALLOC_CONF` string as the settings in
    effect). torch-npu reads `PYTORCH_NPU_ALLOC_CONF`, and `PYTORCH_ALLOC_CONF` only from 2.13.

    ## Use instead
    `PYTORCH_CUDA_ALLOC_CONF` on CUDA (every release), `PYTORCH_NPU_ALLOC_CONF` on Ascend.

    ## Where in verl
    verl forwards the driver's env to the Ray workers; it reads none of these variables.
    """


@rule(
    "VL605",
    "npu-alloc-conf-both-set",
    "error",
    producer=analyse,
)
def npu_both_set():
    """`PYTORCH_NPU_ALLOC_CONF` and `PYTORCH_ALLOC_CONF` are both set.

    ## What it does
    Flags a launch that sets both variables, unless the installed torch-npu is older than 2.13
    (which ignores `PYTORCH_ALLOC_CONF`).

    ## Why is this bad?
    torch-npu >= 2.13 reads both and refuses to start the allocator: `Both
    PYTORCH_NPU_ALLOC_CONF and PYTORCH_ALLOC_CONF have been set, please set only one of them.`
    (string present in the torch-npu 2.13.0 wheel, absent in 2.12.0).

    ## Use instead
    Only `PYTORCH_NPU_ALLOC_CONF` on Ascend.

    ## Where in verl
    Not verl: torch-npu `torch_npu/csrc/core/npu/NPUAllocatorConfig.cpp` (2.13.0).
    """


@rule(
    "VL606",
    "npu-expandable-segments-with-max-split",
    "error",
    producer=analyse,
)
def npu_expandable_conflict():
    """NPU `expandable_segments:True` together with `max_split_size_mb` or `garbage_collection_threshold`.

    ## What it does
    Flags `PYTORCH_NPU_ALLOC_CONF` that turns expandable segments on and also sets
    `max_split_size_mb` or `garbage_collection_threshold`.

    ## Why is this bad?
    torch-npu rejects the combination when the allocator starts: "`max_split_size_mb` or
    `garbage_collection_threshold`, cannot be enabled with `expandable_segments`, please set
    `expandable_segments` to `False`." (string in every torch-npu wheel checked, 2.6.0 to
    2.13.0). On CUDA the same combination is accepted.

    ## Use instead
    Drop `max_split_size_mb` / `garbage_collection_threshold`, or use `expandable_segments:False`.

    ## Where in verl
    Not verl: torch-npu `NPUCachingAllocator.cpp` / `NPUAllocatorConfig.cpp`.
    """


@rule(
    "VL607",
    "expandable-segments-with-vllm-sleep-mode",
    "error",
    producer=analyse,
    # verl's vLLM>=0.7 rollout passes enable_sleep_mode (0.2 on); the verl 0.1 that TinyZero/Logic-RL vendor does not.
    evidence=[Evidence(("verl/workers/rollout/vllm_rollout/*.py",), r"enable_sleep_mode[\"']?\s*[:=]")],
)
def vllm_sleep_mode():
    """`expandable_segments:True` in the env while vLLM runs with sleep mode (verl's default).

    ## What it does
    Flags `PYTORCH_CUDA_ALLOC_CONF` containing `expandable_segments:True` with
    `rollout.name=vllm` and sleep mode on (`enable_sleep_mode`, a `RolloutConfig` field that
    defaults to True; `engine_kwargs.vllm.enable_sleep_mode` wins), for vLLM 0.8.0-0.20.0 or an
    unknown vLLM; and `PYTORCH_NPU_ALLOC_CONF` containing it with vllm-ascend >= 0.10.0rc1 (or
    unknown).

    ## Why is this bad?
    vLLM's `CuMemAllocator.__init__` asserts `"expandable_segments:True" not in
    PYTORCH_CUDA_ALLOC_CONF` ("Expandable segments are not compatible with memory pool",
    vllm-project/vllm#14189, removed in 0.20.1 by #40812); vllm-ascend's `CaMemAllocator` has the
    same assert on `PYTORCH_NPU_ALLOC_CONF` from v0.10.0rc1 on. The rollout server dies when the
    model loads, after the Ray workers are up.

    ## Use instead
    Remove `expandable_segments:True`: verl turns expandable segments on for training itself
    and off before waking the rollout (`set_expandable_segments`).

    ## Where in verl
    0.9.1 `verl/workers/config/rollout.py:268` (`enable_sleep_mode: bool = True`),
    `verl/workers/rollout/vllm_rollout/vllm_async_server.py:337` (passed to vLLM) and `:349`
    (`**engine_kwargs` last); 0.7.1 `verl/workers/config/rollout.py:242`; 0.4.1
    `verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py:151`. Runs only on a tree whose vLLM
    rollout passes `enable_sleep_mode` to vLLM (not the verl 0.1 vendored in TinyZero, Logic-RL).
    """


@rule(
    "VL608",
    "expandable-segments-with-sglang-memory-saver",
    "error",
    producer=analyse,
)
def sglang_memory_saver():
    """`expandable_segments:True` in the env while verl runs SGLang with its memory saver.

    ## What it does
    Flags `PYTORCH_CUDA_ALLOC_CONF` containing `expandable_segments:True` with
    `rollout.name=sglang`, for torch_memory_saver >= 0.0.9 (SGLang >= 0.5.4) or unknown versions.

    ## Why is this bad?
    verl always starts SGLang with `enable_memory_saver=True`, and torch_memory_saver >= 0.0.9
    raises `RuntimeError("TorchMemorySaver is disabled for the current process because
    expandable_segments is not supported yet.")` at its first region/pause
    (`torch_memory_saver/entrypoint.py`, 0.0.9 lines 138-142): the rollout fails at startup.
    Older releases silently free nothing (VL609).

    ## Use instead
    Remove `expandable_segments:True`; verl enables it for training itself.

    ## Where in verl
    0.9.1 `verl/workers/rollout/sglang_rollout/async_sglang_server.py:319`;
    0.7.1 `async_sglang_server.py:184` (`"enable_memory_saver": True`).
    """


@rule(
    "VL609",
    "expandable-segments-hidden-from-memory-pool",
    "warning",
    producer=analyse,
)
def hidden_expandable():
    """Expandable segments are on in a form the rollout's memory pool does not detect.

    ## What it does
    Flags expandable segments turned on with vLLM sleep mode or SGLang's memory saver where
    their check does not see it: written with a space (`expandable_segments: True`, which
    torch accepts), set through `PYTORCH_ALLOC_CONF` (honoured by torch >= 2.10), or with
    releases that predate the check (vLLM < 0.8.0, torch_memory_saver < 0.0.9).

    ## Why is this bad?
    vLLM < 0.31 and torch_memory_saver <= 0.0.10 look only for the exact text
    `expandable_segments:True` in `PYTORCH_CUDA_ALLOC_CONF`. Memory in an expandable segment is
    not released by the pool, so sleep/pause frees nothing ("Sleep mode freed 0.00 GiB") and the
    trainer OOMs next to the resident rollout, with no error pointing at the cause
    (pytorch/pytorch#147851).

    ## Use instead
    Remove `expandable_segments:True` from the env; verl toggles it itself.

    ## Where in verl
    0.9.1 `verl/workers/engine_workers.py:768` and `:827` (`set_expandable_segments` around
    weight sync); 0.7.1 `engine_workers.py:633/679`.
    """


@rule(
    "VL610",
    "allocator-options-reset-by-verl",
    "info",
    producer=analyse,
)
def options_reset():
    """verl's expandable-segments toggle resets `max_split_size_mb` and friends.

    ## What it does
    Reads the verl tree's `set_expandable_segments` with `ast` (which setter it reaches on each
    platform and where it is called) and flags `max_split_size_mb`,
    `garbage_collection_threshold` or `roundup_power2_divisions` in the allocator env when verl
    toggles the allocator on that platform.

    ## Why is this bad?
    verl calls `_set_allocator_settings("expandable_segments:<bool>")` at every rollout/train
    switch. Every parse of a settings string resets these three options to their defaults
    unless the string sets them again (torch `AcceleratorAllocatorConfig::parseArgs`; the
    pre-2.10 CUDA parser likewise; torch-npu's setter too), so the user's value holds only
    until the first weight sync.

    ## Use instead
    Drop the option, or accept that it only applies to the first step.

    ## Where in verl
    0.9.1 `verl/utils/device.py:137-143` -> `verl/plugin/platform/platform_cuda.py:98-99`
    (`platform_npu.py:100-107` on NPU), called at `verl/workers/engine_workers.py:768/827`;
    0.7.1 `verl/utils/device.py:132-146` (CUDA only).
    """
