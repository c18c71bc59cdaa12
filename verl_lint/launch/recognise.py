"""Recognise Python/Hydra launches among a script's commands.

The launchers are the table in `verl_lint/launchers.py` (python, torchrun, deepspeed, `accelerate
launch`, `ray job submit`, `srun`-style launchers whose options take values, wrappers such as
`nohup`, `env -u X A=1`); here is one reader per way a launcher names its app (`READS`), plus
`eval`, `VAR=1` prefixes and `$PYTHON`-style interpreters. Hydra's own command-line flags
(`--config-path/-cp`, `--config-name/-cn`, `--config-dir/-cd`) are separated
from the overrides exactly as Hydra's argparse would.

A command that names a verl entry point but cannot be read as a launch is still returned,
with the reason in `Launch.not_analysable`: no launch is dropped without a word.
"""

from __future__ import annotations

import os
import re
import shlex

from ..launchers import PYTHON, RAY_JOB_SUBMIT, WRAPPERS, Launcher, at, by_module
from ..model import EnvVar, Launch, RayAttach, Span, Word
from ..shell import Command, env_of

# A verl entry point named in a command: `-m verl.x` / `-m recipe.x` / `-m pkg.main_x` (a
# project's own trainer, `verl_tool.trainer.main_ppo`), or a `main_*.py` file.
_ENTRY_MODULE = re.compile(r"^((verl|recipe)(\.\w+)+|\w+(\.\w+)*\.main_\w+)$")
_ENTRY_FILE = re.compile(r"(^|/)main_\w+\.py$")
_ENTRY_IN_TEXT = re.compile(r"-m\s+((?:verl|recipe)(?:\.\w+)+|\w+(?:\.\w+)*\.main_\w+)\b|([\w./-]*\bmain_\w+\.py)\b")
_ASSIGNMENT = re.compile(r"^\s*((export|local|readonly|declare)\s+)?[A-Za-z_]\w*=")
# What `_parsed_again` does not follow in bash's second parse under `eval`: expansions, operators.
_EVAL_SYNTAX = re.compile(r"[$`;&|<>(){}]|\s#")
_QUOTING = re.compile(r"['\"\\]")
_NOT_RUN = {"echo", "printf", "cat", "tee", "grep", "sed", "awk", "log", "info"}  # print, do not run, their words
# What `_head` skips to find the program: the wrappers, `env` and `sudo` (they take no separate values there).
_HEAD_SKIP = frozenset(WRAPPERS.names) | {"env", "sudo"}
_HYDRA_VALUE_FLAGS = {
    "--config-path": "config_path",
    "-cp": "config_path",
    "--config-name": "config_name",
    "-cn": "config_name",
    "--config-dir": "config_dir",
    "-cd": "config_dir",
}
_HYDRA_VALUE_OTHER = {"--cfg", "-c", "--package", "-p", "--info", "--experimental-rerun"}
# Hydra composes the config, prints it (or help) and exits without running the app.
_HYDRA_PRINT_ONLY = {"--cfg", "-c", "--info", "-i", "--help", "-h", "--hydra-help", "--version"}


def launches(commands: list[Command], path: str, text: str | None = None) -> list[Launch]:
    """The launches among `commands`; with the script's `text`, also a not-analysable one for
    each entry point named on a line that no command was read from (see `_unseen`)."""
    out = []
    ray_started: RayAttach | None = None
    for cmd in commands:
        env = env_of(cmd.state)
        env.update(cmd.prefix_env)
        heads = _head(cmd.words)
        if heads[:2] == ["ray", "start"] and cmd.span.path == path:
            ray_started = RayAttach("ray-start", cmd.span.line, {k: v.value for k, v in env.items()})
            continue
        if cmd.nested:
            continue  # its script string was read: the launches in it are commands of their own
        launch = _recognise(cmd.words, env, cmd, path) or _unreadable(cmd, env, path)
        if launch is not None:
            launch.words, launch.variant = cmd.words, cmd.variant
            if heads[: 1 + len(RAY_JOB_SUBMIT.subcommand)] == [*RAY_JOB_SUBMIT.names, *RAY_JOB_SUBMIT.subcommand]:
                launch.ray = _job_submit(cmd)
            elif ray_started is not None:
                launch.ray = ray_started
            out.append(launch)
    if text is not None:
        out += _unseen(text, path, commands, out)
    return out


