"""`verl-lint config SCRIPT[:LINE]`: the composed config a launch gets, the same one the rules
see, with where each value comes from: the script (its line), the user's own config files,
verl's shipped defaults, or a value only known at run time (`$VAR`). Like Hydra's `--cfg job`,
without importing torch or Ray. `--diff A B` shows how two launches differ.
"""

from __future__ import annotations

import json
import sys
from argparse import Namespace
from pathlib import Path

from omegaconf import OmegaConf

from .check import UsageError, load, options_for
from .config.context import Context
from .memory import breakdown, gpu_memory, model_lines
from .model import Unknown
from .pipeline import launch_context, script_launches
from .runner import process_composer, read_script
from .runs import FileReport
from .settings import SettingsFinder
from .terminal import safe, usage_error


class View:
    """One launch's composed config: value and origin of each leaf key."""

    def __init__(self, where: str, entry: str, verl: str | None, config_name: str | None, values: dict[str, tuple]):
        self.where, self.entry, self.verl, self.config_name = where, entry, verl, config_name
        # dotted key -> (value as shown, origin, line or None, config file or None, value in the config):
        # shown is the interpolation resolved, or the script's text of a value only known at run time
        self.values = values
        self.models: list[str] = []  # the launch's models: facts and where they come from (memory.model_lines)
        self.memory: list[str] = []  # the memory breakdown, when asked for (memory.breakdown)

    def as_dict(self, prefix: str) -> dict:
        return {
            "launch": self.where,
            "entry": self.entry,
            "verl": self.verl,
            "config_name": self.config_name,
            "values": {k: _entry(*v) for k, v in self.values.items() if _under(k, prefix)},
            **({"models": self.models} if self.models else {}),
            **({"memory": self.memory} if self.memory else {}),
        }


def _entry(shown, origin: str, line: int | None, file: str | None, value) -> dict:
    """A value for machines: as the config holds it, and what the text shows when that differs
    (`resolved`: an interpolation's value; `written`: the script's text of a run-time value)."""
    out = {"value": value, "origin": origin, "line": line, **({"file": file} if file else {})}
    if shown != value:
        out["written" if origin.startswith("script, known at run time") else "resolved"] = shown
    return out


def _under(key: str, prefix: str) -> bool:
    return not prefix or key == prefix or key.startswith(prefix.rstrip(".") + ".")


def _leaves(node, prefix: str = ""):
    """(dotted key, value) of every leaf of a plain container; empty dicts and lists are leaves."""
    if isinstance(node, dict) and node:
        for k, v in node.items():
            yield from _leaves(v, f"{prefix}.{k}" if prefix else str(k))
    else:
        yield prefix, node


def _origin(ctx: Context, key: str, depth: int = 0) -> tuple[str, int | None, str | None]:
    """Who chose the value of `key`, and the line (and, in a config file, the file) that says so;
    an interpolation's is that of the key it reads (`script, line 6, via trainer.n_gpus_per_node`)."""
    kind = ctx.provenance(key)
    setter = ctx.comp.last_setter(key)
    if setter is not None and setter.in_file:
        return kind, setter.word.span.line, setter.word.span.path
    if setter is not None and kind in ("script", "unknown"):
        return (
            (kind if kind == "script" else f"script, known at run time: {setter.value_unknown.reason}"),
            setter.word.span.line,
            None,
        )
    refs = ctx.references(key) if setter is None and depth < 4 else []
    if refs:
        ref = next((r for r in refs if ctx.provenance(r) == kind), refs[0])  # the one the provenance follows
        origin, line, file = _origin(ctx, ref, depth + 1)
        return (origin if ", via " in origin else f"{origin}, via {ref}"), line, file
    return kind, None, None


def _shown(ctx: Context, key: str, value, text: str):
    """The value as the text view prints it: an interpolation resolved (when it statically can be),
    a value only known at run time as the script writes it (`$HOME/data/train.parquet`)."""
    setter = ctx.comp.last_setter(key)
    if setter is not None and setter.value_unknown is not None and not setter.in_file:
        written = _written(text, setter.word.span)
        return written.split("=", 1)[1] if written and "=" in written else value
    if isinstance(value, str) and "${" in value:
        resolved = ctx.get(key, None)
        if not isinstance(resolved, Unknown) and (resolved is None or isinstance(resolved, (str, int, float, bool))):
            return resolved
    return value


def _written(text: str, span) -> str | None:
    """The script's text at a one-line span."""
    lines = text.split("\n")
    if span.line != span.end_line or not 0 < span.line <= len(lines):
        return None
    return lines[span.line - 1][span.col - 1 : span.end_col - 1]


def view_of(ctx: Context, path: str, text: str = "") -> View:
    cfg = OmegaConf.to_container(ctx.cfg, resolve=False)
    values = {}
    for key, value in _leaves(cfg):
        values[key] = (_shown(ctx, key, value, text), *_origin(ctx, key), value)
    la = ctx.launch
    where = f"{path}:{la.entry_span.line}" + (
        f" ({'; '.join(la.variant)})" if la.variant else ""
    )  # one of the branches' values
    return View(where, la.module or la.file or "", ctx.app.verl_version, ctx.app.config_name, values)


