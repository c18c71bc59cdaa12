"""0xx: the script's variables that no one assigns (VL011) and overrides that zsh globs (VL013),
found from its launches.

The other 0xx rules are reported by the front ends (the shell reader, the runner, launch
recognition) and declared with them in `verl_lint/catalogue.py`.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING

from ..catalogue import BROKEN_LINE_CONTINUATION, NEVER_ASSIGNED, OVERRIDE_LIKE, ZSH_GLOB
from ..model import Cut, Diagnostic, Launch, Severity, Span, Word
from ..registry import REGISTRY
from ..terminal import shorten

if TYPE_CHECKING:
    from ..shell import Command

# Set by the shell, the OS or the job launchers and clusters verl runs under, never by the
# script: reading them is not a bug. Names, or prefixes ending in `_`.
ENVIRONMENT = (  # a pattern: compiled (by `re`, once) when a script reads an unset name
    r"(HOME|PWD|OLDPWD|USER|LOGNAME|PATH|SHELL|HOSTNAME|HOST|RANDOM|SECONDS|LINENO|BASHPID|PPID|UID|EUID|"
    r"BASH_\w+|TMPDIR|LANG|TERM|PYTHONPATH|LD_LIBRARY_PATH|CONDA_PREFIX|VIRTUAL_ENV|"
    r"MASTER_ADDR|MASTER_PORT|RANK|WORLD_SIZE|NODE_RANK|LOCAL_RANK|LOCAL_WORLD_SIZE|"
    r"CUDA_VISIBLE_DEVICES|ASCEND_RT_VISIBLE_DEVICES|HIP_VISIBLE_DEVICES|ROCR_VISIBLE_DEVICES|"
    r"(SLURM|PBS|LSB|OMPI|PMI|PMIX|SGE|MLP|ARNOLD|KUBERNETES)_\w*)"
)


def broken_continuations(commands: list[Command], launches: list[Launch]) -> list[Diagnostic]:
    """VL008 at each command whose name is a Hydra override right below a launch, or below such a
    command itself (the launch's overrides cut off in several places); sets `Launch.cut` on each
    launch cut short (on each of its variants)."""
    cuts: dict[Span, Cut | None] = {la.span: None for la in launches}  # by launch
    cut_from: dict[Span, Span] = {}  # a command of cut-off overrides -> the launch they belong to
    out = []
    for cmd in commands:
        f = cmd.follows
        launch = (f.above if f.above in cuts else cut_from.get(f.above)) if f is not None else None
        if launch is None or cmd.span in cut_from:  # not below a launch; or one more variant of a command already seen
            continue
        cut_from[cmd.span] = launch
        first = cuts[launch] is None
        if first:
            cuts[launch] = Cut(cmd.words[0].span.line, f.blank, {})
        for w in cmd.words:
            if w.text is not None and re.match(OVERRIDE_LIKE, w.text):
                cuts[launch].below.setdefault(_key(w.text), w.span)
        word = cmd.words[0]
        if first and f.blank is not None:
            why = (
                f"the `\\ ` at line {f.blank.line} (a blank after the backslash) ends the launch above and passes it "
                "` ` as one more "
                "argument, on which Hydra stops (`OverrideParseException`) before anything runs; this line and the "
                "ones continuing it never reach it"
            )
            fix = (
                "delete what follows the backslash at the end of that line (the blank, and the comment after it): "
                "end it with a bare `\\`"
            )
        else:
            why = "the launch above ended early, so this line and the ones continuing it never reach it"
            fix = (
                "remove the comment or blank line inside the command, and end every line of it with `\\` (nothing "
                "after the backslash, not even a space)"
            )
        out.append(
            BROKEN_LINE_CONTINUATION.finding(
                f"`{shorten(word.text)}` runs as a command of its own (bash: command not found): {why}",
                word.span,
                help=fix,
                key=_key(word.text),
            )
        )
    for la in launches:
        la.cut = cuts[la.span]
    return out


def after_cut(d: Diagnostic, cut: Cut) -> Diagnostic:
    """A finding of a launch cut short, saying how the cut bears on it: after a `\\ ` Hydra stops
    on the ` ` argument before it gets that far; a key set below the cut never reaches the launch."""
    if REGISTRY.get(d.code).before_the_cut:  # python or Hydra stops before the cut could matter
        return d
    below = cut.below.get(d.key)
    if cut.blank is not None:
        d = replace(
            d,
            message=f"{d.message} (but the run never gets that far: the `\\ ` at line {cut.blank.line} passes ` ` to "
            "the launch "
            "as an override, and Hydra stops on it before composing the config: VL008)",
        )
    elif below is not None:
        d = replace(
            d,
            message=f"{d.message} (`{d.key}` is set at line {below.line}, among the overrides cut off from the "
            "launch: they never reach it, VL008)",
        )
    if below is not None:
        d = replace(
            d,
            help=f"repair the `\\` continuation that cuts the launch short above line {cut.line} (VL008): `{d.key}` "
            f"at line {below.line} then reaches it",
        )
    return d


def _key(override: str) -> str:
    return override.split("=", 1)[0].lstrip("+~")


def never_assigned(launches: list[Launch], commands: list[list[Word]] = ()) -> list[Diagnostic]:
    """VL011 at each `$X` the script never assigns whose value reaches one of the launches, and
    at a command word `$X` followed by Hydra overrides (of `commands`, each command's words):
    unless the environment sets X, bash runs the first override as the command."""
    seen: dict[tuple[str, Span], Diagnostic] = {}
    for words in commands:
        u = words[0].unknown if words and words[0].text is None else None
        if u is None or u.unassigned is None or u.unassigned in seen or words[0].prefix:
            continue
        first = (words[1].text if words[1].text is not None else words[1].prefix) if len(words) > 1 else ""
        if "=" not in first or not re.match(OVERRIDE_LIKE, first):  # `key=value`: not a file such as `prepare.py`
            continue
        name, span = u.unassigned
        seen[u.unassigned] = NEVER_ASSIGNED.finding(
            f"`${name}` is never assigned in this script, and it is this command's name: unless the environment sets "
            "it, "
            f"bash runs `{first.split('=', 1)[0]}=...` as the command (command not found) and the launch never starts",
            span,
            help=f"assign {name} in the script (the launch it should hold), or give it a default (`${{{name}:-...}}`)",
            key=name,
        )
    for la in launches:
        unknowns = [w.unknown for w in la.words] + [e.unknown for e in la.env.values()]
        for u in unknowns:
            if u is None or u.unassigned is None or re.fullmatch(ENVIRONMENT, u.unassigned[0]) or u.unassigned in seen:
                continue
            name, span = u.unassigned
            seen[u.unassigned] = NEVER_ASSIGNED.finding(
                f"`${name}` is never assigned in this script; its value comes from the environment at run time",
                span,
                help=f"set it in the script or give a default (`${{{name}:-...}}`); verl-lint treats it as unknown",
                key=name,
                severity=Severity.INFO if name.isupper() else None,
            )
    return list(seen.values())


_ZSH_SHEBANG = r"#!\s*\S*(?:/|env\s+)zsh\b"  # (compiled by re when a script is read)


def zsh_globs(path: str, text: str, launches: list[Launch]) -> list[Diagnostic]:
    """VL013 at each override written on a launch with an unquoted `*`, `?` or `[...]`, where zsh
    reads it: a zsh script (its `#!` line or `.zsh` name) stops there (an error); a doc's code
    block is pasted into the reader's shell, zsh on macOS (a warning). bash and sh pass a glob
    that matches no file on as written, so a bash script is not judged."""
    from ..embedded import DOCS  # its patterns and the launcher table only when a script is read, not at a job start

    is_doc = path.lower().endswith(DOCS)
    if not is_doc and not (path.endswith(".zsh") or re.match(_ZSH_SHEBANG, text)):
        return []
    data = text.encode("utf-8", "surrogateescape")
    out = []
    for la in launches:
        for w in la.words:
            inside = la.span.start_byte <= w.span.start_byte and w.span.end_byte <= la.span.end_byte
            raw = data[w.span.start_byte : w.span.end_byte].decode("utf-8", "replace") if inside else ""
            if not (raw and w.text and re.match(OVERRIDE_LIKE, w.text)) or re.search(r"[$`]", raw):
                continue  # (a file pattern such as `data/*.parquet` is meant to be expanded)
            glob = _unquoted_glob(raw)
            if glob is None:
                continue
            quoted = f"'{w.text}'" if "'" not in w.text else f'"{w.text}"'
            where = (
                "this is a zsh script: zsh stops the command with `no matches found`"
                if not is_doc
                else "a reader who pastes this block into zsh (macOS's default shell) gets `zsh: no matches found`"
            )
            out.append(
                ZSH_GLOB.finding(
                    f"`{raw}` holds an unquoted glob (`{glob}`): {where} (or, if a file matches, passes the file's "
                    "name instead) and the launch never starts as written",
                    w.span,
                    help=f"quote the whole override: {quoted}",
                    key=w.text.split("=", 1)[0].lstrip("+~"),
                    severity=None if is_doc else Severity.ERROR,
                )
            )
    return out


def _unquoted_glob(raw: str) -> str | None:
    """The first pattern character the shell expands in the word `raw` as written: `*` or `?`,
    or `[...]` (a `[` closed by a `]`), outside quotes and backslash escapes."""
    quote, opened, i = "", False, 0
    while i < len(raw):
        c = raw[i]
        if quote:
            if c == quote:
                quote = ""
            elif c == "\\" and quote == '"':
                i += 1
        elif c == "\\":
            i += 1
        elif c in "'\"":
            quote = c
        elif c in "*?":
            return c
        elif c == "[":
            opened = True
        elif c == "]" and opened:
            return "[...]"
        i += 1
    return None
