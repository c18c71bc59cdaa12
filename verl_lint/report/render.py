"""Renderers only: text (ruff/rustc style), JSON, SARIF 2.1.0, GitHub annotations."""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import Counter
from functools import cache

from .. import __version__
from ..catalogue import ANALYSIS_TIMEOUT, FILE_TOO_LARGE, outcome
from ..embedded import DOCS, YAMLS
from ..model import LAUNCH_CUT, Severity, argument
from ..rules import registered_rules
from ..runs import FileReport
from ..terminal import plural, safe, width

_COLORS = {Severity.ERROR: "\033[1;31m", Severity.WARNING: "\033[1;33m", Severity.INFO: "\033[1;36m"}
_RESET = "\033[0m"


def _frame(text: str | None, d, color: bool) -> list[str]:
    if not text or d.span.line < 1:
        return []
    lines = text.split("\n")  # the lines spans count: a form feed or a lone \r ends none
    if d.span.line > len(lines):
        return []
    raw = lines[d.span.line - 1].removesuffix("\r")  # spans count characters (a tab is one)
    start = max(d.span.col, 1)
    end = d.span.end_col if d.span.end_line == d.span.line and d.span.end_col > start else len(raw) + 1
    end = min(end, len(raw) + 1)

    def shown(s: str) -> str:  # as printed: tabs as 4 spaces, controls escaped
        return safe(s.replace("\t", "    "))

    src = shown(raw)
    # The caret goes under the text as the terminal shows it: escaped controls and tabs are
    # wider than one column, East Asian wide characters take two.
    left = width(shown(raw[: start - 1])) + max(0, start - 1 - len(raw))
    caret = " " * left + "^" * max(1, width(shown(raw[: end - 1])) - left)
    if color:
        caret = _COLORS[d.severity] + caret + _RESET
    n = argument(d.span)
    label = str(d.span.line if n is None else n)
    pad = " " * len(label)
    return [f" {pad} |", f" {label} | {src}", f" {pad} | {caret}"]


def where(span) -> str:
    """`path:line:col`, or `command line, argument N` for a finding on the command line."""
    n = argument(span)
    if n is None:
        return f"{safe(span.path)}:{span.line}:{span.col}"
    return f"command line, argument {n}" + (f", column {span.col}" if span.col > 1 else "")


def render_text(reports: list[FileReport], color: bool = False, show_summary: bool = True, hidden: int = 0) -> str:
    """The findings with code frames, then a summary; `hidden`: findings a baseline removed."""
    out: list[str] = []
    for r in reports:
        for e in r.errors:
            out.append(str(e))
        for d in r.diagnostics:
            sev = str(d.severity)
            if color:
                sev = _COLORS[d.severity] + sev + _RESET
            out.append(f"{where(d.span)}: {d.code} [{sev}] {safe(d.message)}")
            out.extend(_frame(r.text_of(d.span.path), d, color))
            for rel in d.related:
                out.append(f"  = note: {safe(rel.note)} ({where(rel.span)})")
            if d.help:
                out.append(f"  = help: {safe(d.help)}")
            out.append("")
    if show_summary:
        out.extend(f"{safe(r.path)}: {safe(r.note)}" for r in reports if r.note)
        s = stats(reports)
        n_err = sum(len(r.errors) for r in reports)
        linted = s["files"] - s["files_unreadable"]
        noun = "file" if any(r.path.lower().endswith(DOCS + YAMLS) for r in reports) else "script"
        scope = f"{plural(linted, noun)} linted, {plural(s['launches'], 'launch', 'launches')}"
        if s["files_unreadable"]:
            scope += f"; {s['files_unreadable']} could not be read"
        if s["findings"]:
            parts = [plural(s["errors"], "error"), plural(s["warnings"], "warning")]
            if s["infos"]:
                parts.append(f"{s['infos']} info")
            out.append(
                f"Found {plural(s['findings'], 'finding')} ({', '.join(parts)}) in {s['files_with_findings']} of "
                f"{scope}"
            )
        elif n_err and not s["launches"]:  # not "no findings": nothing was looked at
            why = {e.message for r in reports for e in r.errors}
            out.append(
                f"Nothing could be analysed in {plural(linted, noun)}: "
                + (safe(why.pop()) if len(why) == 1 else "see the input errors above")
            )
        elif n_err:
            out.append(f"No findings in {scope}")  # never "All clean" when some input was not linted
        else:
            out.append(f"All clean: {scope}")
        if hidden:
            out.append(f"{plural(hidden, 'finding')} hidden by the baseline")
        if s["unanalysed"] or s["files_unanalysed"]:
            out.append(accounting(reports))
        if n_err:
            out.append(f"{plural(n_err, 'input error')} (see above)")
    return "\n".join(out) + "\n"


