"""A script's text parsed by tree-sitter-bash, with the spans findings need, and its syntax
errors (each confirmed by `bash -n`: tree-sitter's grammar has gaps that bash accepts)."""

from __future__ import annotations

import bisect
import re
import shutil
import subprocess
from typing import NamedTuple

import tree_sitter as ts
import tree_sitter_bash as tsb

from ..catalogue import BASH_PARSE_ERROR
from ..model import Diagnostic, Span

_PARSER: ts.Parser | None = None
REDIRECTS = ("file_redirect", "heredoc_redirect", "herestring_redirect")
# Statements that hold commands in order (the first one starts them, the last one ends them).
_STATEMENTS = ("redirected_statement", "pipeline", "list")
# Between a command and the next line's: blanks, newlines, comments, backslashes (`\` newline, `\ `).
_GAP = re.compile(rb"([ \t\n]|\\[ \t\n]|#[^\n]*)*")
_ESCAPED_BLANK = re.compile(rb"[ \t]*(\\[ \t])")


def parser() -> ts.Parser:
    global _PARSER
    if _PARSER is None:
        _PARSER = ts.Parser(ts.Language(tsb.language()))
    return _PARSER


class Source:
    """A script's text with the byte/character bookkeeping spans need."""

    def __init__(self, path: str, text: str):
        self.path = path
        self.text = text
        self.data = text.encode("utf-8", "surrogatepass")
        self.tree = parser().parse(self.data)
        self._line_starts = [0] + [m.end() for m in re.finditer(b"\n", self.data)]
        self._init_points()

    def region(self, start: int, end: int) -> Source:
        """The same file with only bytes start..end parsed (a string run by `bash -c` or `eval`,
        a here-document fed to bash): spans stay those of the file."""
        sub = object.__new__(Source)
        sub.path, sub.text, sub.data, sub._line_starts = self.path, self.text, self.data, self._line_starts
        p = parser()
        p.included_ranges = [ts.Range(self._ts_point(start), self._ts_point(end), start, end)]
        try:
            sub.tree = p.parse(self.data)
        finally:
            p.included_ranges = []
        sub._init_points()
        return sub

    def _ts_point(self, byte: int) -> tuple[int, int]:
        row = bisect.bisect_right(self._line_starts, byte) - 1
        return (row, byte - self._line_starts[row])

    def _init_points(self) -> None:
        self._ascii = self.data.isascii()  # columns are byte offsets then (no decoding per span)
        self._points: dict[int, tuple[int, int]] = {}

    def span(self, start_byte: int, end_byte: int) -> Span:
        line, col = self._point(start_byte)
        end_line, end_col = self._point(end_byte)
        return Span(self.path, line, col, end_line, end_col, start_byte, end_byte)

    def node_span(self, node: ts.Node) -> Span:
        return self.span(node.start_byte, node.end_byte)

    def node_text(self, node: ts.Node) -> str:
        return self.data[node.start_byte : node.end_byte].decode("utf-8", "replace")

    def _point(self, byte: int) -> tuple[int, int]:
        hit = self._points.get(byte)
        if hit is None:
            row = bisect.bisect_right(self._line_starts, byte) - 1
            start = self._line_starts[row]
            col = byte - start + 1 if self._ascii else len(self.data[start:byte].decode("utf-8", "replace")) + 1
            hit = self._points[byte] = (row + 1, col)
        return hit

    def line_text(self, line: int) -> str:
        lines = self.text.splitlines()
        return lines[line - 1] if 0 < line <= len(lines) else ""


