"""The 6xx allocator checks as logic over one `AllocInput`: the allocator env, the package
versions, the accelerator, the rollout engine and what verl does with the allocator.

The same checks judge a script (`rules.allocator` builds the input from a launch's context) and
the live process (`rules.allocator_live`, from a `RuntimeReport`). Each yields the `Diagnostic`s
of the rules it finds (`rules.allocator.analyse` is their family).

A version-dependent check with an unknown version never claims an installed version: it names
the version range where the combination fails.
"""

# Real (not postponed) annotations: NamedTuple classes define faster, at every Hydra job start.

from collections.abc import Iterator
from typing import NamedTuple

from packaging.version import Version

from ..allocator.alloc_conf import (
    ALLOC_VARS,
    EXPANDABLE_ON,
    NPU_VAR,
    ParsedConf,
    closest,
    norm,
    npu_has_setter_by_version,
    options,
    parse_conf,
    reset_keys,
    value_problem,
)
from ..allocator.verl_code import VerlAllocatorCode
from ..model import Diagnostic, EnvVar, Span
from ..registry import REGISTRY

V = Version
VLLM_ASSERT = (V("0.8.0"), V("0.20.1"))  # CuMemAllocator.__init__ asserts in [0.8.0, 0.20.1)
VLLM_LIVE_CONF = V("0.31.0")  # vLLM reads the live allocator config from here on
VLLM_ASCEND_NPU_VAR = V("0.10.0rc1")  # CaMemAllocator checks PYTORCH_NPU_ALLOC_CONF from here on
TMS_CHECK = V("0.0.9")  # torch_memory_saver raises from here on
SGLANG_TMS_009 = V("0.5.4")  # SGLang pins torch_memory_saver >= 0.0.9 from here on
TORCH_ALLOC_CONF = V("2.10")  # the CUDA allocator reads PYTORCH_ALLOC_CONF from here on
NPU_ALLOC_CONF = V("2.13.0")  # torch-npu reads PYTORCH_ALLOC_CONF (and refuses both) from here on


# ---------------------------------------------------------- the inputs ----


class AllocInput(NamedTuple):
    """What the allocator checks read, from a script (static) or from the live process."""

    env: dict[str, EnvVar]
    versions: dict[str, Version | None]
    device: str  # "npu" (known), "cuda" (known) or "either"
    rollout: str | None  # "vllm" | "sglang" | ... | None (unknown)
    vllm_sleep: bool | None  # vLLM sleep mode in effect (None: unknown)
    verl: VerlAllocatorCode | None

    def value(self, var: str) -> str | None:
        ev = self.env.get(var)
        return ev.value if ev is not None else None

    def has(self, var: str) -> bool:
        """The variable is set (its value may be unknown statically)."""
        return var in self.env

    def span(self, var: str) -> Span:
        return self.env[var].span

    def parsed(self, var: str) -> ParsedConf | None:
        v = self.value(var)
        return parse_conf(v) if v is not None else None

    def v(self, key: str) -> Version | None:
        ver = self.versions.get(key)
        return norm(ver) if ver is not None and key in ("torch", "torch_npu") else ver


def _found(code: str, message: str, key: str, help: str, span: Span) -> Diagnostic:
    """A finding of rule `code` about the variable `key`, at `span`."""
    return REGISTRY.get(code).finding(message, span, help, key)


# ------------------------------------------------------------- checks ----


def _allocator_of(var: str, inp: AllocInput) -> str:
    """ "cuda", "npu" or "either" (PYTORCH_ALLOC_CONF on an unknown accelerator)."""
    if var == NPU_VAR:
        return "npu"
    if var == "PYTORCH_ALLOC_CONF":
        return {"npu": "npu", "cuda": "cuda"}.get(inp.device, "either")
    return "cuda"


def _pkg(alloc: str) -> tuple[str, str]:
    return ("torch_npu", "torch-npu") if alloc == "npu" else ("torch", "torch")