def views(path: str, options, line: int | None, gpu_gib: float | None = None) -> tuple[list[View], list[str]]:
    """The views of the launches in a script (the one at `line`), and why others have none."""
    text, err, _notes = read_script(Path(path), options.max_bytes)
    if err is not None or text is None:
        raise UsageError(f"{path}: {err.message if err else 'not analysed (too large)'}")
    script_dir, _, found = script_launches(path, text, options)
    out, skipped = [], []
    found = [la for la in found if line is None or la.span.line <= line <= la.span.end_line]
    if line is not None and not found:
        raise UsageError(f"{path}:{line}: no launch of a verl entry point on that line")
    report = FileReport(path, text=text)
    for la in found:
        where = f"{path}:{la.entry_span.line}"
        if la.not_analysable:
            skipped.append(f"{where}: not analysable: {la.not_analysable}")
            continue
        try:
            ctx = launch_context(la, options, process_composer(True), script_dir, report)
        except Exception as ex:  # noqa: BLE001 - LocateError, NotAnalysable...: said per launch
            skipped.append(f"{where}: {ex}")
            continue
        if ctx is None:
            continue  # not a Hydra app
        if not isinstance(ctx, Context):
            skipped += [f"{where}: does not compose: {d.message}" for d in ctx] or [f"{where}: only prints its config"]
            continue
        out.append(view_of(ctx, path, text))
        out[-1].models = model_lines(ctx)
        out[-1].memory = breakdown(ctx, gpu_gib) if gpu_gib else []
    return out, skipped


def _show(value) -> str:
    return json.dumps(value) if not isinstance(value, str) else value


def _where(value: tuple) -> str:
    """`script, line 6`, `user-file, config/x.yaml:3`, the line before what follows the kind (`, via KEY`)."""
    _, origin, line, file, _ = value
    if line is None:
        return origin
    kind, sep, rest = origin.partition(", ")
    return f"{kind}, {f'{file}:{line}' if file else f'line {line}'}{sep}{rest}"


def render_text(vs: list[View], prefix: str) -> str:
    lines = []
    for v in vs:
        lines.append(f"# {v.where}  {v.entry}  (verl {v.verl or 'unknown'}, config {v.config_name or 'default'})")
        rows = [(k, _show(val[0]), _where(val)) for k, val in v.values.items() if _under(k, prefix)]
        width = min(
            max((len(k) + len(val) + 2 for k, val, _ in rows), default=0), 72
        )  # origins line up, unless a value is long
        lines += [safe(f"{k}: {val}".ljust(width) + f"  # {o}") for k, val, o in rows]
        lines += [safe(f"# model: {m}" if not m.startswith(" ") else f"#        {m.strip()}") for m in v.models]
        lines += ["", *(safe(m) for m in v.memory)] if v.memory else []
    return "\n".join(lines) + "\n"


def render_diff(a: View, b: View, prefix: str) -> str:
    lines = [f"--- {a.where}", f"+++ {b.where}"]
    for key in sorted(set(a.values) | set(b.values)):
        if not _under(key, prefix):
            continue
        va, vb = a.values.get(key), b.values.get(key)
        if va is not None and vb is not None and va[0] == vb[0]:
            continue
        for sign, v in (("-", va), ("+", vb)):
            if v is not None:
                lines.append(safe(f"{sign}{key}: {_show(v[0])}  # {_where(v)}"))
    return "\n".join(lines) + "\n"


def _target(arg: str) -> tuple[str, int | None]:
    """SCRIPT[:LINE]."""
    path, _, line = arg.rpartition(":")
    if path and line.isdigit() and not Path(arg).exists():
        return path, int(line)
    return arg, None


def run(args: Namespace) -> int:
    finder = SettingsFinder(args.config)
    targets = [_target(t) for t in args.targets]
    if args.diff and len(targets) != 2:
        return usage_error("--diff compares two launches: give SCRIPT[:LINE] twice")
    try:
        shown: list[View] = []
        for path, line in targets:
            if not Path(path).is_file():
                raise UsageError(f"{path}: no such file")
            options = options_for(args, load(finder, Path(path)))
            vs, skipped = views(path, options, line, gpu_memory(args, options))
            for s in skipped:
                print(f"verl-lint: {safe(s)}", file=sys.stderr)
            if args.diff and len(vs) != 1:
                lines = ", ".join(v.where for v in vs) or "none composes"
                raise UsageError(f"{path}: --diff needs one launch: give SCRIPT:LINE ({lines})")
            shown += vs
    except UsageError as ex:
        return usage_error(str(ex))
    if not shown:
        return usage_error("no launch composed (see above)")
    prefix = args.key or ""
    if args.diff:
        sys.stdout.write(render_diff(shown[0], shown[1], prefix))
    elif args.format == "json":
        sys.stdout.write(json.dumps([v.as_dict(prefix) for v in shown], indent=2) + "\n")
    elif args.format == "yaml":
        import yaml  # only for this format

        sys.stdout.write(yaml.safe_dump([v.as_dict(prefix) for v in shown], sort_keys=False, allow_unicode=True))
    else:
        sys.stdout.write(render_text(shown, prefix))
    return 0


__all__ = ["View", "run", "views"]
