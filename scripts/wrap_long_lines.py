"""Wrap the lines `ruff format` leaves over the line length: string literals split into adjacent
literals at a space (the value is unchanged), comments and docstring lines wrapped at a space.
Run `ruff format` afterwards; what it cannot wrap is listed for a hand edit.

    python scripts/wrap_long_lines.py [--width 120] FILES...
"""

from __future__ import annotations

import argparse
import io
import re
import sys
import textwrap
import tokenize
from pathlib import Path

_PREFIX = re.compile(r"^([rRbBuUfF]*)('''|\"\"\"|'|\")")


def _split_at(body: str, limit: int, fstring: bool) -> int | None:
    """The index after the last space in `body[:limit]` where a split keeps the value: not
    inside an f-string's braces, not after a backslash; None if there is none."""
    depth, best, i = 0, None, 0
    while i < len(body) and i < limit:
        c = body[i]
        if fstring and body.startswith(("{{", "}}"), i):
            i += 2
            continue
        if fstring and c == "{":
            depth += 1
        elif fstring and c == "}":
            depth -= 1
        elif c == "\\":
            i += 2
            continue
        elif c == " " and depth == 0 and i > 8:
            best = i + 1
        i += 1
    return best if best and best < len(body) else None


def _literal(prefix: str, quote: str, body: str) -> str:
    if "f" in prefix.lower() and "{" not in body.replace("{{", ""):
        prefix = prefix.replace("f", "").replace("F", "")
        body = body.replace("{{", "{").replace("}}", "}")
    return f"{prefix}{quote}{body}{quote}"


def wrap(text: str, width: int) -> str:
    lines = text.splitlines(keepends=True)
    tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    edits: dict[int, str] = {}  # 0-based line -> its replacement
    depth = 0
    for tok in tokens:
        if tok.type == tokenize.OP and tok.string in "([{":
            depth += 1
        elif tok.type == tokenize.OP and tok.string in ")]}":
            depth -= 1
        row, col = tok.start
        if row > len(lines):
            break  # the end marker
        line = lines[row - 1]
        if row - 1 in edits or len(line.rstrip("\n")) <= width:
            continue
        indent = line[: len(line) - len(line.lstrip())]
        if tok.type == tokenize.COMMENT:
            before = line[:col]
            if before.strip() and "import " in before:
                continue  # an import's reason stays on its line: a hand edit
            comment = tok.string.lstrip("#").strip()
            wrapped = textwrap.wrap(comment, width - len(indent) - 2, break_on_hyphens=False)
            block = "".join(f"{indent}# {w}\n" for w in wrapped)
            edits[row - 1] = block if not before.strip() else block + before.rstrip() + "\n"
        elif tok.type == tokenize.STRING and tok.start[0] == tok.end[0]:
            m = _PREFIX.match(tok.string)
            if m is None or len(m.group(2)) == 3:
                continue
            prefix, quote = m.groups()
            body = tok.string[len(prefix) + 1 : -1]
            cut = _split_at(body, width - col - len(prefix) - 3, "f" in prefix.lower())
            if cut is None:
                continue
            first, rest = _literal(prefix, quote, body[:cut]), _literal(prefix, quote, body[cut:])
            if depth > 0:
                new = f"{first}\n{indent}    {rest}"
            else:
                new = f"({first}\n{indent}    {rest})"
            edits[row - 1] = line[:col] + new + line[tok.end[1] :]
        elif tok.type == tokenize.STRING:  # a triple-quoted string: wrap its long lines at a space
            start, end = tok.start[0] - 1, tok.end[0] - 1
            for i in range(start, end + 1):
                ln = lines[i]
                if len(ln.rstrip("\n")) <= width or i in edits:
                    continue
                own = ln[: len(ln) - len(ln.lstrip())] if i > start else indent
                cut = ln.rfind(" ", len(own) + 10, width)
                if cut < 0 or (i == end and cut > len(ln.rstrip("\n")) - 4):
                    continue
                edits[i] = ln[:cut] + "\n" + own + ln[cut + 1 :]
    return "".join(edits.get(i, ln) for i, ln in enumerate(lines))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--width", type=int, default=120)
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    for f in args.files:
        path = Path(f)
        text = path.read_text(encoding="utf-8")
        for _ in range(6):  # a line may need more than one cut
            new = wrap(text, args.width)
            if new == text:
                break
            compile(new, str(path), "exec")  # never write what does not parse
            text = new
        if text != path.read_text(encoding="utf-8"):
            path.write_text(text, encoding="utf-8")
            print(f"wrapped {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
