"""The values that flow through the pipeline: spans, words, launches and diagnostics (a run's
options and per-file reports are in `runs.py`).

Real (not postponed) annotations here: defining these classes, at every Hydra job start with
the callback, then skips compiling a string per field.
"""

from dataclasses import dataclass, field
from enum import IntEnum
from pathlib import Path
from typing import NamedTuple


class VerlTree(NamedTuple):
    """A verl source tree (checkout, installed package or downloaded release) and its version."""

    root: Path  # the directory that contains the `verl` package
    version: str | None
    origin: str

    def describe(self) -> str:
        return f"verl {self.version or '(unknown version)'} from {self.origin} ({self.root})"


class Severity(IntEnum):
    INFO = 1
    WARNING = 2
    ERROR = 3

    @classmethod
    def parse(cls, text: str) -> "Severity":
        try:
            return cls[text.strip().upper()]
        except KeyError:
            raise ValueError(f"unknown severity {text!r} (use error, warning or info)") from None

    def __str__(self) -> str:
        return self.name.lower()


class Span(NamedTuple):
    """A region of a source file. Lines and columns are 1-based; end is exclusive."""

    path: str
    line: int
    col: int
    end_line: int
    end_col: int
    start_byte: int = 0
    end_byte: int = 0


# The command line a launch was given on (`check -- CMD`, `run -- CMD`, a Hydra job's overrides):
# its text has one argument per line (see `command_text`), so line N + 1 is argument N.
COMMAND_LINE = "<command line>"


def command_text(argv: list[str]) -> str:
    """A command line as the text its spans point into: argument N on line N + 1, joined by
    ` \\` continuations so it is still the same bash command."""
    import shlex  # the command line's text is for the CLI: a Hydra job start never builds it

    return " \\\n".join(shlex.quote(a) for a in argv) + "\n"


def argument(span: Span) -> int | None:
    """The argument of the command line `span` is in (0: the program), else None."""
    return span.line - 1 if span.path == COMMAND_LINE and span.line >= 1 else None


def in_config_file(span: Span) -> bool:
    """The span is in a YAML config file (a value a project config file chose), not in a script."""
    return span.path.endswith((".yaml", ".yml"))


def place(span: Span) -> str:
    """Where `span` is, in words: "line 12", or "argument 3 of the command line"."""
    n = argument(span)
    if n is None:
        return f"line {span.line}"
    return f"argument {n} of the command line" if n else "the command line"


class Unknown(NamedTuple):
    """A value the static evaluator cannot know, with the reason why."""

    reason: str
    # `$X` of a variable the script assigns nowhere: (X, where `$X` is written), for NEVER_ASSIGNED.
    unassigned: tuple[str, Span] | None = None

    def __str__(self) -> str:
        return f"<unknown: {self.reason}>"


class Word(NamedTuple):
    """One argument word after bash expansion.

    `text` is None when the word cannot be known statically (`unknown` says why).
    `span` is where the word's text is written: the array element or assignment it
    came from when it was expanded from a variable, else the word on the command.
    """

    text: str | None
    span: Span
    unknown: Unknown | None = None
    # The word is one of the extra arguments the caller passes in ("$@").
    from_caller: bool = False
    # For an unknown word: the literal text known before the first unknown part
    # (`data.x=$UNSET` keeps `data.x=`), so the override's key is still known.
    prefix: str = ""
    # The working directory the text was built on (`$(pwd)/conf`), when that is assumed rather
    # than known: where the script is run from decides what the text really is.
    cwd: str | None = None
    # For an unknown word: its pieces in order, known texts and unknown Words, so that splitting
    # it on whitespace (an unquoted `$CMD`, `eval`) keeps every known word of it.
    parts: tuple["Word", ...] = ()


class EnvVar(NamedTuple):
    """A variable in the launch's environment, where it was set, and its value if known."""

    name: str
    value: str | None
    span: Span
    unknown: Unknown | None = None
    exported: bool = True  # False for a plain assignment that only a prefix or export makes visible


class RayAttach(NamedTuple):
    """How a launch reaches a Ray cluster that was started elsewhere (so the script's env may not)."""

    kind: str  # "ray-start": a `ray start` ran earlier in the script; "job-submit": `ray job submit -- ...`
    line: int
    env_at_start: dict | None = None  # {name: value} exported when `ray start` ran
    passed: frozenset = frozenset()  # names given to `ray job submit --runtime-env-json`
    passed_unknown: bool = False  # a runtime env was passed that cannot be read statically
    entrypoint_env: frozenset = frozenset()  # names set in the job's command itself (`-- A=1 python3 ...`)


