"""Apply the text edits attached to diagnostics, safely.

A fix is a byte-range edit of the script. Edits are applied from the end of the file
backwards, the result is re-parsed with tree-sitter-bash and must have the same
command structure (no new syntax errors, the same commands), and the file is written
atomically only if it still has the content that was linted (re-read just before the rename).
"""

from __future__ import annotations

import difflib
import os
import shlex
from dataclasses import dataclass, replace

from ..files import WriteError, write_atomic
from ..model import Diagnostic, Fix


@dataclass
class FixResult:
    path: str
    applied: int
    skipped_reason: str = ""
    diff: str = ""
    failed: bool = False  # the fixes could not be written (skipped_reason says why): an error, not a notice


def resolve(fix: Fix, data: bytes) -> Fix | None:
    """Turn a fix's intent into a byte edit of `data` (the script), or None when it is not mechanical."""
    span = fix.span
    if fix.kind == "rename-key":
        raw = data[span.start_byte : span.end_byte]
        old = fix.old.encode()
        at = raw.find(old)
        if at < 0 or raw.find(old, at + 1) >= 0:
            return None  # the key is not literally written there (built from variables)
        start = span.start_byte + at
        return replace(fix, start_byte=start, end_byte=start + len(old), replacement=fix.new)
    if fix.kind == "replace-token":
        return replace(fix, start_byte=span.start_byte, end_byte=span.end_byte, replacement=shell_quote(fix.new))
    if fix.kind == "remove-token":
        line_start = data.rfind(b"\n", 0, span.start_byte) + 1
        line_end = data.find(b"\n", span.end_byte)
        line_end = len(data) if line_end < 0 else line_end
        before, after = data[line_start : span.start_byte], data[span.end_byte : line_end]
        if before.strip() == b"" and after.strip() in (b"", b"\\"):
            return replace(fix, start_byte=line_start, end_byte=min(line_end + 1, len(data)), replacement="")
        start, end = span.start_byte, span.end_byte
        if data[end : end + 1] == b" ":
            end += 1
        elif data[start - 1 : start] == b" ":
            start -= 1
        return replace(fix, start_byte=start, end_byte=end, replacement="")
    return None


def shell_quote(word: str) -> str:
    return word if all(c.isalnum() or c in "._-+=/:,@~%" for c in word) else shlex.quote(word)


def _structure(data: bytes, path: str = "") -> tuple:
    """What a fix must leave as it was: a script's commands, a YAML file's keys per mapping."""
    if path.endswith((".yaml", ".yml")):
        return _yaml_keys(data)
    from ..shell import Source  # tree-sitter (~20 ms) only when a fix is applied or counted, not on a warm clean run

    src = Source("<fix>", data.decode("utf-8", "replace"))
    root = src.tree.root_node
    kinds = []
    stack = [root]
    while stack:
        n = stack.pop()
        if n.type in (
            "command",
            "variable_assignment",
            "declaration_command",
            "function_definition",
            "if_statement",
            "for_statement",
        ):
            kinds.append(n.type)
        stack.extend(n.children)
    return root.has_error, tuple(sorted(kinds))


def _yaml_keys(data: bytes) -> tuple:
    """A YAML file's distinct keys per mapping, in order (a rename onto a key the mapping has
    already would merge two values), or a parse error. Comments are text: an edit keeps them."""
    import yaml  # only when a fix edits a config file

    try:
        root = yaml.compose(
            data.decode("utf-8", "surrogateescape"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        )
    except yaml.YAMLError:
        return (True,)
    counts, stack = [], [root]
    while stack:
        n = stack.pop()
        if isinstance(n, yaml.MappingNode):
            keys = [k.value for k, _ in n.value if isinstance(k, yaml.ScalarNode)]
            counts.append((len(keys), len(set(keys))))
            stack.extend(v for _, v in n.value)
        elif isinstance(n, yaml.SequenceNode):
            stack.extend(n.value)
    return (False, tuple(n == distinct for n, distinct in counts), len(counts))


def apply_fixes(path: str, original: str, diags: list[Diagnostic], unsafe: bool, write: bool) -> FixResult:
    data = original.encode("utf-8", "surrogatepass")
    fixes = [
        f
        for d in diags
        if d.fix is not None and (d.fix.safe or unsafe) and d.fix.span.path == path
        for f in [resolve(d.fix, data)]
        if f is not None
    ]
    if not fixes:
        return FixResult(path, 0)
    # Non-overlapping, from the end backwards so earlier offsets stay valid.
    chosen: list[Fix] = []
    for f in sorted(fixes, key=lambda f: (f.start_byte, f.end_byte), reverse=True):
        if chosen and f.end_byte > chosen[-1].start_byte:
            continue
        chosen.append(f)
    new = data
    for f in chosen:
        new = new[: f.start_byte] + f.replacement.encode() + new[f.end_byte :]
    if _structure(new, path) != _structure(data, path):
        return FixResult(path, 0, "the fixed file would not parse the same way; left unchanged")
    text = new.decode("utf-8", "surrogatepass")
    diff = "".join(difflib.unified_diff(original.splitlines(True), text.splitlines(True), *_diff_names(path)))
    if write:
        try:
            write_atomic(path, new, expect=data)
        except WriteError as ex:
            return FixResult(path, 0, ex.reason, failed=True)
    return FixResult(path, len(chosen), "", diff)


def _diff_names(path: str) -> tuple[str, str]:
    """git's `a/x` `b/x` for a file under the working directory; other files by their own path."""
    rel = os.path.relpath(path)
    if rel.startswith(".."):
        return path, path
    return f"a/{rel}", f"b/{rel}"