def stats(reports: list[FileReport]) -> dict:
    """Counts for the summary, the exit code and the JSON/SARIF run properties."""
    n = {s: 0 for s in Severity}
    for r in reports:
        for d in r.diagnostics:
            n[d.severity] += 1
    return {
        "findings": sum(n.values()),
        "errors": n[Severity.ERROR],
        "warnings": n[Severity.WARNING],
        "infos": n[Severity.INFO],
        "files_with_findings": sum(1 for r in reports if r.diagnostics),
        "files": len(reports),
        "files_unreadable": sum(1 for r in reports if r.errors and r.text is None),  # not linted at all
        "launches": sum(r.launches for r in reports),
        # Accounted for, not analysed (`Rule.outcome`): launches (with the reason) and whole files
        # (too large, or cut by a limit).
        "unanalysed": sum(1 for r in reports for d in r.diagnostics if outcome(d) == "launch"),
        "files_unanalysed": sum(1 for r in reports if any(outcome(d) in ("file", "limit") for d in r.diagnostics)),
        # Of those, the launches a limit cut (the others are whole files).
        "over_limit": sum(
            1 for r in reports for d in r.diagnostics if outcome(d) == "limit" and d.message.startswith(LAUNCH_CUT)
        ),
    }


def accounting(reports: list[FileReport]) -> str:
    """What was not analysed, so a clean summary never hides it: the launches' reasons, grouped."""
    s = stats(reports)
    line = f"launches: {s['launches']} analysed, {s['unanalysed']} not analysable"
    if s["unanalysed"]:
        line += " (" + ", ".join(f"{n} {why}" for why, n in reasons(reports).items()) + ")"
    if s["over_limit"]:
        line += f", {s['over_limit']} cut by a limit ({ANALYSIS_TIMEOUT.code})"
    whole = sum(
        1
        for r in reports
        if any(
            outcome(d) == "file" or (outcome(d) == "limit" and not d.message.startswith(LAUNCH_CUT))
            for d in r.diagnostics
        )
    )
    if whole:
        line += (
            f"; {plural(whole, 'file')} not analysed at all ({FILE_TOO_LARGE.code} too large, "
            f"{ANALYSIS_TIMEOUT.code} its shell code over the time limit)"
        )
    return line


_CHECKED = "this launch was not checked: "


def reason(message: str) -> str:
    """A not-analysable launch's message's reason without its particulars (the entry point, the variable):
    `--config-name is only known at run time`, so that the summary can group them."""
    why = message.removeprefix(_CHECKED)
    why = re.sub(r"^\S+ is (started|named) here, but ", "", why)
    return re.sub(r"\s*\((?:[^()]|\([^()]*\))*\)$", "", why)  # a trailing (detail), nested once


def reasons(reports: list[FileReport]) -> dict[str, int]:
    """Why launches were not analysed: {reason: count}, the most frequent first."""
    return dict(
        Counter(reason(d.message) for r in reports for d in r.diagnostics if outcome(d) == "launch").most_common()
    )


def summary(reports: list[FileReport]) -> dict:
    """The run's accounting for machine readers (the JSON report's last item, SARIF run properties):
    files linted, launches analysed and not, the reasons grouped, and per file."""
    s = stats(reports)
    by_file = {}
    for r in reports:
        skipped = sum(1 for d in r.diagnostics if outcome(d) == "launch")
        if r.launches or skipped:
            by_file[r.path] = {"analysed": r.launches, "not_analysable": skipped}
    out = {
        "type": "summary",
        "files": {
            "linted": s["files"] - s["files_unreadable"],
            "unreadable": s["files_unreadable"],
            "not_analysed": s["files_unanalysed"],
        },
        "launches": {
            "analysed": s["launches"],
            "not_analysable": s["unanalysed"],
            "reasons": reasons(reports),
            "by_file": by_file,
        },
    }
    if s["over_limit"]:  # launches cut by a limit, neither analysed nor not analysable
        out["launches"]["over_limit"] = s["over_limit"]
    configs = {r.path: r.note for r in reports if r.note}
    if configs:  # primary configs linted on their own, and as which launch
        out["configs"] = configs
    return out


def render_statistics(reports: list[FileReport], fmt: str) -> str:
    """The number of findings per rule, most first (ruff's --statistics); `[*]`: some are fixable."""
    counts = Counter((d.code, d.name) for r in reports for d in r.diagnostics)
    fixable = {d.code for r in reports for d in r.diagnostics if d.fix is not None}
    rows = sorted(counts.items(), key=lambda x: (-x[1], x[0]))
    if fmt == "json":
        items = [{"code": c, "name": n, "count": k, "fixable": c in fixable} for (c, n), k in rows]
        return json.dumps(items, indent=2) + "\n"
    width = max((len(str(k)) for _, k in rows), default=1)
    return "".join(f"{k:>{width}}  {c}  {'[*]' if c in fixable else '   '} {n}\n" for (c, n), k in rows)


