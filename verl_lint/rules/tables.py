"""Knowledge as data: one generic check per table in the top-level `rules/` folder.

- `ineffective_keys.yaml` (2xx): keys that compose fine but verl ignores or overwrites.
- `removed_keys.yaml` (4xx): keys, values, entry points and config names removed or
  renamed between verl releases, with the replacement.

Each record becomes a registered rule with its own code, documentation and examples.
"""

from __future__ import annotations

import fnmatch
import re

from packaging.version import Version

from ..data import load_table
from ..engine import REGISTRY, Context, Rule, main_ppo
from ..model import Diagnostic, Fix, Severity


def _matcher(patterns: list[str]):
    """`match(key)`: the part matched by a trailing `.*` ('' for an exact or glob match), or None.
    The patterns are split by kind once: the callback matches every record against every override."""
    exact = {p for p in patterns if not p.endswith(".*") and not _GLOB.search(p)}
    prefixes = tuple(p[:-1] for p in patterns if p.endswith(".*"))  # "a.b.*" -> "a.b."
    globs = tuple(p for p in patterns if not p.endswith(".*") and _GLOB.search(p))

    def match(key: str) -> str | None:
        if key in exact:
            return ""
        for base in prefixes:
            if key.startswith(base):
                return key[len(base) :]
        return "" if any(fnmatch.fnmatchcase(key, g) for g in globs) else None

    return match


_GLOB = re.compile(r"[*?\[]")


def _value_text(line: str) -> str:
    return line.split("=", 1)[1] if "=" in line else ""


def _doc_text(rec: dict, text: str) -> str:
    """A record's message/help for the documentation: placeholders shown generically."""
    first = (rec.get("keys") or [rec.get("module") or rec.get("config_name") or "the key"])[0]
    fields = {"key": first, "value": "<value>", "replacement": rec.get("replacement") or "", "version": rec.get("removed", "")}
    return text.format(**fields).replace("{rest}", "...").replace(".*", ".<key>")


def _doc(rec: dict, kind: str) -> str:
    evidence = "\n".join(f"    - {e}" for e in rec.get("evidence", []))
    what = rec.get("summary", rec["name"])
    keys = ", ".join(f"`{k}`" for k in rec.get("keys", []) or [rec.get("module") or rec.get("config_name") or ""])
    if kind == "ineffective":
        does = f"Flags an override of {keys} on verl {rec['verl']}" + (
            " when " + ", ".join(f"`{k}={v}`" for k, v in rec["when"].items()) if rec.get("when") else ""
        )
    else:
        does = f"Flags {keys} on verl >= {rec['removed']} (where it no longer works)"
    return (
        f"{what}\n\n    ## What it does\n    {does}.\n\n    ## Why is this bad?\n    {_doc_text(rec, rec['message'])}\n\n"
        f"    ## Use instead\n    {_doc_text(rec, rec['help'])}\n\n    ## Where in verl\n{evidence}\n"
    )


def _examples(rec: dict, field: str) -> list[str]:
    out = []
    for ex in rec.get(field) or []:
        if isinstance(ex, str):  # an override line as written (a whole script for entry-point records)
            out.append(f"#!/bin/bash\npython3 -m verl.trainer.main_ppo {ex}\n" if rec.get("module") is None else ex)
        else:
            out.append(main_ppo(*ex))
    return out


def _ineffective(rec: dict):
    """The check of one ineffective_keys.yaml record."""
    matches = _matcher(rec["keys"])

    def check(ctx: Context):
        if any(ctx.set_by_override(k) for k in rec.get("unless_set") or ()):
            return
        for cond_key, expected in (rec.get("when") or {}).items():
            got = ctx.get(cond_key, None)
            if got is None or _as_text(got) != str(expected):
                return
        for o in ctx.comp.overrides:
            if not o.ok or o.kind not in ("set", "add", "force_add"):
                continue
            if matches(o.key) is None:
                continue
            value = "<unknown>" if o.value_unknown else _value_text(o.line)
            if rec.get("value") is not None and value != str(rec["value"]):
                continue
            yield ctx.diag(rec["code"], rec["message"].format(key=o.key, value=value), key=o.key, help=rec["help"].format(key=o.key, value=value), span=o.word.span)

    return check