def check_conf(inp: AllocInput) -> Iterator[Diagnostic]:
    """VL601 unknown option, VL602 bad value/format, VL603 malformed string."""
    for var in ALLOC_VARS:
        parsed = inp.parsed(var)
        if parsed is None:
            continue
        span = inp.span(var)
        for p in parsed.problems:
            yield _found("VL603" if p.kind == "malformed" else "VL602", f"{var}: {p.message}", var, p.help, span)
        alloc = _allocator_of(var, inp)
        allocs = ("cuda", "npu") if alloc == "either" else (alloc,)
        for e in parsed.entries:
            known = [a for a in allocs if e.key in options(a)]
            if not known:
                union = sorted(set().union(*(options(a) for a in allocs)))
                close = closest(e.key, union, 0.6)
                other = "npu" if allocs == ("cuda",) else "cuda" if allocs == ("npu",) else None
                where = " or ".join({"cuda": "CUDA", "npu": "NPU"}[a] for a in allocs)
                hint = f"did you mean `{close}`?" if close else f"remove `{e.key}`"
                if other and e.key in options(other):
                    hint = (
                        f"`{e.key}` is a {'CUDA' if other == 'cuda' else 'torch-npu'} option, not one of this "
                        "allocator's; remove it"
                    )
                yield _found(
                    "VL601",
                    f"{var}: `{e.key}` is not a {where} caching-allocator option; the allocator rejects the whole "
                    "string "
                    f"(`Unrecognized key '{e.key}'` / `Unrecognized CachingAllocator option: {e.key}`) when the "
                    "worker first uses the device",
                    var,
                    hint,
                    span,
                )
                continue
            a = known[0]
            opt = options(a)[e.key]
            pkg, dist = _pkg(a)
            ver = inp.v(pkg)
            if ver is not None and len(known) == 1 and not opt.accepted_by(ver):
                yield _found(
                    "VL601",
                    f"{var}: {dist} {ver} does not know `{e.key}` (first accepted by {dist} {opt.first}); its "
                    "allocator rejects the string",
                    var,
                    f"upgrade {dist}, or remove `{e.key}`",
                    span,
                )
                continue
            strict = ver is not None and (norm(ver) < TORCH_ALLOC_CONF if a == "cuda" else norm(ver) < NPU_ALLOC_CONF)
            bad = value_problem(opt, e, strict)
            if bad is not None:
                yield _found("VL602", f"{var}: {bad[0]}", var, bad[1], span)


def _is_rocm(v: Version | None) -> bool | None:
    if v is None:
        return None
    return "rocm" in (v.local or "")


def check_ignored(inp: AllocInput) -> Iterator[Diagnostic]:
    """VL604: an allocator env var that the allocator in use does not read."""
    alloc_conf = inp.value("PYTORCH_ALLOC_CONF")
    torch_v, npu_v = inp.v("torch"), inp.v("torch_npu")
    if alloc_conf is not None and inp.device != "npu" and not inp.has(NPU_VAR):
        cuda = inp.value("PYTORCH_CUDA_ALLOC_CONF")
        if inp.has("PYTORCH_CUDA_ALLOC_CONF") and (
            cuda is None or cuda.replace(" ", "") != alloc_conf.replace(" ", "")
        ):
            yield _found(
                "VL604",
                "PYTORCH_ALLOC_CONF is ignored on CUDA because PYTORCH_CUDA_ALLOC_CONF is also set: torch <= 2.9 "
                "reads only "
                "PYTORCH_CUDA_ALLOC_CONF, and torch >= 2.10 reads PYTORCH_CUDA_ALLOC_CONF first and "
                "PYTORCH_ALLOC_CONF only when it is unset",
                "PYTORCH_ALLOC_CONF",
                "put every option in one variable (PYTORCH_CUDA_ALLOC_CONF works on every torch release)",
                inp.span("PYTORCH_ALLOC_CONF"),
            )
        elif not inp.has("PYTORCH_CUDA_ALLOC_CONF") and (torch_v is None or torch_v < TORCH_ALLOC_CONF):
            which = f"torch {torch_v}" if torch_v is not None else "torch <= 2.9 (vLLM 0.11.1-0.16 pin torch 2.9.x)"
            yield _found(
                "VL604",
                f"PYTORCH_ALLOC_CONF is silently ignored by the CUDA allocator of {which}: only "
                "PYTORCH_CUDA_ALLOC_CONF is read before torch 2.10",
                "PYTORCH_ALLOC_CONF",
                "rename it to PYTORCH_CUDA_ALLOC_CONF (read by every torch release)",
                inp.span("PYTORCH_ALLOC_CONF"),
            )
    if (
        alloc_conf is not None
        and inp.device == "npu"
        and not inp.has(NPU_VAR)
        and (npu_v is None or npu_v < NPU_ALLOC_CONF)
    ):
        which = f"torch-npu {npu_v}" if npu_v is not None else "torch-npu < 2.13"
        yield _found(
            "VL604",
            f"PYTORCH_ALLOC_CONF is ignored by the NPU allocator of {which}: it reads PYTORCH_NPU_ALLOC_CONF "
            "(PYTORCH_ALLOC_CONF only from torch-npu 2.13)",
            "PYTORCH_ALLOC_CONF",
            "rename it to PYTORCH_NPU_ALLOC_CONF",
            inp.span("PYTORCH_ALLOC_CONF"),
        )
    if inp.device == "npu" and inp.has("PYTORCH_CUDA_ALLOC_CONF") and not inp.has(NPU_VAR):
        yield _found(
            "VL604",
            "PYTORCH_CUDA_ALLOC_CONF has no effect on the Ascend NPU allocator (trainer.device=npu): torch-npu reads "
            "PYTORCH_NPU_ALLOC_CONF",
            "PYTORCH_CUDA_ALLOC_CONF",
            "set the options in PYTORCH_NPU_ALLOC_CONF",
            inp.span("PYTORCH_CUDA_ALLOC_CONF"),
        )
    if inp.value("PYTORCH_HIP_ALLOC_CONF") is not None and _is_rocm(torch_v) is False and inp.device != "npu":
        yield _found(
            "VL604",
            f"PYTORCH_HIP_ALLOC_CONF is read only by ROCm builds of torch; the installed torch {torch_v} is not one",
            "PYTORCH_HIP_ALLOC_CONF",
            "use PYTORCH_CUDA_ALLOC_CONF",
            inp.span("PYTORCH_HIP_ALLOC_CONF"),
        )