def render_json(reports: list[FileReport], docs: str | None = None) -> str:
    """The findings, then one `{"type": "summary", ...}` object (a finding has no `type`)."""
    items = [{**d.to_json(), "url": docs_url(d.code, docs)} for r in reports for d in r.diagnostics]
    items.append(summary(reports))
    return json.dumps(items, indent=2, ensure_ascii=False) + "\n"


@cache
def _docs_base() -> str | None:
    """Where this verl-lint's rule pages are published: the commit of the git repository it was
    installed from, on a forge that serves files (GitHub, GitLab; PEP 610 direct_url.json), else
    the `Documentation` address of the project's metadata (`[project.urls]` in pyproject.toml).
    Never a `file://` address: a report is read where the checkout is not (code scanning, a PR).
    None when not known: no made-up address."""
    import importlib.metadata  # ~25 ms: only JSON and SARIF reports name the pages, not every run

    # The installed distribution's record first (a stray `*.egg-info` of a source tree has no direct_url.json).
    dists = list(importlib.metadata.distributions(name="verl-lint"))
    for d in dists:
        try:
            info = json.loads(d.read_text("direct_url.json") or "{}")
        except ValueError:
            continue
        url, vcs = info.get("url", ""), info.get("vcs_info") or {}
        m = re.match(r"^https://(github\.com|gitlab\.com)/([^/]+/[^/]+?)(?:\.git)?/?$", url)
        if vcs.get("vcs") == "git" and vcs.get("commit_id") and m:
            sep = "blob" if m.group(1) == "github.com" else "-/blob"
            return f"https://{m.group(1)}/{m.group(2)}/{sep}/{vcs['commit_id']}/docs/rules"
    for d in dists:
        for entry in d.metadata.get_all("Project-URL") or ():
            label, _, url = entry.partition(",")
            if label.strip().lower() == "documentation" and url.strip().startswith("https://"):
                return url.strip().rstrip("/")
    return _checkout_documentation()


_DOCUMENTATION = re.compile(r'^\[project\.urls\]\s*\n(?:(?!\[).*\n)*?Documentation\s*=\s*"(https://[^"]+)"', re.M)


def _checkout_documentation() -> str | None:
    """`[project.urls] Documentation` of the pyproject.toml of the checkout this package runs from,
    for an editable install made before its metadata had the address (metadata is written at install)."""
    pyproject = os.path.join(
        os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "pyproject.toml"
    )
    try:
        with open(pyproject, encoding="utf-8") as f:
            m = _DOCUMENTATION.search(f.read())
    except OSError:
        return None
    return m.group(1).rstrip("/") if m else None


def docs_url(code: str, base: str | None = None) -> str | None:
    """The documentation page of rule `code`: under `base` (the `docs-url` setting, for a fork that
    publishes its own), else under `_docs_base()`; None when neither is known."""
    base = (base or "").rstrip("/") or _docs_base()
    return f"{base}/{code}.md" if base else None


def render(fmt: str, reports: list[FileReport], docs: str | None = None) -> str:
    """The report in a machine format (`docs`: the `docs-url` setting, for JSON and SARIF links)."""
    return RENDERERS[fmt](reports, docs=docs) if fmt in ("json", "sarif") else RENDERERS[fmt](reports)


def _rel(path: str) -> str:
    if path.startswith("<"):
        return path
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def render_github(reports: list[FileReport]) -> str:
    level = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}

    def esc(s: str) -> str:  # controls (\r too) escaped visibly first; a newline is GitHub's %0A
        return safe(s, newline=True).replace("%", "%25").replace("\n", "%0A")

    def prop(s: str) -> str:
        return esc(s).replace(":", "%3A").replace(",", "%2C")

    out = []
    for r in reports:
        for e in r.errors:
            out.append(f"::error file={prop(_rel(e.path))},line={max(e.line, 1)}::{esc(e.message)}")
        for d in r.diagnostics:
            msg = d.message + (f" (help: {d.help})" if d.help else "")
            out.append(
                f"::{level[d.severity]} file={prop(_rel(d.span.path))},line={d.span.line},col={d.span.col},"
                f"endLine={d.span.end_line},endColumn={d.span.end_col},title={prop(d.code + ' ' + d.name)}::{esc(msg)}"
            )
    return "\n".join(out) + ("\n" if out else "")