class Cut(NamedTuple):
    """Where a launch is cut short: its overrides from `line` on run as commands of their own
    (BROKEN_LINE_CONTINUATION)."""

    line: int
    blank: Span | None  # the `\ ` that cut it: bash passes " " to the launch, and Hydra stops on it
    below: dict  # dotted key -> the span of an override below the cut that sets it


@dataclass(eq=False, repr=False)  # an entity, compared by identity: cheaper to define
class Launch:
    """One Hydra application launch found in a script."""

    path: str
    span: Span  # the whole command
    entry_span: Span  # the module or file word
    module: str | None  # `-m MOD`
    file: str | None  # `python3 path/to/app.py`
    overrides: list[Word] = field(default_factory=list)
    config_path: Word | None = None
    config_name: Word | None = None
    config_dir: Word | None = None
    env: dict[str, EnvVar] = field(default_factory=dict)
    cwd: str = "."  # absolute; "" after a `cd` to a place only known at run time
    # When the caller's working directory is not known: the directories the script may be run
    # from, most likely first (`cwd` is built on the first).
    run_from: tuple = ()
    caller_args: Span | None = None  # where "$@" adds unknown overrides
    # torchrun's options that size the job, as written: "nproc_per_node", "nnodes" (`--standalone`: 1)
    processes: dict[str, Word] = field(default_factory=dict)
    ray: RayAttach | None = None
    note: str | None = None  # the branch it is in, when the script's own values do not take it
    # The working directory its config path rests on, when assumed ("assuming the script runs
    # from ..."): said on the file's first finding that rests on it, not on each.
    assumed_cwd: str | None = None
    prints_only: str | None = None  # `--cfg job`, `--help`, ...: Hydra composes and prints, the app never runs
    # Set when the command names an entry point but cannot be read as a launch: why (a LAUNCH_NOT_ANALYSABLE finding).
    not_analysable: str | None = None
    words: list[Word] = field(default_factory=list)  # the whole command, launcher options included
    variant: tuple[str, ...] | None = None  # the branch values it was expanded with (one Launch per combination)
    cut: Cut | None = None  # cut short by a broken `\` continuation (BROKEN_LINE_CONTINUATION)


@dataclass
class Fix:
    """A mechanical fix of the script, like ruff's: safe ones keep behaviour, unsafe ones change it.

    Rules describe the edit (`kind` on the token at `span`); the pipeline resolves it to a
    byte range once the script's text is at hand (`start_byte`/`end_byte`/`replacement`).
    """

    title: str
    safe: bool
    kind: str  # "rename-key" | "remove-token" | "replace-token"
    span: Span
    old: str = ""  # rename-key: the key as written
    new: str = ""  # rename-key: the new key; replace-token: the new token
    start_byte: int = -1
    end_byte: int = -1
    replacement: str = ""


class Related(NamedTuple):
    """Another place a cross-field finding rests on (rustc's "note:"): the key, where it was set."""

    key: str
    span: Span
    note: str


@dataclass
class Diagnostic:
    """One finding: rule, severity, message and help, where it is, the key it is about, a fix."""

    code: str
    name: str
    severity: Severity
    message: str
    span: Span
    help: str = ""
    key: str = ""  # dotted config key (without +/~) or env var name
    fix: Fix | None = None
    once: bool = False  # about verl's own defaults or the run, not this launch: kept once per run
    related: tuple[Related, ...] = ()  # the other keys of a cross-field finding, where the script set them

    def sort_key(self) -> tuple:
        return (self.span.path, self.span.line, self.span.col, self.code, self.key, self.message)

    def to_json(self) -> dict:
        return {
            "code": self.code,
            "name": self.name,
            "severity": str(self.severity),
            "message": self.message,
            "help": self.help,
            "path": self.span.path,
            "line": self.span.line,
            "column": self.span.col,
            "end_line": self.span.end_line,
            "end_column": self.span.end_col,
            "argument": argument(self.span),  # on the command line: which argument (0: the program), else None
            "key": self.key,
            "related": [
                {"key": r.key, "note": r.note, "path": r.span.path, "line": r.span.line, "column": r.span.col}
                for r in self.related
            ],
            "fix": None
            if self.fix is None
            else {"title": self.fix.title, "safe": self.fix.safe, "kind": self.fix.kind, "new": self.fix.new},
        }


LAUNCH_CUT = "this launch was not analysed: "  # how an ANALYSIS_TIMEOUT at one launch begins (pipeline._cut)
