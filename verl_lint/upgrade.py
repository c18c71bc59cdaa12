"""`verl-lint upgrade`: the scripts linted against the current and the target verl, reporting
only what the upgrade changes (through `check`'s own lint, fixes and report)."""

from __future__ import annotations

import sys
from argparse import Namespace
from pathlib import Path

from .check import STDIN, UsageError, docs_url, emit, fail_on_levels, fix, lint, plan, verl_tree
from .launch.locate import find_checkout, installed_tree
from .settings import SettingsFinder
from .terminal import usage_error


def upgrade(args: Namespace) -> int:
    """Lint against the current and the target verl; report only what the upgrade changes."""
    if STDIN in args.paths:
        return usage_error("upgrade reads the scripts twice: give files, not stdin (`-`)")
    finder = SettingsFinder(args.config)
    try:
        inputs = plan(args, None, finder)
        target = verl_tree(None, args.to)
        current = verl_tree(args.from_root, args.from_version)
        if current is None:
            current = find_checkout(Path(args.paths[0]).resolve().parent) or installed_tree()
        if current is None:
            raise UsageError("no current verl found: pass --from VERSION or --from-root DIR")
        before = lint(args, None, inputs, current)
        after = lint(args, None, inputs, target)
    except UsageError as ex:
        return usage_error(str(ex))
    print(f"Upgrade preview: verl {current.version} -> {target.version}", file=sys.stderr)
    known = {(d.span.path, d.code, d.key, d.span.line, d.span.col) for r in before for d in r.diagnostics}

    def new_only(reports):  # what the upgrade changes, also after --fix linted the changed files again
        for r in reports:
            r.diagnostics = [
                d for d in r.diagnostics if (d.span.path, d.code, d.key, d.span.line, d.span.col) not in known
            ]
        return reports

    new_only(after)
    failed = diffs = 0
    if args.fix or args.diff:
        after, failed, diffs = fix(args, None, inputs, after, target)
        new_only(after)
    return emit(after, args, fail_on_levels(args, inputs), failed, diffs=diffs, docs=docs_url(inputs))