def _unseen(text: str, path: str, commands: list[Command], found: list[Launch]) -> list[Launch]:
    """Entry points named on lines of the script that no launch or printing command covers: a
    here-document or `$(...)` run later, an array built in branches, a function never called.
    Each is reported not analysable, so no launch is dropped in silence."""
    seen: set[int] = set()
    for la in found:
        for span in (la.span, la.entry_span):
            if span.path == path:
                seen.update(range(span.line, span.end_line + 1))
    for cmd in commands:
        heads = _head(cmd.words)
        if cmd.span.path == path and (cmd.nested or (heads and heads[0] in _NOT_RUN)):
            seen.update(range(cmd.span.line, cmd.span.end_line + 1))
    # An entry point written into a variable (`ENTRYPOINT="-m verl.trainer.sft_trainer"`) whose
    # launch was analysed here: the value reached it (its words point where they were joined).
    analysed = {la.module or la.file for la in found if la.not_analysable is None}
    out = []
    offset = 0
    for n, line in enumerate(text.split("\n"), 1):
        start, offset = offset, offset + len(line) + 1
        code = line.split(" #", 1)[0]
        if n in seen or code.lstrip().startswith("#") or (code.split() or [""])[0] in _NOT_RUN:
            continue
        for m in _ENTRY_IN_TEXT.finditer(code):
            name = m.group(1) or m.group(2)
            if name in analysed and _ASSIGNMENT.match(code):
                continue
            col, end = m.start(1) if m.group(1) else m.start(2), m.end()
            nbytes = lambda i: len(text[: start + i].encode("utf-8", "surrogatepass"))  # noqa: E731, B023 - this line's
            span = Span(path, n, col + 1, n, end + 1, nbytes(col), nbytes(end))
            la = Launch(path=path, span=span, entry_span=span, module=m.group(1), file=m.group(2))
            la.not_analysable = f"{name} is named here, but verl-lint did not see this line run as a command"
            out.append(la)
    return out


def _parsed_again(words: list[Word]) -> list[Word] | None:
    """The words bash's second parse under `eval` makes of `words` (joined by blanks), when that
    is known without running anything: quotes and backslashes are removed, blanks outside them
    split. An unknown word (`$@`, a loop variable) stays one word. None when a word holds an
    expansion, an operator or a comment, or an unknown word meets a quote."""
    out: list[Word] = []
    group: list[Word] = []  # known words joined until their quotes close
    for w in words:
        known = [w.text] if w.text is not None else [w.prefix, *(p.text for p in w.parts if p.text)]
        if any(_EVAL_SYNTAX.search(t) for t in known) or known[0].startswith("#"):
            return None
        if w.text is None:
            if group or any(_QUOTING.search(t) for t in known):
                return None
            out.append(w)
            continue
        group.append(w)
        try:
            texts = shlex.split(" ".join(g.text for g in group), posix=True)
        except ValueError:  # a quote or a backslash the next word continues
            continue
        out += [group[0]._replace(text=t) for t in texts]
        group = []
    return None if group else out


def _head(words: list[Word]) -> list[str | None]:
    """The command's words after wrappers and `VAR=value` prefixes (basename of the program)."""
    i = 0
    while (
        i < len(words)
        and words[i].text is not None
        and (os.path.basename(words[i].text) in _HEAD_SKIP or re.match(r"^[A-Za-z_]\w*=", words[i].text))
    ):
        i += 1
    out = [w.text for w in words[i:]]
    if out and out[0] is not None:
        out[0] = os.path.basename(out[0])
    return out


def _job_submit(cmd: Command) -> RayAttach:
    """`ray job submit [--runtime-env-json JSON] -- ...`: the job gets only what the runtime env passes."""
    passed: set[str] = set()
    unknown = False
    words = cmd.words
    sep = next((j for j, w in enumerate(words) if w.text == "--"), len(words))
    in_command = frozenset(
        w.text.split("=", 1)[0] for w in words[sep + 1 :] if w.text and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", w.text)
    )
    for j, w in enumerate(words):
        if w.text == "--":
            break
        t = w.text if w.text is not None else w.prefix  # `--runtime-env=$ENV`: still the flag
        if t.startswith("--runtime-env"):
            val = (
                (t.split("=", 1)[1] if w.text is not None else None)
                if "=" in t
                else (words[j + 1].text if j + 1 < len(words) else None)
            )
            if val is None or not t.startswith("--runtime-env-json"):
                unknown = True
            else:
                passed |= set(re.findall(r'"([A-Za-z_][A-Za-z0-9_]*)"\s*:', val))
    return RayAttach("job-submit", cmd.span.line, None, frozenset(passed), unknown, in_command)