def bash_accepts(data: bytes) -> bool:
    """Whether `bash -n` parses the script. It reads and executes nothing but the text on its
    stdin (no profile, rc file or BASH_ENV: the environment is empty); extglob is on, since
    `shopt -s extglob` in the script is not run under -n. False when bash is not there."""
    bash = shutil.which("bash")
    if bash is None:
        return False
    try:
        proc = subprocess.run(
            [bash, "--noprofile", "--norc", "-O", "extglob", "-n"], input=data, env={}, capture_output=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return proc.returncode == 0


def syntax_errors(src: Source) -> list[Diagnostic]:
    """One finding per innermost ERROR / MISSING node, located on its first line, unless
    bash itself parses the script (a gap of the grammar, never a finding)."""
    root = src.tree.root_node
    if not root.has_error or bash_accepts(src.data):
        return []
    found = []
    stack = [root]
    while stack:
        n = stack.pop()
        inner = [c for c in n.children if c.has_error or c.is_missing or c.type == "ERROR"]
        if (n.type == "ERROR" or n.is_missing) and not any(c.type == "ERROR" or c.is_missing for c in _descendants(n)):
            if _grammar_gap(src, n):
                continue
            what = f"missing {n.type!r}" if n.is_missing else "this text is not valid bash"
            newline = src.data.find(b"\n", n.start_byte)
            end = n.end_byte if newline < 0 else min(n.end_byte, newline)
            found.append(
                BASH_PARSE_ERROR.finding(
                    f"bash syntax error: {what}; the rest of the script is still analysed",
                    src.span(n.start_byte, max(end, n.start_byte)),
                    help="fix the syntax; `bash -n SCRIPT` shows what bash thinks",
                )
            )
            continue
        stack.extend(reversed(inner))
    return found


def _grammar_gap(src: Source, n: ts.Node) -> bool:
    """Errors tree-sitter-bash reports where bash itself is fine (never worth a finding).

    A trailing `\\` continuation at the end of the file, and `${V:-[...]}` defaults that
    the grammar cannot parse; the evaluator treats such an expansion as unknown."""
    if src.data[n.start_byte :].strip() in (b"", b"\\"):  # `\` at EOF, newline or not
        return True
    p = n.parent
    while p is not None:
        if p.type == "expansion":
            return True
        p = p.parent
    return False


def _descendants(n: ts.Node):
    stack = list(n.children)
    while stack:
        c = stack.pop()
        yield c
        stack.extend(c.children)


class Follows(NamedTuple):
    """A command whose name is a Hydra override (`a.b=1`), and the command right above it with
    only blank lines, comments and backslashes between them: when that one is a launch, the
    launch was cut short there (BROKEN_LINE_CONTINUATION)."""

    above: Span  # the command right above
    blank: Span | None  # a `\ ` ending that command: bash passes it " " as its last argument


def follows(src: Source, n: ts.Node) -> Follows | None:
    """The command right above the statement that command `n` starts, when only blank lines,
    comments and backslashes separate them (the `\\` that should join them is missing or
    broken), with the `\\ ` ending it if any (tree-sitter-bash drops that word; bash passes " ")."""
    stmt = n
    while stmt.parent is not None and stmt.parent.type in _STATEMENTS and stmt.parent.named_children[0] == stmt:
        stmt = stmt.parent
    prev = stmt.prev_named_sibling
    while prev is not None and prev.type == "comment":
        prev = prev.prev_named_sibling
    gap = src.data[prev.end_byte : stmt.start_byte] if prev is not None else b""
    if prev is None or b"\n" not in gap or not _GAP.fullmatch(gap):
        return None
    last = prev
    while last is not None and last.type in _STATEMENTS:
        last = next((c for c in reversed(last.named_children) if c.type not in REDIRECTS), None)
    if last is None or last.type != "command":
        return None
    blank = _ESCAPED_BLANK.match(gap)
    return Follows(
        src.node_span(last), src.span(prev.end_byte + blank.start(1), prev.end_byte + blank.end(1)) if blank else None
    )


def glued(nodes: list[ts.Node]):
    """(node, tail) for each node, `tail` being the next node when the grammar split one word there:
    tree-sitter-bash ends `A=$X/$` at a bare `$` and starts a new node at `Y.log` (a command name,
    or a word after `export`), where bash sees one assignment `A=$X/$Y.log`. The tail is not
    yielded on its own."""
    i = 0
    while i < len(nodes):
        c = nodes[i]
        tail = (
            nodes[i + 1]
            if c.type == "variable_assignment" and i + 1 < len(nodes) and nodes[i + 1].start_byte == c.end_byte
            else None
        )
        yield c, tail
        i += 2 if tail is not None else 1