def render_sarif(reports: list[FileReport], docs: str | None = None) -> str:
    """SARIF 2.1.0 for code-scanning tools: the rules that produced results (with their docs),
    results with related locations and fingerprints that survive line moves."""
    level = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
    codes = sorted({d.code for r in reports for d in r.diagnostics})
    registry = registered_rules()  # findings read back from the result cache ran no rule in this process
    rules = [r for r in (registry.get(c) for c in codes) if r is not None]
    index = {r.code: i for i, r in enumerate(rules)}
    results = []
    for r in reports:
        seen: dict[str, int] = {}
        for d in r.diagnostics:
            res = {
                "ruleId": d.code,
                "level": level[d.severity],
                "message": {"text": d.message + (f"\nhelp: {d.help}" if d.help else "")},
                "locations": [{"physicalLocation": _physical(d.span)}],
                "partialFingerprints": {"verlLint/v1": _fingerprint(r.text_of(d.span.path), d, seen)},
            }
            if d.code in index:
                res["ruleIndex"] = index[d.code]
            if d.related:
                res["relatedLocations"] = [
                    {"id": i, "physicalLocation": _physical(rel.span), "message": {"text": rel.note}}
                    for i, rel in enumerate(d.related, 1)
                ]
            if d.key:
                res["properties"] = {"key": d.key}
            results.append(res)
    verls = sorted({v for r in reports for v in r.verl})
    doc = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "verl-lint",
                        "version": __version__,
                        "rules": [_sarif_rule(r, level, docs) for r in rules],
                    }
                },
                "results": results,
                "properties": {"verlLintVersion": __version__, "verlVersions": verls, **_sarif_accounting(reports)},
            }
        ],
    }
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def _sarif_accounting(reports: list[FileReport]) -> dict:
    acc = summary(reports)
    return {"files": acc["files"], "launches": acc["launches"]}


def _sarif_rule(r, level, docs: str | None) -> dict:
    out = {
        "id": r.code,
        "name": r.name,
        "shortDescription": {"text": r.summary},
        "fullDescription": {"text": r.body or r.summary},
        "defaultConfiguration": {"level": level[r.severity]},
        "help": {"text": r.body or r.summary, "markdown": r.page()},
    }
    url = docs_url(r.code, docs)
    if url:
        out["helpUri"] = url
    return out


def _physical(span) -> dict:
    return {
        "artifactLocation": {"uri": _rel(span.path).replace(os.sep, "/")},
        "region": {
            "startLine": max(span.line, 1),
            "startColumn": max(span.col, 1),
            "endLine": max(span.end_line, 1),
            "endColumn": max(span.end_col, 1),
        },
    }


def _fingerprint(text: str | None, d, seen: dict[str, int]) -> str:
    """Stable when lines move: the rule, the key and the text of the finding's line (not its
    number), plus which occurrence of that same triple in the file it is."""
    lines = (text or "").split("\n")
    line = lines[d.span.line - 1].strip() if 0 < d.span.line <= len(lines) else ""
    base = hashlib.sha256("\0".join((d.code, d.key, line)).encode("utf-8", "surrogatepass")).hexdigest()[:32]
    seen[base] = seen.get(base, 0) + 1
    return f"{base}:{seen[base]}"


def render_junit(reports: list[FileReport]) -> str:
    """JUnit XML for CI systems that show test reports: one test case per script, failed by its findings."""
    from xml.sax.saxutils import escape, quoteattr  # imports urllib.request (~30 ms): only for this format

    cases = []
    failures = 0
    for r in reports:
        # Control characters are not allowed in XML 1.0, escaped or not.
        items = [str(e) for e in r.errors] + [
            safe(
                f"{d.span.line}:{d.span.col} {d.code} [{d.severity}] {d.message}"
                + (f" (help: {d.help})" if d.help else "")
            )
            for d in r.diagnostics
        ]
        name = quoteattr(safe(_rel(r.path)))
        if items:
            failures += 1
            body = escape("\n".join(items))
            cases.append(
                f'    <testcase classname="verl-lint" name={name}><failure message="{len(items)} '
                f'finding(s)">{body}</failure></testcase>'
            )
        else:
            cases.append(f'    <testcase classname="verl-lint" name={name}/>')
    head = (
        '<?xml version="1.0" encoding="UTF-8"?>\n<testsuites>\n  <testsuite name="verl-lint" '
        f'tests="{len(reports)}" failures="{failures}">'
    )
    return "\n".join([head, *cases, "  </testsuite>", "</testsuites>"]) + "\n"


RENDERERS = {
    "text": render_text,
    "json": render_json,
    "github": render_github,
    "sarif": render_sarif,
    "junit": render_junit,
}
