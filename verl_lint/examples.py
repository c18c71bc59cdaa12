"""The rules' example fixtures: at least one bad and one good per rule, shipped as package data
and read when a rule's page or a test asks (never on the lint path)."""

from __future__ import annotations

import functools
import shlex
from dataclasses import dataclass
from pathlib import Path

# rules/examples/CODE/bad-N/ must produce the rule, good-N/ nothing:
#   run.sh          the script, linted as `run.sh` from the fixture's directory
#   config/*.yaml   optional: the project's own Hydra configs run.sh launches with
#   verl            optional: the packaging specifier of the verl releases the example holds for
#   options         optional: the CLI flags it is linted with, instead of EXAMPLE_OPTIONS
#   note            optional: why it holds (or holds only where it does), shown on the rule's page
#   expected.txt    what `verl-lint check` prints for it (expected-VERSION.txt where a release differs)
# scripts/regen_golden.py writes the expected output; tests/test_rule_examples.py compares it.
EXAMPLES_DIR = Path(__file__).resolve().parent / "rules" / "examples"
EXAMPLE_OPTIONS = ("--gpu-memory", "80")  # an 80 GiB GPU: the memory rules judge the examples


@dataclass(frozen=True)
class Example:
    """One example fixture of a rule (see EXAMPLES_DIR)."""

    code: str
    kind: str  # "bad" or "good"
    index: int  # from 1, the order on the rule's page
    path: Path
    verl: str  # '' for every release
    options: tuple[str, ...]

    @property
    def name(self) -> str:
        return f"{self.code}/{self.kind}-{self.index}"

    def files(self) -> list[tuple[str, bytes]]:
        """(relative path, content) of run.sh and its config files, run.sh first."""
        configs = sorted(p for p in (self.path / "config").rglob("*") if p.is_file())
        return [(p.relative_to(self.path).as_posix(), p.read_bytes()) for p in [self.path / "run.sh", *configs]]

    @property
    def note(self) -> str:
        note = self.path / "note"
        return note.read_text(encoding="utf-8").strip() if note.is_file() else ""

    @property
    def script(self) -> str:
        return (self.path / "run.sh").read_bytes().decode("utf-8", "surrogateescape")  # may carry invalid UTF-8

    def shown(self) -> list[tuple[str, str]]:
        """The files as a page shows them: long ones cut, invalid UTF-8 escaped."""
        out = []
        for name, data in self.files():
            text = data.decode("utf-8", "surrogateescape")
            if len(text) > 2000:
                text = text[:2000] + "\n..."
            out.append((name, text.encode("utf-8", "backslashreplace").decode()))
        return out


def _example(code: str, d: Path) -> Example:
    kind, _, n = d.name.partition("-")
    spec, options = d / "verl", d / "options"
    return Example(
        code,
        kind,
        int(n),
        d,
        spec.read_text(encoding="utf-8").strip() if spec.is_file() else "",
        tuple(shlex.split(options.read_text(encoding="utf-8"))) if options.is_file() else EXAMPLE_OPTIONS,
    )


@functools.cache
def examples_of(code: str) -> tuple[Example, ...]:
    """The example fixtures of rule `code`: bad ones, then good ones, each in their order."""
    root = EXAMPLES_DIR / code
    dirs = [d for d in root.iterdir() if d.is_dir()] if root.is_dir() else []
    return tuple(sorted((_example(code, d) for d in dirs), key=lambda ex: (ex.kind != "bad", ex.index)))