def _recognise(words: list[Word], env: dict[str, EnvVar], cmd: Command, path: str) -> Launch | None:
    i = 0
    # wrappers, `env VAR=...`, `VAR=...` and launchers that run another program (the table's readers)
    while i < len(words):
        t = words[i].text
        if t is None:
            break
        if os.path.basename(t) == "eval":
            again = _parsed_again(words[i + 1 :])
            if again is None:
                break
            words = [*words[:i], *again]
            continue
        if re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", t):  # `ray job submit -- A=1 python3 ...` (a shell string)
            k, v = t.split("=", 1)
            env = dict(env)
            env[k] = EnvVar(k, v, words[i].span)
            i += 1
            continue
        launcher = at(words, i)
        if launcher is None or launcher.starts_app:
            break
        if launcher.reads == "next":
            i += 1
            while i < len(words) and (words[i].text or "").startswith("-"):
                i += 1
        elif launcher.reads == "interpreter":
            start = _interpreter_after(words, i + 1)
            if start is None:
                return None
            i = start
        else:
            i, env = _env(words, i + 1, env)
    if i >= len(words):
        return None
    launcher = at(words, i)
    if launcher is not None:
        return _READERS[launcher.reads](launcher, words[i + 1 + len(launcher.subcommand) :], env, cmd, path)
    head = words[i]
    if head.text is not None or head.from_caller:
        return None
    # `$PYTHON -m ...` where the interpreter variable is unknown
    if i + 1 < len(words) and words[i + 1].text == "-m":
        return _python(None, words[i + 1 :], env, cmd, path)
    # `$LAUNCHER python3 -m ...`: an unknown prefix command before a real interpreter
    start = _interpreter_after(words, i + 1)
    return _recognise(words[start:], env, cmd, path) if start is not None else None


def _env(words: list[Word], i: int, env: dict[str, EnvVar]) -> tuple[int, dict[str, EnvVar]]:
    """`env [-u X] [A=1] ...` from `words[i]`: the index of its command, and the environment it gets."""
    while i < len(words):
        a = words[i].text
        if a is not None and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", a):
            k, v = a.split("=", 1)
            env = dict(env)
            env[k] = EnvVar(k, v, words[i].span)
            i += 1
        elif a in ("-u", "--unset", "-C", "--chdir", "-S", "--split-string"):  # an option with a value
            if a in ("-u", "--unset") and i + 1 < len(words) and words[i + 1].text:
                env = {k: v for k, v in env.items() if k != words[i + 1].text}
            i += 2
        elif a is not None and a.startswith("-"):
            i += 1
        else:
            break
    return i, env


def _python(launcher: Launcher | None, words: list[Word], env, cmd, path) -> Launch | None:
    """`python [opts] -m MOD | FILE.py args`: `words` after the interpreter."""
    value_options = (launcher or PYTHON).value_options
    j = 0
    while j < len(words):
        a = words[j].text
        if a is None:
            return None
        if a == "-m":
            if j + 1 >= len(words) or words[j + 1].text is None:
                return None
            mod = words[j + 1].text
            runs = by_module(mod)
            if runs is not None:  # `python -m torch.distributed.run`: torchrun
                return _READERS[runs.reads](runs, words[j + 2 :], env, cmd, path)
            return _app(mod, None, words[j + 1], words[j + 2 :], env, cmd, path)
        if a in ("-c",):
            return None
        if a in value_options:
            j += 2
            continue
        if a.startswith("-"):
            j += 1
            continue
        if a.endswith(".py"):
            return _app(None, a, words[j], words[j + 1 :], env, cmd, path)
        return None
    return None


def _options(launcher: Launcher, words: list[Word], env, cmd, path) -> Launch | None:
    """`torchrun [opts] -m MOD | FILE args`: its options known, those that size the job kept."""
    j = 0
    module_mode = False
    processes: dict[str, Word] = {}
    while j < len(words):
        a = words[j].text
        if a is None:
            # `--nproc_per_node=$N`: an option all the same; a bare `$X` could be the entry point.
            if not words[j].prefix.startswith("-") or "=" not in words[j].prefix:
                return None
            name = words[j].prefix.split("=", 1)[0].lstrip("-").replace("-", "_")
            if name in launcher.processes:
                processes[launcher.processes[name]] = words[j]._replace(prefix="")
            j += 1
            continue
        if a in launcher.module_flags:
            module_mode = True
            j += 1
            continue
        if a.startswith("-"):
            flag, eq, inline = a.partition("=")
            name = flag.lstrip("-").replace("-", "_")
            if name in launcher.processes:
                processes[launcher.processes[name]] = (
                    words[j]._replace(text=inline) if eq else (words[j + 1] if j + 1 < len(words) else words[j])
                )
            elif name in launcher.implies:
                key, value = launcher.implies[name]
                processes[key] = words[j]._replace(text=value)
            j += 1 if eq or a in launcher.flags else 2
            continue
        launch = _app(a if module_mode else None, None if module_mode else a, words[j], words[j + 1 :], env, cmd, path)
        launch.processes = processes
        return launch
    return None


