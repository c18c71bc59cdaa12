"""Inline suppressions and the baseline of accepted findings."""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import Counter
from pathlib import Path

from ..catalogue import UNUSED_SUPPRESSION
from ..files import read_regular, write_atomic
from ..model import Diagnostic, Severity, Span

_DIRECTIVE = re.compile(r"#\s*verl-lint:\s*(disable-file|disable)\s*=\s*([A-Za-z0-9_,\- ]+)")


def _matches(code_or_name: str, d: Diagnostic) -> bool:
    return d.code.startswith(code_or_name) or d.name == code_or_name


def apply_suppressions(diags: list[Diagnostic], text: str, path: str, report_unused: bool = True) -> list[Diagnostic]:
    """Drop suppressed findings; report suppressions that suppressed nothing (UNUSED_SUPPRESSION), unless the
    file serves other launches too (`report_unused` False: a project config file)."""
    lines = text.splitlines()
    directives = []  # (kind, codes, comment line, applies-to lines, col)
    for i, line in enumerate(lines, start=1):
        m = _DIRECTIVE.search(line)
        if not m or "#" not in line:
            continue
        codes = [c.strip() for c in m.group(2).replace(" ", ",").split(",") if c.strip()]
        own_line = line[: m.start()].strip() == ""
        targets = None if m.group(1) == "disable-file" else ({i, i + 1} if own_line else {i})
        directives.append((codes, i, targets, m.start() + 1, m.end() + 1))
    if not directives:
        return diags
    used: set[tuple[int, str]] = set()
    kept = []
    for d in diags:
        hit = None
        for codes, line, targets, _, _ in directives:
            if targets is not None and d.span.line not in targets:
                continue
            for c in codes:
                if _matches(c, d):
                    hit = (line, c)
                    break
            if hit:
                break
        if hit:
            used.add(hit)
        else:
            kept.append(d)
    for codes, line, _targets, col, end in directives if report_unused else ():
        for c in codes:
            if (line, c) not in used:
                message = f"this suppression of {c} suppressed nothing"
                kept.append(
                    UNUSED_SUPPRESSION.finding(
                        message, Span(path, line, col, line, end), help=f"remove `{c}` from the comment", key=c
                    )
                )
    return kept


# ------------------------------------------------------------- baseline ----


def _rel(path: str) -> str:
    try:
        return Path(os.path.relpath(path)).as_posix()
    except ValueError:
        return path


def fingerprint(d: Diagnostic, text: str | None) -> str:
    """Content, not position: the code, key and the stripped source of the finding's line."""
    line = ""
    if text is not None and d.span.line >= 1:
        lines = text.splitlines()
        if d.span.line <= len(lines):
            line = " ".join(lines[d.span.line - 1].split())
    return hashlib.sha256(f"{d.code}\0{d.key}\0{line}\0{d.message}".encode()).hexdigest()[:20]


def baseline_entries(reports) -> list[dict]:
    out = []
    for r in reports:
        for d in r.diagnostics:
            out.append(
                {
                    "path": _rel(d.span.path),
                    "code": d.code,
                    "key": d.key,
                    "fingerprint": fingerprint(d, r.text_of(d.span.path)),
                }
            )
    return out


_FIELDS = ("path", "code", "key", "fingerprint")


def write_baseline(path: Path, reports) -> int:
    """Record the findings in `path`; raises files.WriteError when it cannot be written."""
    entries = sorted(baseline_entries(reports), key=lambda e: tuple(e[k] for k in _FIELDS))
    write_atomic(path, json.dumps({"version": 1, "findings": entries}, indent=2) + "\n")
    return len(entries)


def filter_baseline(path: Path, reports) -> int:
    """Remove findings recorded in the baseline; returns how many were hidden. ValueError: not a baseline."""
    budget = Counter(_load_baseline(path))
    hidden = 0
    for r in reports:
        kept = []
        for d in r.diagnostics:
            k = (_rel(d.span.path), d.code, d.key, fingerprint(d, r.text_of(d.span.path)))
            if budget[k] > 0:
                budget[k] -= 1
                hidden += 1
            else:
                kept.append(d)
        r.diagnostics = kept
    return hidden


def _load_baseline(path: Path) -> list[tuple[str, ...]]:
    """The (path, code, key, fingerprint) of each entry of a --write-baseline file."""
    try:
        data = json.loads(read_regular(path).decode("utf-8"))
    except OSError as ex:
        raise ValueError(ex.strerror or str(ex)) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as ex:
        raise ValueError(f"not JSON ({ex})") from None
    findings = data.get("findings") if isinstance(data, dict) else None
    if not isinstance(findings, list):
        found = "an object without a `findings` list" if isinstance(data, dict) else f"a JSON {_json_type(data)}"
        raise ValueError(f'expected {{"version": 1, "findings": [...]}} as --write-baseline writes it, found {found}')
    out = []
    for i, e in enumerate(findings):
        if not isinstance(e, dict) or not all(isinstance(e.get(k), str) for k in _FIELDS):
            raise ValueError(f"findings[{i}] is not an object with string fields {', '.join(_FIELDS)}")
        out.append(tuple(e[k] for k in _FIELDS))
    return out


def _json_type(value) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", int: "number", float: "number"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


__all__ = ["apply_suppressions", "write_baseline", "filter_baseline", "Severity"]