def check_npu_both(inp: AllocInput) -> Iterator[Diagnostic]:
    """VL605: PYTORCH_NPU_ALLOC_CONF and PYTORCH_ALLOC_CONF both set."""
    if not inp.has(NPU_VAR) or not inp.has("PYTORCH_ALLOC_CONF") or inp.device == "cuda":
        return
    npu_v = inp.v("torch_npu")
    if npu_v is not None and npu_v < NPU_ALLOC_CONF:
        return
    which = f"torch-npu {npu_v}" if npu_v is not None else "torch-npu >= 2.13"
    yield _found(
        "VL605",
        f"PYTORCH_NPU_ALLOC_CONF and PYTORCH_ALLOC_CONF are both set: on {which} the NPU allocator refuses to start "
        "(`Both PYTORCH_NPU_ALLOC_CONF and PYTORCH_ALLOC_CONF have been set, please set only one of them.`)",
        "PYTORCH_ALLOC_CONF",
        "keep only PYTORCH_NPU_ALLOC_CONF on Ascend",
        inp.span("PYTORCH_ALLOC_CONF"),
    )


def check_npu_expandable_conflict(inp: AllocInput) -> Iterator[Diagnostic]:
    """VL606: NPU expandable_segments:True with max_split_size_mb / garbage_collection_threshold."""
    parsed = inp.parsed(NPU_VAR)
    if parsed is None or not parsed.expandable:
        return
    clash = [k for k in ("max_split_size_mb", "garbage_collection_threshold") if parsed.get(k) is not None]
    if clash:
        yield _found(
            "VL606",
            f"PYTORCH_NPU_ALLOC_CONF sets expandable_segments:True together with {' and '.join(clash)}: torch-npu "
            "refuses this "
            "(`max_split_size_mb` or `garbage_collection_threshold`, cannot be enabled with `expandable_segments`)",
            NPU_VAR,
            f"drop {' and '.join(clash)} (they do not act on expandable segments), or set expandable_segments:False",
            inp.span(NPU_VAR),
        )


def _in(v: Version, lo_hi: tuple[Version, Version]) -> bool:
    return lo_hi[0] <= v < lo_hi[1]