def _removed(rec: dict):
    """The check of one removed_keys.yaml record."""
    matches = _matcher(rec.get("keys") or [])

    def check(ctx: Context):
        if rec.get("config_name"):
            name = (ctx.app.config_name or "").removesuffix(".yaml")
            if name == rec["config_name"]:
                span = ctx.launch.config_name.span if ctx.launch.config_name is not None else ctx.launch.entry_span
                yield ctx.diag(rec["code"], rec["message"], key=name, help=rec["help"], span=span)
            return
        for o in ctx.comp.overrides:
            if o.kind == "hydra":
                continue
            rest = matches(o.key)
            if rest is None:
                continue
            if rec.get("value") is not None and (o.value_unknown or _value_text(o.line) != str(rec["value"])):
                continue
            # A removed key is confirmed by the tree itself: Hydra rejected the override. (A dev
            # checkout between releases may still have it; then there is nothing to explain.)
            if rec.get("value") is None and rec["severity"] == "error" and o.ok:
                continue
            yield removed_diag(ctx, rec, o, rest)

    return check


def removed_diag(ctx: Context, rec: dict, o, rest: str) -> Diagnostic:
    replacement = (rec.get("replacement") or "").replace("{rest}", rest)
    fields = dict(key=o.key, replacement=replacement, version=rec["removed"], value="<value>" if o.value_unknown else _value_text(o.line))
    msg, help = rec["message"].format(**fields), rec["help"].format(**fields)
    d = ctx.diag(rec["code"], msg, key=o.key, help=help, span=o.word.span)
    if replacement and rec.get("rename"):
        d.fix = Fix(f"rename `{o.key}` to `{replacement}`", True, "rename-key", o.word.span, old=o.key, new=replacement)
    elif not replacement and rec["severity"] == "error":
        # The key is gone: dropping the override lets the launch compose, but what it meant is lost.
        d.fix = Fix(f"remove `{o.line}`", False, "remove-token", o.word.span)
    return d


def _as_text(v) -> str:
    if isinstance(v, bool):
        return "True" if v else "False"
    return str(v)


def removed_modules() -> list[dict]:
    return [r for r in load_table("removed_keys.yaml") or [] if r.get("module")]


def removed_module_diag(module: str, version: Version | None, span) -> Diagnostic | None:
    """A launch of an entry point that the verl release no longer has."""
    for rec in removed_modules():
        if rec["module"] == module and version is not None and version >= Version(rec["removed"]):
            r = REGISTRY.get(rec["code"])
            return Diagnostic(r.code, r.name, r.severity, rec["message"].format(key=module, version=rec["removed"]), span, rec["help"], module)
    return None


# The ineffective-key records were verified on the main_ppo path (its trainer and workers);
# other apps (fully-async, one-step-off) read some of these keys themselves.
MAIN_PPO_APPS = ("ppo_trainer", "ppo_megatron_trainer")


def _register() -> None:
    for rec in load_table("ineffective_keys.yaml") or []:
        REGISTRY.register(
            Rule(
                rec["code"],
                rec["name"],
                Severity.parse(rec["severity"]),
                _doc(rec, "ineffective"),
                _ineffective(rec),
                rec.get("verl", ""),
                _examples(rec, "bad"),
                _examples(rec, "good"),
                tuple(rec.get("apps", MAIN_PPO_APPS)),
            )
        )
    for rec in load_table("removed_keys.yaml") or []:
        check = None if rec.get("module") else _removed(rec)
        REGISTRY.register(
            Rule(
                rec["code"],
                rec["name"],
                Severity.parse(rec["severity"]),
                _doc(rec, "removed"),
                check,
                f">={rec['removed']}",
                _examples(rec, "bad"),
                _examples(rec, "good"),
            )
        )


_register()
