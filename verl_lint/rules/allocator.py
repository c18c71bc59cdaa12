"""6xx: caching-allocator configuration (CUDA and Ascend NPU) and its clash with the rollout
engine's memory pool (vLLM sleep mode, SGLang's torch_memory_saver).

Logic as code over knowledge as data: which options each torch / torch-npu release accepts and
their value formats are in `rules/allocator_options.yaml`; what verl does with the allocator is
read from the verl tree's source (`runtime.analyze_verl`). The same checks run on a script's
env (exports, command prefixes, `ray_kwargs.ray_init.runtime_env.env_vars.*`) and, through
`runtime_env_findings`, on the live process env.

A version-dependent check with an unknown version never claims an installed version: it names
the version range where the combination fails.
"""

# Real (not postponed) annotations: NamedTuple classes define faster, at every Hydra job start.

import re
from collections.abc import Iterable, Iterator
from functools import lru_cache
from typing import NamedTuple

from packaging.version import Version

from ..knowledge import load_table
from ..config.context import MISSING
from ..registry import REGISTRY, main_ppo, parse_version, rule
from ..config.source import Evidence
from ..model import Diagnostic, EnvVar, Span
from ..allocator.runtime import RUNTIME_SPAN, VerlAllocatorCode, analyze_verl, rollout_config_default

CUDA_VARS = ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF", "PYTORCH_HIP_ALLOC_CONF")
NPU_VAR = "PYTORCH_NPU_ALLOC_CONF"
ALL_VARS = ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF", "PYTORCH_HIP_ALLOC_CONF", NPU_VAR)
EXPANDABLE_ON = "expandable_segments:True"  # the exact substring vLLM / vllm-ascend / torch_memory_saver look for

V = Version
VLLM_ASSERT = (V("0.8.0"), V("0.20.1"))  # CuMemAllocator.__init__ asserts in [0.8.0, 0.20.1)
VLLM_LIVE_CONF = V("0.31.0")  # vLLM reads the live allocator config from here on
VLLM_ASCEND_NPU_VAR = V("0.10.0rc1")  # CaMemAllocator checks PYTORCH_NPU_ALLOC_CONF from here on
TMS_CHECK = V("0.0.9")  # torch_memory_saver raises from here on
SGLANG_TMS_009 = V("0.5.4")  # SGLang pins torch_memory_saver >= 0.0.9 from here on
TORCH_ALLOC_CONF = V("2.10")  # the CUDA allocator reads PYTORCH_ALLOC_CONF from here on
NPU_ALLOC_CONF = V("2.13.0")  # torch-npu reads PYTORCH_ALLOC_CONF (and refuses both) from here on


# ------------------------------------------------------------ the table ----


def norm(v: Version) -> Version:
    """The release and post number only: `2.6.0a0+ecf3bae` (NGC builds) counts as 2.6.0, `+cpu` is dropped."""
    return Version(".".join(map(str, v.release)) + (f".post{v.post}" if v.post is not None else ""))


class Option(NamedTuple):
    """One allocator option of allocator_options.yaml."""

    key: str
    since: tuple[Version, ...]  # cuda: one version; npu: the first version on each release line
    type: str
    params: dict  # the record's other fields (range, choices, ...)

    def accepted_by(self, v: Version) -> bool:
        v = norm(v)
        if len(self.since) == 1:
            return v >= self.since[0]
        for s in self.since:
            if v.release[:3] == s.release[:3]:
                return v >= s
        return v >= max(self.since)

    @property
    def first(self) -> str:
        return " / ".join(str(s) for s in self.since)


@lru_cache(maxsize=1)
def _table() -> dict:
    t = load_table("allocator_options.yaml")
    if not isinstance(t, dict):
        raise RuntimeError("rules/allocator_options.yaml is missing")
    return t


@lru_cache(maxsize=2)
def options(allocator: str) -> dict[str, Option]:
    out = {}
    for rec in _table()[allocator]:
        since = rec["since"] if isinstance(rec["since"], list) else [rec["since"]]
        params = {k: v for k, v in rec.items() if k not in ("key", "since", "type", "verified")}
        out[rec["key"]] = Option(rec["key"], tuple(V(str(s)) for s in since), rec["type"], params)
    return out


def reset_keys() -> tuple[str, ...]:
    return tuple(_table()["reset_on_parse"])