def _entry(launcher: Launcher, words: list[Word], env, cmd, path) -> Launch | None:
    """`deepspeed [opts] -m MOD args`, `accelerate launch [opts] FILE args`: the launcher's many
    flags are not all known here, so the app starts at the first word naming a verl entry point
    (a module after `-m`/`--module`, a `main_*.py` file)."""
    module_mode = False
    for j, w in enumerate(words):
        t = w.text
        if t in launcher.module_flags:
            module_mode = True
        elif t is not None and module_mode and _ENTRY_MODULE.match(t):
            return _app(t, None, w, words[j + 1 :], env, cmd, path)
        elif t is not None and not t.startswith("-") and _ENTRY_FILE.search(t):
            return _app(None, t, w, words[j + 1 :], env, cmd, path)
    return None


def _after_separator(launcher: Launcher, words: list[Word], env, cmd, path) -> Launch | None:
    """`ray job submit [opts] -- [A=1] <launch>`: the launch after `--`."""
    sep = next((j for j, w in enumerate(words) if w.text == "--"), None)
    return None if sep is None else _recognise(words[sep + 1 :], env, cmd, path)


_READERS = {"python": _python, "options": _options, "entry": _entry, "after --": _after_separator}


def _interpreter_after(words: list[Word], start: int) -> int | None:
    """The index of the first launcher that starts an app (python, torchrun, ...) at or after `start`."""
    for k in range(start, len(words)):
        launcher = at(words, k)
        if launcher is not None and launcher.starts_app:
            return k
    return None


def _unreadable(cmd: Command, env, path: str) -> Launch | None:
    """A command that names a verl entry point but was not read as a launch, with the reason."""
    words = cmd.words
    head = next((w.text for w in words if not (w.text and re.match(r"^[A-Za-z_]\w*=", w.text))), None)
    if head is not None and os.path.basename(head) in _NOT_RUN:
        return None
    for j, w in enumerate(words):
        t = w.text
        if t is None:
            continue
        module = t if j and words[j - 1].text == "-m" and _ENTRY_MODULE.match(t) else None
        file = t if module is None and _ENTRY_FILE.search(t) else None
        m = None if module or file else _ENTRY_IN_TEXT.search(t) if " " in t else None
        if not (module or file or m):
            continue
        if m is not None:
            name = m.group(1) or m.group(2)
            why = f"it runs inside a string (`{head}` of `...{name}...`), which verl-lint does not read as a command"
        else:
            name = module or file
            dark = next((x for x in words[:j] if x.text is None), None)
            why = (
                "an argument before it is only known at run time "
                f"({dark.unknown.reason if dark.unknown else 'unknown'})"
                if dark is not None
                else "verl-lint does not recognise this way of starting it"
            )
        la = Launch(
            path=path,
            span=cmd.span,
            entry_span=w.span,
            module=module,
            file=file or (name if m else None),
            env=dict(env),
            cwd=cmd.state.cwd or "",
            run_from=cmd.state.run_from,
            note=cmd.note,
        )
        la.not_analysable = f"{name} is started here, but {why}"
        return la
    return None


def _app(module, file, entry: Word, args: list[Word], env, cmd: Command, path: str) -> Launch:
    launch = Launch(
        path=path,
        span=cmd.span,
        entry_span=entry.span,
        module=module,
        file=file,
        env=dict(env),
        cwd=cmd.state.cwd or "",
        run_from=cmd.state.run_from,
        note=cmd.note,
    )
    j = 0
    while j < len(args):
        w = args[j]
        a = w.text
        j += 1
        if w.from_caller:
            launch.caller_args = w.span
        if (a if a is not None else w.prefix).startswith("-"):  # `--config-name=$1` too: a flag with the caller's value
            # An unknown value keeps its known prefix: `--config-path=$DIR` is still the flag.
            flag, eq, inline = (a if a is not None else w.prefix).partition("=")
            target = _prefix_flag(flag)
            if target and eq:
                setattr(launch, target, w._replace(text=inline if a is not None else None))
            elif target and j < len(args):
                setattr(launch, target, args[j])
                j += 1
            elif flag in _HYDRA_VALUE_OTHER and not eq:
                j += 1
            if flag in _HYDRA_PRINT_ONLY:
                launch.prints_only = flag
        elif not w.from_caller:
            launch.overrides.append(w)
    d = launch.config_dir
    if d is not None and d.text and not os.path.isabs(d.text) and cmd.state.cwd:
        # Hydra takes --config-dir from the working directory (os.path.abspath), where the script runs
        launch.config_dir = d._replace(text=os.path.join(cmd.state.cwd, d.text), cwd=cmd.state.cwd_base)
    return launch


def _prefix_flag(flag: str) -> str | None:
    """argparse accepts unique prefixes of long options (`--config-n`)."""
    if flag in _HYDRA_VALUE_FLAGS:
        return _HYDRA_VALUE_FLAGS[flag]
    if not flag.startswith("--config-") or len(flag) <= len("--config-"):
        return None
    matches = {v for k, v in _HYDRA_VALUE_FLAGS.items() if k.startswith("--") and k.startswith(flag)}
    return matches.pop() if len(matches) == 1 else None
