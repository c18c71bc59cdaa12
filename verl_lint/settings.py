"""`[tool.verl-lint]` settings from pyproject.toml (or `--config FILE`)."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .model import Severity

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

KNOWN = {
    "select", "ignore", "extend-select", "per-file-ignores", "exclude", "fail-on",
    "verl-root", "verl-version", "severity", "max-file-size", "timeout",
}


@dataclass
class Settings:
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    per_file_ignores: dict[str, tuple[str, ...]] = field(default_factory=dict)
    exclude: tuple[str, ...] = ()
    fail_on: str = "error"
    verl_root: str | None = None
    verl_version: str | None = None
    severity: dict[str, Severity] = field(default_factory=dict)
    max_file_size: float = 4.0  # MiB
    timeout: float = 20.0  # seconds per file
    root: Path = Path(".")  # paths in the file are relative to it


def find_pyproject(start: Path) -> Path | None:
    # realpath and isfile never raise: a symlink loop or an unreadable directory given as a
    # path is reported by the file collection, not here.
    start = Path(os.path.realpath(start))
    for p in [start if os.path.isdir(start) else start.parent, *start.parents]:
        if os.path.isfile(p / "pyproject.toml"):
            return p / "pyproject.toml"
    return None


def load_settings(config: str | None, start: Path) -> Settings:
    path = Path(config) if config else find_pyproject(start)
    if path is None:
        return Settings()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as ex:
        raise ValueError(f"cannot read settings {path}: {ex}") from None
    table = data.get("tool", {}).get("verl-lint") if "tool" in data else data.get("verl-lint", data if config else None)
    if not table:
        return Settings(root=path.parent)
    unknown = set(table) - KNOWN
    if unknown:
        raise ValueError(f"{path}: unknown setting(s) {', '.join(sorted(unknown))} in [tool.verl-lint]")

    def codes(name: str) -> tuple[str, ...]:
        v = table.get(name, [])
        return tuple([v] if isinstance(v, str) else v)

    fail_on = table.get("fail-on", "error")
    if fail_on not in ("error", "warning", "info", "never"):
        raise ValueError(f"{path}: fail-on must be error, warning, info or never")
    root = path.parent
    verl_root = table.get("verl-root")
    return Settings(
        select=codes("select"),
        ignore=codes("ignore"),
        extend_select=codes("extend-select"),
        per_file_ignores={k: tuple([v] if isinstance(v, str) else v) for k, v in table.get("per-file-ignores", {}).items()},
        exclude=codes("exclude"),
        fail_on=fail_on,
        verl_root=str(root / verl_root) if verl_root else None,
        verl_version=table.get("verl-version"),
        severity={k: Severity.parse(v) for k, v in table.get("severity", {}).items()},
        max_file_size=float(table.get("max-file-size", 4.0)),
        timeout=float(table.get("timeout", 20.0)),
        root=root,
    )
