"""The caching allocator's settings: the env vars, the grammar of their value, the options each
torch / torch-npu release accepts and the format of each option's value.

Pure functions over strings and versions. The options per release are knowledge as data
(`rules/allocator_options.yaml`); the parser walks a settings string the way c10's
`ConfigTokenizer` and parsers do. What a setting means for a verl job is the rules' business
(`rules.allocator_checks`).
"""

# Real (not postponed) annotations: NamedTuple classes define faster, at every Hydra job start.

import re
from functools import lru_cache
from typing import TYPE_CHECKING, NamedTuple

from packaging.version import Version

from ..knowledge import load_table

if TYPE_CHECKING:  # the records load with their table, not at every Hydra job start
    from ..data_tables import AllocatorOption, AllocatorTable

NPU_VAR = "PYTORCH_NPU_ALLOC_CONF"
ALLOC_VARS = ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF", "PYTORCH_HIP_ALLOC_CONF", NPU_VAR)
EXPANDABLE_ON = "expandable_segments:True"  # the exact substring vLLM / vllm-ascend / torch_memory_saver look for


# ------------------------------------------------------------ the table ----


def norm(v: Version) -> Version:
    """The release and post number only: `2.6.0a0+ecf3bae` (NGC builds) counts as 2.6.0, `+cpu` is dropped."""
    return Version(".".join(map(str, v.release)) + (f".post{v.post}" if v.post is not None else ""))


class Option(NamedTuple):
    """One allocator option of allocator_options.yaml."""

    key: str
    since: tuple[Version, ...]  # cuda: one version; npu: the first version on each release line
    type: str
    record: "AllocatorOption | None"  # its record in the table (range, choices, ...)

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


def _table() -> "AllocatorTable":
    return load_table("allocator_options.yaml")


@lru_cache(maxsize=2)
def options(allocator: str) -> dict[str, Option]:
    records = {"cuda": _table().cuda, "npu": _table().npu}[allocator]
    return {r.key: Option(r.key, tuple(Version(s) for s in r.since), r.type, r) for r in records}


def reset_keys() -> tuple[str, ...]:
    """The options every parse of a settings string resets to their default unless it sets them."""
    return _table().reset_on_parse


def npu_has_setter_by_version(v: Version | None) -> bool | None:
    """torch-npu `v` defines `torch.npu.memory._set_allocator_settings` (None: `v` unknown)."""
    if v is None:
        return None
    since = tuple(Version(s) for s in _table().npu_set_allocator_settings_since)
    return Option("_", since, "any", None).accepted_by(v)


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
    kind: str  # "malformed" (the allocator aborts) | "format" (`key=value`: an unknown option)
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
            problems.append(
                Problem(
                    "malformed",
                    key,
                    f"`{key}` where an option name is expected",
                    "write `key:value` pairs separated by `,`",
                )
            )
            break
        if "=" in key:
            name, _, val = key.partition("=")
            problems.append(
                Problem(
                    "format",
                    name,
                    f"`{key}` uses `=`: the allocator separates an option and its value with `:`, so this is one "
                    "unknown option",
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
                    f"`{key}` has no value: the allocator fails with `INTERNAL ASSERT FAILED ... Index out of bounds "
                    "in ConfigTokenizer`",
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
                    f"`{key}:` has an empty value: the allocator fails with `INTERNAL ASSERT FAILED ... Index out of "
                    "bounds in ConfigTokenizer`"
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
                problems.append(
                    Problem(
                        "malformed",
                        key,
                        f"the list value of `{key}` has no closing `]`",
                        f"close the list: `{key}:[...]`",
                    )
                )
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
                    f"`{key}` has more than one `:`-separated value: the allocator fails with `INTERNAL ASSERT FAILED "
                    "... Index out of bounds in ConfigTokenizer`",
                    "one `key:value` per `,`-separated segment",
                )
            )
            while j < n and toks[j] != ",":
                j += 1
        i = j + 1
    return ParsedConf(text, entries, problems)


# ----------------------------------------------------- value validation ----


def closest(word: str, choices, cutoff: float) -> str | None:
    """The choice most like `word` (for a did-you-mean), or None."""
    import difflib  # only for a suggestion: not loaded at start-up

    close = difflib.get_close_matches(word, choices, n=1, cutoff=cutoff)
    return close[0] if close else None


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
            fix = (
                "True"
                if v.lower() in ("true", "1", "yes", "on")
                else "False"
                if v.lower() in ("false", "0", "no", "off")
                else "True|False"
            )
            return (
                f"`{k}:{v}`: booleans are exactly `True` or `False` (case-sensitive); the allocator raises `Expected "
                f"'True' or 'False' ... but got '{v}'`",
                f"write `{k}:{fix}`",
            )
    elif t == "mb":
        n = _int(v)
        if n is None:
            return (
                f"`{k}:{v}` is not an integer number of MB (the allocator's `stoull` raises)",
                f"write `{k}:<MB>`, e.g. `{k}:512`",
            )
        if n < 20 or (n == 20 and strict_min):
            need = "> 20" if strict_min else ">= 20"
            return (
                f"`{k}:{v}` is too small: the allocator requires {need} MB (`CachingAllocator option {k} too small`)",
                f"use at least {21 if strict_min else 20}, or drop the option",
            )
    elif t == "fraction":
        x = _float(v)
        if x is None or not 0.0 < x < 1.0:
            return (
                f"`{k}:{v}` must be a number strictly between 0 and 1 (`garbage_collect_threshold is invalid, set it "
                "in (0.0, 1.0)`)",
                f"e.g. `{k}:0.6`",
            )
    elif t in ("int", "float"):
        x = _int(v) if t == "int" else _float(v)
        if x is None:
            return f"`{k}:{v}` is not a{'n integer' if t == 'int' else ' number'}", f"write `{k}:<number>`"
        lo = opt.record.min
        if lo is not None and x < lo:
            return f"`{k}:{v}` is too small (minimum {lo})", f"use at least {lo}"
    elif t == "range":
        x = _int(v)
        lo, hi = opt.record.min, opt.record.max
        if x is None or not lo <= x <= hi:
            return f"`{k}:{v}` must be an integer in [{lo}, {hi}]", f"use a value in [{lo}, {hi}]"
    elif t == "backend":
        choices = opt.record.choices
        if v not in choices:
            return (
                f"`{k}:{v}` is not an allocator backend ({', '.join(choices)})",
                f"write `{k}:{closest(v, choices, 0.5) or choices[0]}`",
            )
    elif t == "pow2_le_128":
        x = _int(v)
        if x is None or not _pow2(x) or x > 128:
            return f"`{k}:{v}` must be a power of 2 no larger than 128", f"e.g. `{k}:8`"
    elif t == "page_size":
        if v != "1g":
            return (
                f"`{k}:{v}`: torch-npu accepts only `page_size:1g` (`page_size requires format 'page_size:1g'`)",
                "write `page_size:1g` or drop it",
            )
    elif t == "roundup":
        if e.items is None:
            x = _int(v)
            if x is None or not _pow2(x):
                return (
                    f"`{k}:{v}`: the divisions must be a power of 2 (`For roundups, the divisions has to be power of "
                    "2`)",
                    f"e.g. `{k}:4` or `{k}:[256:1,512:2,>:4]`",
                )
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