def check_memory_pool(inp: AllocInput) -> Iterator[Diagnostic]:
    """VL607 (assert/raise at engine start), VL608 (SGLang), VL609 (silently frees nothing)."""
    cuda = inp.value("PYTORCH_CUDA_ALLOC_CONF")
    alloc = inp.value("PYTORCH_ALLOC_CONF")
    npu = inp.value(NPU_VAR)
    vllm_v, vasc_v, tms_v, sgl_v, torch_v = (
        inp.v(k) for k in ("vllm", "vllm_ascend", "torch_memory_saver", "sglang", "torch")
    )
    exact = cuda is not None and EXPANDABLE_ON in cuda
    cuda_p = parse_conf(cuda) if cuda is not None else None
    spaced = cuda_p is not None and cuda_p.expandable and not exact
    via_alloc = (
        not inp.has("PYTORCH_CUDA_ALLOC_CONF")
        and alloc is not None
        and parse_conf(alloc).expandable
        and (torch_v is None or torch_v >= TORCH_ALLOC_CONF)
        and inp.device != "npu"
    )
    if inp.rollout == "vllm" and inp.vllm_sleep:
        # CUDA: vLLM's CuMemAllocator.
        if exact and inp.device != "npu":
            if vllm_v is None or _in(vllm_v, VLLM_ASSERT):
                which = f"vLLM {vllm_v}" if vllm_v is not None else "vLLM 0.8.0-0.20.0"
                yield _found(
                    "VL607",
                    "PYTORCH_CUDA_ALLOC_CONF has expandable_segments:True while vLLM sleep mode is on (verl's "
                    f"default): on {which} "
                    "this crashes at engine start (CuMemAllocator asserts `Expandable segments are not compatible "
                    "with memory pool`)",
                    "PYTORCH_CUDA_ALLOC_CONF",
                    "remove expandable_segments:True: verl enables expandable segments itself for training and "
                    "disables them around the rollout",
                    inp.span("PYTORCH_CUDA_ALLOC_CONF"),
                )
            elif vllm_v < VLLM_ASSERT[0]:
                yield _found(
                    "VL609",
                    f"PYTORCH_CUDA_ALLOC_CONF has expandable_segments:True while vLLM sleep mode is on: vLLM {vllm_v} "
                    "does not check, and "
                    "sleep frees nothing (`Sleep mode freed 0.00 GiB memory`), so training runs next to a resident KV "
                    "cache",
                    "PYTORCH_CUDA_ALLOC_CONF",
                    "remove expandable_segments:True",
                    inp.span("PYTORCH_CUDA_ALLOC_CONF"),
                )
        if (spaced or via_alloc) and inp.device != "npu" and (vllm_v is None or vllm_v < VLLM_LIVE_CONF):
            var = "PYTORCH_CUDA_ALLOC_CONF" if spaced else "PYTORCH_ALLOC_CONF"
            how = "is written with a space" if spaced else "comes from PYTORCH_ALLOC_CONF"
            which = f"vLLM {vllm_v}" if vllm_v is not None else "vLLM < 0.31"
            yield _found(
                "VL609",
                f"{var} turns expandable segments on, but it {how}: {which} only looks for the exact text "
                "`expandable_segments:True` in PYTORCH_CUDA_ALLOC_CONF, so its memory pool is not protected and sleep "
                "mode silently frees "
                "nothing (the trainer then OOMs next to the resident rollout)",
                var,
                "remove expandable_segments:True (verl toggles expandable segments itself)",
                inp.span(var),
            )
        # NPU: vllm-ascend's CaMemAllocator.
        if (
            npu is not None
            and EXPANDABLE_ON in npu
            and inp.device != "cuda"
            and (vasc_v is None or vasc_v >= VLLM_ASCEND_NPU_VAR)
        ):
            which = f"vllm-ascend {vasc_v}" if vasc_v is not None else "vllm-ascend >= 0.10.0rc1"
            yield _found(
                "VL607",
                "PYTORCH_NPU_ALLOC_CONF has expandable_segments:True while vLLM sleep mode is on (verl's default): "
                f"on {which} "
                "this crashes at engine start (CaMemAllocator asserts `Expandable segments are not compatible with "
                "memory pool`)",
                NPU_VAR,
                "remove expandable_segments:True, or turn sleep mode off for a standalone rollout",
                inp.span(NPU_VAR),
            )
        if exact and inp.device == "npu" and vasc_v is not None and vasc_v < VLLM_ASCEND_NPU_VAR:
            yield _found(
                "VL607",
                "PYTORCH_CUDA_ALLOC_CONF has expandable_segments:True while vLLM sleep mode is on: vllm-ascend "
                f"{vasc_v} checks that "
                "variable and its CaMemAllocator asserts at engine start",
                "PYTORCH_CUDA_ALLOC_CONF",
                "remove PYTORCH_CUDA_ALLOC_CONF on Ascend",
                inp.span("PYTORCH_CUDA_ALLOC_CONF"),
            )
    if inp.rollout == "sglang" and inp.device != "npu":
        # verl always starts SGLang with enable_memory_saver=True.
        if tms_v is not None:
            raises = tms_v >= TMS_CHECK
        elif sgl_v is not None:
            raises = True if sgl_v >= SGLANG_TMS_009 else None
        else:
            raises = True
        if exact and raises:
            which = (
                f"torch_memory_saver {tms_v}"
                if tms_v is not None
                else f"SGLang {sgl_v} (torch_memory_saver >= 0.0.9)"
                if sgl_v is not None
                else "torch_memory_saver >= 0.0.9 (SGLang >= 0.5.4)"
            )
            yield _found(
                "VL608",
                "PYTORCH_CUDA_ALLOC_CONF has expandable_segments:True and verl starts SGLang with its memory saver: "
                f"with {which} "
                "the rollout fails at startup (`TorchMemorySaver is disabled for the current process because "
                "expandable_segments is not supported yet`)",
                "PYTORCH_CUDA_ALLOC_CONF",
                "remove expandable_segments:True: verl enables expandable segments itself for training",
                inp.span("PYTORCH_CUDA_ALLOC_CONF"),
            )
        elif (exact and raises is False) or spaced or via_alloc:
            var = "PYTORCH_ALLOC_CONF" if via_alloc else "PYTORCH_CUDA_ALLOC_CONF"
            why = (
                f"torch_memory_saver {tms_v} does not check it"
                if exact
                else "torch_memory_saver (<= 0.0.10) only looks for the exact text `expandable_segments:True` in "
                "PYTORCH_CUDA_ALLOC_CONF"
            )
            yield _found(
                "VL609",
                f"{var} turns expandable segments on while verl runs SGLang with its memory saver: {why}, so pause() "
                "silently frees "
                "nothing and the trainer OOMs next to the resident rollout",
                var,
                "remove expandable_segments:True",
                inp.span(var),
            )