def npu_has_setter_by_version(v: Version | None) -> bool | None:
    if v is None:
        return None
    since = tuple(V(s) for s in _table()["npu_set_allocator_settings_since"])
    return Option("_", since, "any", {}).accepted_by(v)


# ---------------------------------------------------------- the parser ----


def tokenize(text: str) -> list[str]:
    """c10's ConfigTokenizer: `, : [ ]` are tokens, whitespace is dropped, the rest are words."""
    out, buf = [], ""
    for ch in text:
        if ch in ",:[]":
            if buf:
                out.append(buf)
                buf = ""
            out.append(ch)
        elif not ch.isspace():
            buf += ch
    if buf:
        out.append(buf)
    return out


class Entry(NamedTuple):
    key: str
    value: str | None  # a single value, or the list text "[...]"
    items: list[str] | None = None  # list values, as written (`256:1`, `>:8`)


class Problem(NamedTuple):
    kind: str  # "malformed" (VL603) | "format" (VL602)
    key: str
    message: str
    help: str


class ParsedConf(NamedTuple):
    text: str
    entries: list[Entry]
    problems: list[Problem]

    def get(self, key: str) -> str | None:
        found = [e.value for e in self.entries if e.key == key]
        return found[-1] if found else None

    @property
    def expandable(self) -> bool:
        return self.get("expandable_segments") == "True"


def parse_conf(text: str) -> ParsedConf:
    """Parse an allocator config string the way c10's parsers walk it (key, `:`, value or `[...]`, `,`)."""
    toks = tokenize(text)
    entries: list[Entry] = []
    problems: list[Problem] = []
    i, n = 0, len(toks)
    while i < n:
        key = toks[i]
        if key in (",", "]"):  # an empty segment: accepted by the parser (checked with torch 2.13)
            i += 1
            continue
        if key in (":", "["):
            problems.append(Problem("malformed", key, f"`{key}` where an option name is expected", "write `key:value` pairs separated by `,`"))
            break
        if "=" in key:
            name, _, val = key.partition("=")
            problems.append(
                Problem(
                    "format",
                    name,
                    f"`{key}` uses `=`: the allocator separates an option and its value with `:`, so this is one unknown option",
                    f"write `{name}:{val}`",
                )
            )
            i += 1
            if i < n and toks[i] == ":":  # `a=b:c` - skip the rest of this segment
                while i < n and toks[i] != ",":
                    i += 1
            continue
        if i + 1 >= n or toks[i + 1] != ":":
            problems.append(
                Problem(
                    "malformed",
                    key,
                    f"`{key}` has no value: the allocator fails with `INTERNAL ASSERT FAILED ... Index out of bounds in ConfigTokenizer`",
                    f"write `{key}:<value>` (e.g. `expandable_segments:True`)",
                )
            )
            i += 1
            continue
        j = i + 2
        if j >= n or toks[j] in (",", ":", "]"):
            problems.append(
                Problem(
                    "malformed",
                    key,
                    f"`{key}:` has an empty value: the allocator fails with `INTERNAL ASSERT FAILED ... Index out of bounds in ConfigTokenizer`"
                    if j >= n
                    else f"`{key}:` has an empty value",
                    f"write `{key}:<value>`",
                )
            )
            i = j  # resume at the separator (or the end)
            continue
        if toks[j] == "[":
            k = j + 1
            while k < n and toks[k] != "]":
                k += 1
            if k >= n:
                problems.append(Problem("malformed", key, f"the list value of `{key}` has no closing `]`", f"close the list: `{key}:[...]`"))
                break
            inner = "".join(toks[j + 1 : k])
            entries.append(Entry(key, "[" + inner + "]", [x for x in inner.split(",") if x]))
            j = k
        else:
            entries.append(Entry(key, toks[j]))
        if j + 1 < n and toks[j + 1] == ":":
            problems.append(
                Problem(
                    "malformed",
                    key,
                    f"`{key}` has more than one `:`-separated value: the allocator fails with `INTERNAL ASSERT FAILED ... Index out of bounds in ConfigTokenizer`",
                    "one `key:value` per `,`-separated segment",
                )
            )
            while j < n and toks[j] != ",":
                j += 1
        i = j + 1
    return ParsedConf(text, entries, problems)


# ----------------------------------------------------- value validation ----


def _int(s: str) -> int | None:
    return int(s) if re.fullmatch(r"\d+", s) else None


def _float(s: str) -> float | None:
    try:
        return float(s)
    except ValueError:
        return None


