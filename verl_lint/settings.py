"""Settings from `[tool.verl-lint]` in pyproject.toml, a `verl-lint.toml` or `--config FILE`,
checked against one table.

Each linted file gets the settings of the closest file above it, as ruff finds its own: in each
directory from the file's up, `verl-lint.toml`, else a `pyproject.toml` that has a
`[tool.verl-lint]` table (one without it is passed over, so a nested project's pyproject never
hides its parent's settings). `--config FILE` applies to every file.

A bad setting is one line naming the file, the setting and the problem, with what is allowed
and the nearest allowed value (`fail-on = "errors"` → did you mean "error"?).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .cache import memo
from .catalogue import RETIRED
from .engines.versions import version_problem
from .gpus import gpu_gib
from .model import Severity
from .rules import registered_rules
from .terminal import safe

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

SETTINGS_FILE = "verl-lint.toml"

SEVERITIES = tuple(str(s) for s in sorted(Severity, reverse=True))  # error, warning, info
FAIL_ON = (*SEVERITIES, "never")


@dataclass
class Settings:
    """The defaults of every setting; SETTINGS below says what each may be."""

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    per_file_ignores: dict[str, tuple[str, ...]] = field(default_factory=dict)
    exclude: tuple[str, ...] = ()
    fail_on: str = "error"
    verl_root: str | None = None
    verl_version: str | None = None
    cwd: str | None = None  # where the scripts are run from
    # engine releases (`vllm = "0.8.5"`): key as in Context.versions
    engines: dict[str, str] = field(default_factory=dict)
    severity: dict[str, Severity] = field(default_factory=dict)
    max_file_size: float = 4.0  # MiB
    timeout: float = 20.0  # seconds per launch (and for a file's shell code)
    docs_url: str | None = None  # where JSON and SARIF reports link each rule's page (a fork's own docs)
    gpu: float | None = None  # GiB per GPU for the memory rules (`gpu = "H100"` or `gpu = 80`)
    models: str = "offline"  # "online": a hub model's config.json may be downloaded (--models)
    root: Path = Path(".")  # paths in the file are relative to it
    path: Path | None = None  # the file they were read from; None: the defaults
    given: tuple[str, ...] = ()  # the settings that file sets (names as written, `fail-on`)


def show(value: Any) -> str:
    """A value as TOML would spell it (near enough), short and safe to print."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return safe(text if len(text) <= 60 else text[:57] + "...")


def did_you_mean(value: str, choices: Iterable[str]) -> str:
    """`; did you mean "x"?` for the closest choice, or ""."""
    import difflib  # only on a bad value: the Hydra callback's clean start does not pay for it

    close = difflib.get_close_matches(value, list(choices), n=1, cutoff=0.6)
    return f"; did you mean {show(close[0])}?" if close else ""


def choice_problem(value: Any, allowed: Iterable[str]) -> str | None:
    """None if `value` is one of `allowed`, else what is wrong with it (one clause)."""
    allowed = tuple(allowed)
    if isinstance(value, str) and value in allowed:
        return None
    hint = did_you_mean(value, allowed) if isinstance(value, str) else ""
    return f"must be one of {', '.join(allowed)}{hint}"


def code_problem(code: str) -> str | None:
    """None if `code` names rules (a code, a code prefix or a rule name), else what is wrong.

    The one check of rule codes, for flags, settings and the Hydra callback's parameters."""
    rules = rule_names()
    if code and any(c.startswith(code) or name == code for c, name in rules.items()) or code in RETIRED:
        return None
    known = [*rules, *rules.values()]
    return f"unknown rule code or name {show(code)}{did_you_mean(code, known)} (see `verl-lint rules`)"


def rule_names() -> dict[str, str]:
    """{code: name} of every rule, kept on disk: checking a `select` setting on a warm run does
    not load the rule pack."""
    return memo("tables", "rule names", lambda: {r.code: r.name for r in registered_rules()}, dict)


# ------------------------------------------------------------- the table ----


class _Bad(ValueError):
    """A value that does not fit its setting; the message says what it must be."""