def check_reset(inp: AllocInput) -> Iterator[Diagnostic]:
    """VL610: options that verl's set_expandable_segments() resets at every train/rollout switch."""
    v = inp.verl
    if v is None:
        return
    broken = {f.key for chk in (check_conf, check_npu_expandable_conflict) for f in chk(inp)}
    for var in ALLOC_VARS:
        parsed = inp.parsed(var)
        if parsed is None or var in broken:
            continue  # the allocator rejects the string: that finding comes first
        platform = "npu" if var == NPU_VAR or (var == "PYTORCH_ALLOC_CONF" and inp.device == "npu") else "cuda"
        if platform == "cuda" and inp.device == "npu":
            continue
        if platform == "npu" and npu_has_setter_by_version(inp.v("torch_npu")) is False:
            continue  # verl's NPU toggle is a no-op there: nothing gets reset
        sp = v.setter_for(platform)
        if sp is None or not v.toggles_allocator_on(platform):
            continue
        lost = [k for k in reset_keys() if parsed.get(k) is not None]
        if not lost:
            continue
        calls = [c for c in v.calls if c.enable is not None]
        first = calls[0].where if calls else v.helper
        yield _found(
            "VL610",
            f"{var} sets {', '.join(lost)}, but verl re-applies the allocator settings with only "
            "`expandable_segments:<bool>` at every "
            f"rollout/train switch ({v.helper} -> {sp.api}, called e.g. at {first}); each re-parse resets "
            f"{', '.join(lost)} to the default, "
            "so the value holds only until the first weight sync",
            var,
            "drop the option, or re-apply it after verl's toggles (it cannot be kept through set_expandable_segments)",
            inp.span(var),
        )


CHECKS = (check_conf, check_ignored, check_npu_both, check_npu_expandable_conflict, check_memory_pool, check_reset)


def all_findings(inp: AllocInput) -> list[Diagnostic]:
    """Every check's findings, in the order of CHECKS."""
    return [f for chk in CHECKS for f in chk(inp)]