def _pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def value_problem(opt: Option, e: Entry, strict_min: bool) -> tuple[str, str] | None:
    """(message, help) when `e`'s value is not what the allocator accepts for `opt`, else None."""
    v, k, t = e.value or "", e.key, opt.type
    if e.items is not None and t not in ("roundup", "any"):
        return f"`{k}` takes a single value, not a list", f"write `{k}:<value>`"
    if t == "bool":
        if v not in ("True", "False"):
            fix = "True" if v.lower() in ("true", "1", "yes", "on") else "False" if v.lower() in ("false", "0", "no", "off") else "True|False"
            return (
                f"`{k}:{v}`: booleans are exactly `True` or `False` (case-sensitive); the allocator raises `Expected 'True' or 'False' ... but got '{v}'`",
                f"write `{k}:{fix}`",
            )
    elif t == "mb":
        n = _int(v)
        if n is None:
            return f"`{k}:{v}` is not an integer number of MB (the allocator's `stoull` raises)", f"write `{k}:<MB>`, e.g. `{k}:512`"
        if n < 20 or (n == 20 and strict_min):
            need = "> 20" if strict_min else ">= 20"
            return f"`{k}:{v}` is too small: the allocator requires {need} MB (`CachingAllocator option {k} too small`)", f"use at least {21 if strict_min else 20}, or drop the option"
    elif t == "fraction":
        x = _float(v)
        if x is None or not 0.0 < x < 1.0:
            return f"`{k}:{v}` must be a number strictly between 0 and 1 (`garbage_collect_threshold is invalid, set it in (0.0, 1.0)`)", f"e.g. `{k}:0.6`"
    elif t in ("int", "float"):
        x = _int(v) if t == "int" else _float(v)
        if x is None:
            return f"`{k}:{v}` is not a{'n integer' if t == 'int' else ' number'}", f"write `{k}:<number>`"
        lo = opt.params.get("min")
        if lo is not None and x < lo:
            return f"`{k}:{v}` is too small (minimum {lo})", f"use at least {lo}"
    elif t == "range":
        x = _int(v)
        lo, hi = opt.params["min"], opt.params["max"]
        if x is None or not lo <= x <= hi:
            return f"`{k}:{v}` must be an integer in [{lo}, {hi}]", f"use a value in [{lo}, {hi}]"
    elif t == "backend":
        choices = opt.params["choices"]
        if v not in choices:
            import difflib  # only for a suggestion: not loaded at start-up
            close = difflib.get_close_matches(v, choices, n=1, cutoff=0.5)
            return f"`{k}:{v}` is not an allocator backend ({', '.join(choices)})", f"write `{k}:{close[0] if close else choices[0]}`"
    elif t == "pow2_le_128":
        x = _int(v)
        if x is None or not _pow2(x) or x > 128:
            return f"`{k}:{v}` must be a power of 2 no larger than 128", f"e.g. `{k}:8`"
    elif t == "page_size":
        if v != "1g":
            return f"`{k}:{v}`: torch-npu accepts only `page_size:1g` (`page_size requires format 'page_size:1g'`)", "write `page_size:1g` or drop it"
    elif t == "roundup":
        if e.items is None:
            x = _int(v)
            if x is None or not _pow2(x):
                return f"`{k}:{v}`: the divisions must be a power of 2 (`For roundups, the divisions has to be power of 2`)", f"e.g. `{k}:4` or `{k}:[256:1,512:2,>:4]`"
        else:
            for item in e.items:
                if ":" not in item:
                    continue
                iv, _, dv = item.partition(":")
                ni, nd = _int(iv), _int(dv)
                if iv != ">" and (ni is None or not _pow2(ni)):
                    return f"`{k}` interval `{iv}` must be a power of 2 (MB) or `>`", f"e.g. `{k}:[256:1,512:2,>:4]`"
                if nd is None or not (nd == 0 or _pow2(nd)):
                    return f"`{k}` divisions `{dv}` must be a power of 2 or 0", f"e.g. `{k}:[256:1,512:2,>:4]`"
    return None


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


class Finding(NamedTuple):
    code: str
    message: str
    key: str
    help: str
    span: Span


def _sleep_mode(ctx) -> bool | None:
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
    cached = getattr(ctx, "_alloc_input", None)
    if cached is not None:
        return cached
    env = {k: ctx.env[k] for k in ALL_VARS if k in ctx.env}
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