def _strings(value: Any, what: str) -> tuple[str, ...]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(x, str) for x in items):
        raise _Bad(f"must be a string or a list of strings ({what})")
    return tuple(items)


def _codes(value: Any) -> tuple[str, ...]:
    codes = _strings(value, "rule codes, prefixes or names")
    for code in codes:
        problem = code_problem(code)
        if problem:
            raise _Bad(problem)
    return codes


def _globs(value: Any) -> tuple[str, ...]:
    return _strings(value, "path globs")


def _text(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise _Bad("must be a non-empty string" + (" (quote it)" if isinstance(value, (int, float)) else ""))
    return value


def _url(value: Any) -> str:
    if not isinstance(value, str) or not value.startswith(("https://", "http://")):
        raise _Bad("must be an http(s):// address (the directory holding the rule pages, one CODE.md per rule)")
    return value


def _fail_on(value: Any) -> str:
    problem = choice_problem(value, FAIL_ON)
    if problem:
        raise _Bad(problem)
    return value


def _number(minimum: float, above: bool, what: str) -> Callable[[Any], float]:
    def check(value: Any) -> float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value == value  # not NaN
        if not ok or value < minimum or (above and value == minimum) or value == float("inf"):
            raise _Bad(f"must be a number {'>' if above else '>='} {minimum:g} ({what})")
        return float(value)

    return check


def _table(value: Any, what: str) -> dict:
    if not isinstance(value, dict):
        raise _Bad(f"must be a table of {what}")
    return value


def _per_file_ignores(value: Any) -> dict[str, tuple[str, ...]]:
    return {glob: _codes(codes) for glob, codes in _table(value, "glob = [rule codes]").items()}


def _severity(value: Any) -> dict[str, Severity]:
    out = {}
    for code, sev in _table(value, 'rule code = "error" | "warning" | "info"').items():
        names = rule_names()
        rule = (
            code if code in names else next((c for c, name in names.items() if name == code), None)
        )  # one rule: not a prefix
        if rule is None:
            prefix = f"{show(code)} is a prefix: name one rule (its full code or its name)"
            raise _Bad(code_problem(code) or prefix)
        problem = choice_problem(sev, SEVERITIES)
        if problem:
            raise _Bad(f"the severity of {code} {problem}")
        out[rule] = Severity.parse(sev)  # findings carry the code
    return out


def _models(value: Any) -> str:
    problem = choice_problem(value, ("offline", "online"))
    if problem:
        raise _Bad(problem)
    return value


def _gpu(value: Any) -> float:
    try:
        return gpu_gib(value)
    except ValueError as ex:
        raise _Bad(str(ex)) from None


def _engine_version(value: Any) -> str:
    problem = version_problem(value)
    if problem:
        raise _Bad(problem)
    return value


# flag (and its older alias) -> engine key, as in the settings (`vllm = "0.8.5"`); the version wins
# over the installed one and over the ranges the verl tree declares (see engines/versions.py)
ENGINE_FLAGS = {
    "--vllm": ("--vllm-version", "vllm"),
    "--sglang": ("--sglang-version", "sglang"),
    "--vllm-ascend": ("--vllm-ascend-version", "vllm_ascend"),
    "--torch-npu": ("--torch-npu-version", "torch_npu"),
}

# name -> (Settings field, check: the value to keep, or _Bad saying what the value must be).
SETTINGS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "select": ("select", _codes),
    "ignore": ("ignore", _codes),
    "extend-select": ("extend_select", _codes),
    "per-file-ignores": ("per_file_ignores", _per_file_ignores),
    "exclude": ("exclude", _globs),
    "fail-on": ("fail_on", _fail_on),
    "verl-root": ("verl_root", _text),  # a path relative to the settings file
    "verl-version": ("verl_version", _text),
    "cwd": ("cwd", _text),  # a path relative to the settings file
    "severity": ("severity", _severity),
    "vllm": ("engines.vllm", _engine_version),
    "sglang": ("engines.sglang", _engine_version),
    "vllm-ascend": ("engines.vllm_ascend", _engine_version),
    "torch-npu": ("engines.torch_npu", _engine_version),
    "max-file-size": ("max_file_size", _number(0, above=True, what="MiB")),
    "timeout": ("timeout", _number(0, above=False, what="seconds per launch; 0: no limit")),
    "docs-url": ("docs_url", _url),
    "gpu": ("gpu", _gpu),  # a GPU's name (H100) or its memory in GiB
    "models": ("models", _models),  # "offline" | "online"
}