def _emit(ctx, findings: Iterable[Finding], code: str) -> Iterator[Diagnostic]:
    for f in findings:
        if f.code == code:
            yield ctx.diag(code, f.message, key=f.key, help=f.help, span=f.span)


# ------------------------------------------------------------- checks ----


def _allocator_of(var: str, inp: AllocInput) -> str:
    """"cuda", "npu" or "either" (PYTORCH_ALLOC_CONF on an unknown accelerator)."""
    if var == NPU_VAR:
        return "npu"
    if var == "PYTORCH_ALLOC_CONF":
        return {"npu": "npu", "cuda": "cuda"}.get(inp.device, "either")
    return "cuda"


def _pkg(alloc: str) -> tuple[str, str]:
    return ("torch_npu", "torch-npu") if alloc == "npu" else ("torch", "torch")


def check_conf(inp: AllocInput) -> Iterator[Finding]:
    """VL601 unknown option, VL602 bad value/format, VL603 malformed string."""
    for var in ALL_VARS:
        parsed = inp.parsed(var)
        if parsed is None:
            continue
        span = inp.span(var)
        for p in parsed.problems:
            yield Finding("VL603" if p.kind == "malformed" else "VL602", f"{var}: {p.message}", var, p.help, span)
        alloc = _allocator_of(var, inp)
        allocs = ("cuda", "npu") if alloc == "either" else (alloc,)
        for e in parsed.entries:
            known = [a for a in allocs if e.key in options(a)]
            if not known:
                union = sorted(set().union(*(options(a) for a in allocs)))
                import difflib
                close = difflib.get_close_matches(e.key, union, n=1, cutoff=0.6)
                other = "npu" if allocs == ("cuda",) else "cuda" if allocs == ("npu",) else None
                where = " or ".join({"cuda": "CUDA", "npu": "NPU"}[a] for a in allocs)
                hint = f"did you mean `{close[0]}`?" if close else f"remove `{e.key}`"
                if other and e.key in options(other):
                    hint = f"`{e.key}` is a {'CUDA' if other == 'cuda' else 'torch-npu'} option, not one of this allocator's; remove it"
                yield Finding(
                    "VL601",
                    f"{var}: `{e.key}` is not a {where} caching-allocator option; the allocator rejects the whole string "
                    f"(`Unrecognized key '{e.key}'` / `Unrecognized CachingAllocator option: {e.key}`) when the worker first uses the device",
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
                yield Finding(
                    "VL601",
                    f"{var}: {dist} {ver} does not know `{e.key}` (first accepted by {dist} {opt.first}); its allocator rejects the string",
                    var,
                    f"upgrade {dist}, or remove `{e.key}`",
                    span,
                )
                continue
            strict = ver is not None and (norm(ver) < TORCH_ALLOC_CONF if a == "cuda" else norm(ver) < NPU_ALLOC_CONF)
            bad = value_problem(opt, e, strict)
            if bad is not None:
                yield Finding("VL602", f"{var}: {bad[0]}", var, bad[1], span)


def _is_rocm(v: Version | None) -> bool | None:
    if v is None:
        return None
    return "rocm" in (v.local or "")


def check_ignored(inp: AllocInput) -> Iterator[Finding]:
    """VL604: an allocator env var that the allocator in use does not read."""
    alloc_conf = inp.value("PYTORCH_ALLOC_CONF")
    torch_v, npu_v = inp.v("torch"), inp.v("torch_npu")
    if alloc_conf is not None and inp.device != "npu" and not inp.has(NPU_VAR):
        cuda = inp.value("PYTORCH_CUDA_ALLOC_CONF")
        if inp.has("PYTORCH_CUDA_ALLOC_CONF") and (cuda is None or cuda.replace(" ", "") != alloc_conf.replace(" ", "")):
            yield Finding(
                "VL604",
                "PYTORCH_ALLOC_CONF is ignored on CUDA because PYTORCH_CUDA_ALLOC_CONF is also set: torch <= 2.9 reads only "
                "PYTORCH_CUDA_ALLOC_CONF, and torch >= 2.10 reads PYTORCH_CUDA_ALLOC_CONF first and PYTORCH_ALLOC_CONF only when it is unset",
                "PYTORCH_ALLOC_CONF",
                "put every option in one variable (PYTORCH_CUDA_ALLOC_CONF works on every torch release)",
                inp.span("PYTORCH_ALLOC_CONF"),
            )
        elif not inp.has("PYTORCH_CUDA_ALLOC_CONF") and (torch_v is None or torch_v < TORCH_ALLOC_CONF):
            which = f"torch {torch_v}" if torch_v is not None else "torch <= 2.9 (vLLM 0.11.1-0.16 pin torch 2.9.x)"
            yield Finding(
                "VL604",
                f"PYTORCH_ALLOC_CONF is silently ignored by the CUDA allocator of {which}: only PYTORCH_CUDA_ALLOC_CONF is read before torch 2.10",
                "PYTORCH_ALLOC_CONF",
                "rename it to PYTORCH_CUDA_ALLOC_CONF (read by every torch release)",
                inp.span("PYTORCH_ALLOC_CONF"),
            )
    if alloc_conf is not None and inp.device == "npu" and not inp.has(NPU_VAR) and (npu_v is None or npu_v < NPU_ALLOC_CONF):
        which = f"torch-npu {npu_v}" if npu_v is not None else "torch-npu < 2.13"
        yield Finding(
            "VL604",
            f"PYTORCH_ALLOC_CONF is ignored by the NPU allocator of {which}: it reads PYTORCH_NPU_ALLOC_CONF (PYTORCH_ALLOC_CONF only from torch-npu 2.13)",
            "PYTORCH_ALLOC_CONF",
            "rename it to PYTORCH_NPU_ALLOC_CONF",
            inp.span("PYTORCH_ALLOC_CONF"),
        )
    if inp.device == "npu" and inp.has("PYTORCH_CUDA_ALLOC_CONF") and not inp.has(NPU_VAR):
        yield Finding(
            "VL604",
            "PYTORCH_CUDA_ALLOC_CONF has no effect on the Ascend NPU allocator (trainer.device=npu): torch-npu reads PYTORCH_NPU_ALLOC_CONF",
            "PYTORCH_CUDA_ALLOC_CONF",
            "set the options in PYTORCH_NPU_ALLOC_CONF",
            inp.span("PYTORCH_CUDA_ALLOC_CONF"),
        )
    if inp.value("PYTORCH_HIP_ALLOC_CONF") is not None and _is_rocm(torch_v) is False and inp.device != "npu":
        yield Finding(
            "VL604",
            f"PYTORCH_HIP_ALLOC_CONF is read only by ROCm builds of torch; the installed torch {torch_v} is not one",
            "PYTORCH_HIP_ALLOC_CONF",
            "use PYTORCH_CUDA_ALLOC_CONF",
            inp.span("PYTORCH_HIP_ALLOC_CONF"),
        )


def check_npu_both(inp: AllocInput) -> Iterator[Finding]:
    """VL605: PYTORCH_NPU_ALLOC_CONF and PYTORCH_ALLOC_CONF both set."""
    if not inp.has(NPU_VAR) or not inp.has("PYTORCH_ALLOC_CONF") or inp.device == "cuda":
        return
    npu_v = inp.v("torch_npu")
    if npu_v is not None and npu_v < NPU_ALLOC_CONF:
        return
    which = f"torch-npu {npu_v}" if npu_v is not None else "torch-npu >= 2.13"
    yield Finding(
        "VL605",
        f"PYTORCH_NPU_ALLOC_CONF and PYTORCH_ALLOC_CONF are both set: on {which} the NPU allocator refuses to start "
        "(`Both PYTORCH_NPU_ALLOC_CONF and PYTORCH_ALLOC_CONF have been set, please set only one of them.`)",
        "PYTORCH_ALLOC_CONF",
        "keep only PYTORCH_NPU_ALLOC_CONF on Ascend",
        inp.span("PYTORCH_ALLOC_CONF"),
    )


def check_npu_expandable_conflict(inp: AllocInput) -> Iterator[Finding]:
    """VL606: NPU expandable_segments:True with max_split_size_mb / garbage_collection_threshold."""
    parsed = inp.parsed(NPU_VAR)
    if parsed is None or not parsed.expandable:
        return
    clash = [k for k in ("max_split_size_mb", "garbage_collection_threshold") if parsed.get(k) is not None]
    if clash:
        yield Finding(
            "VL606",
            f"PYTORCH_NPU_ALLOC_CONF sets expandable_segments:True together with {' and '.join(clash)}: torch-npu refuses this "
            "(`max_split_size_mb` or `garbage_collection_threshold`, cannot be enabled with `expandable_segments`)",
            NPU_VAR,
            f"drop {' and '.join(clash)} (they do not act on expandable segments), or set expandable_segments:False",
            inp.span(NPU_VAR),
        )


def _in(v: Version, lo_hi: tuple[Version, Version]) -> bool:
    return lo_hi[0] <= v < lo_hi[1]


def check_memory_pool(inp: AllocInput) -> Iterator[Finding]:
    """VL607 (assert/raise at engine start), VL608 (SGLang), VL609 (silently frees nothing)."""
    cuda = inp.value("PYTORCH_CUDA_ALLOC_CONF")
    alloc = inp.value("PYTORCH_ALLOC_CONF")
    npu = inp.value(NPU_VAR)
    vllm_v, vasc_v, tms_v, sgl_v, torch_v = (inp.v(k) for k in ("vllm", "vllm_ascend", "torch_memory_saver", "sglang", "torch"))
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
                yield Finding(
                    "VL607",
                    f"PYTORCH_CUDA_ALLOC_CONF has expandable_segments:True while vLLM sleep mode is on (verl's default): on {which} "
                    "this crashes at engine start (CuMemAllocator asserts `Expandable segments are not compatible with memory pool`)",
                    "PYTORCH_CUDA_ALLOC_CONF",
                    "remove expandable_segments:True: verl enables expandable segments itself for training and disables them around the rollout",
                    inp.span("PYTORCH_CUDA_ALLOC_CONF"),
                )
            elif vllm_v < VLLM_ASSERT[0]:
                yield Finding(
                    "VL609",
                    f"PYTORCH_CUDA_ALLOC_CONF has expandable_segments:True while vLLM sleep mode is on: vLLM {vllm_v} does not check, and "
                    "sleep frees nothing (`Sleep mode freed 0.00 GiB memory`), so training runs next to a resident KV cache",
                    "PYTORCH_CUDA_ALLOC_CONF",
                    "remove expandable_segments:True",
                    inp.span("PYTORCH_CUDA_ALLOC_CONF"),
                )
        if (spaced or via_alloc) and inp.device != "npu" and (vllm_v is None or vllm_v < VLLM_LIVE_CONF):
            var = "PYTORCH_CUDA_ALLOC_CONF" if spaced else "PYTORCH_ALLOC_CONF"
            how = "is written with a space" if spaced else "comes from PYTORCH_ALLOC_CONF"
            which = f"vLLM {vllm_v}" if vllm_v is not None else "vLLM < 0.31"
            yield Finding(
                "VL609",
                f"{var} turns expandable segments on, but it {how}: {which} only looks for the exact text "
                "`expandable_segments:True` in PYTORCH_CUDA_ALLOC_CONF, so its memory pool is not protected and sleep mode silently frees "
                "nothing (the trainer then OOMs next to the resident rollout)",
                var,
                "remove expandable_segments:True (verl toggles expandable segments itself)",
                inp.span(var),
            )
        # NPU: vllm-ascend's CaMemAllocator.
        if npu is not None and EXPANDABLE_ON in npu and inp.device != "cuda" and (vasc_v is None or vasc_v >= VLLM_ASCEND_NPU_VAR):
            which = f"vllm-ascend {vasc_v}" if vasc_v is not None else "vllm-ascend >= 0.10.0rc1"
            yield Finding(
                "VL607",
                f"PYTORCH_NPU_ALLOC_CONF has expandable_segments:True while vLLM sleep mode is on (verl's default): on {which} "
                "this crashes at engine start (CaMemAllocator asserts `Expandable segments are not compatible with memory pool`)",
                NPU_VAR,
                "remove expandable_segments:True, or turn sleep mode off for a standalone rollout",
                inp.span(NPU_VAR),
            )
        if exact and inp.device == "npu" and vasc_v is not None and vasc_v < VLLM_ASCEND_NPU_VAR:
            yield Finding(
                "VL607",
                f"PYTORCH_CUDA_ALLOC_CONF has expandable_segments:True while vLLM sleep mode is on: vllm-ascend {vasc_v} checks that "
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
                f"torch_memory_saver {tms_v}" if tms_v is not None else f"SGLang {sgl_v} (torch_memory_saver >= 0.0.9)"
                if sgl_v is not None
                else "torch_memory_saver >= 0.0.9 (SGLang >= 0.5.4)"
            )
            yield Finding(
                "VL608",
                f"PYTORCH_CUDA_ALLOC_CONF has expandable_segments:True and verl starts SGLang with its memory saver: with {which} "
                "the rollout fails at startup (`TorchMemorySaver is disabled for the current process because expandable_segments is not supported yet`)",
                "PYTORCH_CUDA_ALLOC_CONF",
                "remove expandable_segments:True: verl enables expandable segments itself for training",
                inp.span("PYTORCH_CUDA_ALLOC_CONF"),
            )
        elif (exact and raises is False) or spaced or via_alloc:
            var = "PYTORCH_ALLOC_CONF" if via_alloc else "PYTORCH_CUDA_ALLOC_CONF"
            why = (
                f"torch_memory_saver {tms_v} does not check it"
                if exact
                else "torch_memory_saver (<= 0.0.10) only looks for the exact text `expandable_segments:True` in PYTORCH_CUDA_ALLOC_CONF"
            )
            yield Finding(
                "VL609",
                f"{var} turns expandable segments on while verl runs SGLang with its memory saver: {why}, so pause() silently frees "
                "nothing and the trainer OOMs next to the resident rollout",
                var,
                "remove expandable_segments:True",
                inp.span(var),
            )


def check_reset(inp: AllocInput) -> Iterator[Finding]:
    """VL610: options that verl's set_expandable_segments() resets at every train/rollout switch."""
    v = inp.verl
    if v is None:
        return
    broken = {f.key for chk in (check_conf, check_npu_expandable_conflict) for f in chk(inp)}
    for var in ALL_VARS:
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
        yield Finding(
            "VL610",
            f"{var} sets {', '.join(lost)}, but verl re-applies the allocator settings with only `expandable_segments:<bool>` at every "
            f"rollout/train switch ({v.helper} -> {sp.api}, called e.g. at {first}); each re-parse resets {', '.join(lost)} to the default, "
            "so the value holds only until the first weight sync",
            var,
            "drop the option, or re-apply it after verl's toggles (it cannot be kept through set_expandable_segments)",
            inp.span(var),
        )


CHECKS = (check_conf, check_ignored, check_npu_both, check_npu_expandable_conflict, check_memory_pool, check_reset)


def all_findings(inp: AllocInput) -> list[Finding]:
    return [f for chk in CHECKS for f in chk(inp)]


def runtime_env_findings(report, rollout: dict) -> list[Diagnostic]:
    """The 6xx checks on the live process env (`runtime.check_allocator`)."""
    env = {k: EnvVar(k, v, RUNTIME_SPAN) for k, v in report.env.items() if v is not None}
    versions = {k: parse_version(v) for k, v in report.versions.items()}
    device = {"npu": "npu", "cuda": "cuda"}.get(report.accelerator.kind, "either")
    name = rollout.get("name")
    sleep = rollout.get("engine_kwargs_sleep", rollout.get("enable_sleep_mode", True)) if name == "vllm" else None
    inp = AllocInput(env, versions, device, name, bool(sleep) if sleep is not None else None, report.verl)
    out = []
    for f in all_findings(inp):
        r = REGISTRY.get(f.code)
        out.append(Diagnostic(f.code, r.name, r.severity, f.message, f.span, f.help, f.key))
    return out


# -------------------------------------------------------------- rules ----

VLLM = "actor_rollout_ref.rollout.name=vllm"
SGLANG = "actor_rollout_ref.rollout.name=sglang"
NPU = "trainer.device=npu"


@rule(
    "VL601",
    "alloc-conf-unknown-option",
    "error",
    bad=[
        main_ppo(env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segment:True"}),
        main_ppo(env={"PYTORCH_NPU_ALLOC_CONF": "backend:cudaMallocAsync"}),
    ],
    good=[
        main_ppo(env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:False,pinned_use_cuda_host_register:True"}),
        main_ppo(env={"PYTORCH_NPU_ALLOC_CONF": "expandable_segments:False,base_addr_aligned_kb:4"}),
    ],
)
def unknown_option(ctx):
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
    yield from _emit(ctx, check_conf(_ctx_input(ctx)), "VL601")


@rule(
    "VL602",
    "alloc-conf-bad-value",
    "error",
    bad=[
        main_ppo(env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:true"}),
        main_ppo(env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments=True"}),
        main_ppo(env={"PYTORCH_CUDA_ALLOC_CONF": "garbage_collection_threshold:1.5"}),
    ],
    good=[main_ppo(env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:False,pinned_num_register_threads:8"})],
)
def bad_value(ctx):
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
    yield from _emit(ctx, check_conf(_ctx_input(ctx)), "VL602")


@rule(
    "VL603",
    "alloc-conf-malformed",
    "error",
    bad=[
        main_ppo(env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments"}),
        main_ppo("actor_rollout_ref.rollout.name=sglang", env={"PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True:False"}),
    ],
    good=[main_ppo(env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments: False,"})],
)
def malformed(ctx):
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
    yield from _emit(ctx, check_conf(_ctx_input(ctx)), "VL603")


@rule(
    "VL604",
    "alloc-conf-var-ignored",
    "warning",
    bad=[
        main_ppo(env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:False", "PYTORCH_ALLOC_CONF": "expandable_segments:True"}),
        main_ppo(NPU, env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}),
    ],
    good=[
        main_ppo(env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:False"}),
        main_ppo(NPU, env={"PYTORCH_NPU_ALLOC_CONF": "expandable_segments:False"}),
    ],
)
def var_ignored(ctx):
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
    yield from _emit(ctx, check_ignored(_ctx_input(ctx)), "VL604")


@rule(
    "VL605",
    "npu-alloc-conf-both-set",
    "error",
    bad=[main_ppo(env={"PYTORCH_NPU_ALLOC_CONF": "expandable_segments:False", "PYTORCH_ALLOC_CONF": "expandable_segments:False"})],
    good=[main_ppo(env={"PYTORCH_NPU_ALLOC_CONF": "expandable_segments:False"})],
)
def npu_both_set(ctx):
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
    yield from _emit(ctx, check_npu_both(_ctx_input(ctx)), "VL605")


@rule(
    "VL606",
    "npu-expandable-segments-with-max-split",
    "error",
    bad=[main_ppo("actor_rollout_ref.rollout.name=sglang", env={"PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True,max_split_size_mb:512"})],
    good=[main_ppo("actor_rollout_ref.rollout.name=sglang", env={"PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True,base_addr_aligned_kb:16"})],
)
def npu_expandable_conflict(ctx):
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
    yield from _emit(ctx, check_npu_expandable_conflict(_ctx_input(ctx)), "VL606")


@rule(
    "VL607",
    "expandable-segments-with-vllm-sleep-mode",
    "error",
    # verl's vLLM>=0.7 rollout passes enable_sleep_mode (0.2 on); the verl 0.1 that TinyZero/Logic-RL vendor does not.
    evidence=[Evidence(("verl/workers/rollout/vllm_rollout/*.py",), r"enable_sleep_mode[\"']?\s*[:=]")],
    bad=[
        main_ppo(VLLM, env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}),
        main_ppo(VLLM, NPU, env={"PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True"}),
    ],
    good=[
        main_ppo(VLLM, env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:False"}),
        main_ppo(VLLM, "+actor_rollout_ref.rollout.enable_sleep_mode=False", env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}),
    ],
    bad_options={"versions": {"vllm": "0.12.0"}},  # verl 0.9.1 pins vllm==0.24.0, which no longer asserts
)
def vllm_sleep_mode(ctx):
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
    yield from _emit(ctx, check_memory_pool(_ctx_input(ctx)), "VL607")


@rule(
    "VL608",
    "expandable-segments-with-sglang-memory-saver",
    "error",
    bad=[main_ppo(SGLANG, env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"})],
    good=[main_ppo(SGLANG, env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:False"})],
)
def sglang_memory_saver(ctx):
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
    yield from _emit(ctx, check_memory_pool(_ctx_input(ctx)), "VL608")


@rule(
    "VL609",
    "expandable-segments-hidden-from-memory-pool",
    "warning",
    bad=[
        main_ppo(VLLM, env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments: True"}),
        main_ppo(SGLANG, env={"PYTORCH_CUDA_ALLOC_CONF": "release_lock_on_cudamalloc:True, expandable_segments: True"}),
    ],
    good=[main_ppo(VLLM, env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments: False"})],
)
def hidden_expandable(ctx):
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
    yield from _emit(ctx, check_memory_pool(_ctx_input(ctx)), "VL609")


@rule(
    "VL610",
    "allocator-options-reset-by-verl",
    "info",
    bad=[main_ppo(env={"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:512"})],
    good=[main_ppo(env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:False,release_lock_on_cudamalloc:True"})],
)
def options_reset(ctx):
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
    yield from _emit(ctx, check_reset(_ctx_input(ctx)), "VL610")