# -------------------------------------------------------------- loading ----


def _read_toml(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as ex:
        raise ValueError(f"cannot read settings {safe(str(path))}: {safe(str(ex))}") from None


def _has_table(data: dict) -> bool:
    tool = data.get("tool")
    return isinstance(tool, dict) and "verl-lint" in tool


def settings_file_in(d: Path) -> Path | None:
    """`d`'s own `verl-lint.toml`, or its pyproject.toml when that has a `[tool.verl-lint]` table."""
    if os.path.isfile(d / SETTINGS_FILE):
        return d / SETTINGS_FILE
    if os.path.isfile(d / "pyproject.toml") and _has_table(_read_toml(d / "pyproject.toml")):
        return d / "pyproject.toml"
    return None


class SettingsFinder:
    """The settings of each linted file: `--config FILE` for all, else the closest settings file.
    Each directory and file is looked at once per run."""

    def __init__(self, config: str | None):
        self.config = Path(config) if config else None
        self._file_of: dict[Path, Path | None] = {}  # directory -> its settings file
        self._loaded: dict[Path | None, Settings] = {}

    def _file_for(self, path: Path) -> Path | None:
        if self.config is not None:
            return self.config
        d = Path(os.path.realpath(path))  # never raises: a symlink loop is reported by the file collection
        return self._closest(d if os.path.isdir(d) else d.parent)

    def _closest(self, d: Path) -> Path | None:
        """The closest `verl-lint.toml`, or pyproject.toml with a `[tool.verl-lint]` table, from `d`
        up (each directory looked at once); ValueError (one line) on a pyproject that cannot be read."""
        if d not in self._file_of:
            self._file_of[d] = settings_file_in(d) or (None if d.parent == d else self._closest(d.parent))
        return self._file_of[d]

    def for_path(self, path: Path) -> Settings:
        """The settings `path` gets; ValueError (one line) on a bad settings file."""
        file = self._file_for(path)
        if file not in self._loaded:
            self._loaded[file] = Settings() if file is None else load_settings(file, explicit=file == self.config)
        return self._loaded[file]


def load_settings(path: Path, explicit: bool = False) -> Settings:
    """The settings in `path`; ValueError (one line) on a bad one. A `verl-lint.toml` or an
    `explicit` file (--config) may hold them at top level or in a [verl-lint] table."""
    where = safe(str(path))
    data = _read_toml(path)
    tool = data.get("tool")
    if tool is not None:
        table, label = (tool.get("verl-lint") if isinstance(tool, dict) else None), "[tool.verl-lint]"
    elif "verl-lint" in data:
        table, label = data["verl-lint"], "[verl-lint]"
    else:  # settings at top level
        table, label = (data if explicit or path.name == SETTINGS_FILE else None), ""
    if not table:
        return Settings(root=path.parent, path=path)
    if not isinstance(table, dict):
        raise ValueError(f"{where}: {label} must be a table of settings, not {show(table)}")
    values: dict[str, Any] = {}
    for name, value in table.items():
        if name not in SETTINGS:
            raise ValueError(
                f"{where}: unknown setting {show(name)}{' in ' + label if label else ''}{did_you_mean(name, SETTINGS)}"
                f" (settings: {', '.join(SETTINGS)})"
            )
        attr, check = SETTINGS[name]
        try:
            checked = check(value)
        except _Bad as ex:
            raise ValueError(f"{where}: {label + ' ' if label else ''}{name} = {show(value)}: {ex}") from None
        if attr.startswith("engines."):
            values.setdefault("engines", {})[attr.split(".", 1)[1]] = checked
        else:
            values[attr] = checked
    for attr in ("verl_root", "cwd"):
        if attr in values:
            values[attr] = str(path.parent / values[attr])
    return Settings(**values, root=path.parent, path=path, given=tuple(table))
