"""Text from scanned files made safe to print: control characters shown, never obeyed.

A hostile script (or its file name, or a key or value in it) may carry ESC sequences that
recolour, move the cursor, rewrite the title or hide lines, BEL, backspace or carriage return
that overwrite what was printed, C1 controls (8-bit CSI), or bidi overrides that display
code in another order than it runs. Every one of them is printed as a visible escape instead.
"""

from __future__ import annotations

import os
import sys
import unicodedata
from typing import TextIO

_BIDI = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
_ESCAPES = {c: f"\\x{c:02x}" for c in (*range(0x20), 0x7F, *range(0x80, 0xA0)) if c != 0x09}
_ESCAPES.update({c: f"\\u{c:04x}" for c in _BIDI})
# Undecodable bytes (read with surrogateescape) as the byte they were: printed raw they are
# either a crash (strict stdout) or the raw byte again (e.g. 0x9b, an 8-bit CSI).
_ESCAPES.update({c: f"\\x{c - 0xDC00:02x}" for c in range(0xDC80, 0xDD00)})
_KEEP_NEWLINE = {c: e for c, e in _ESCAPES.items() if c != 0x0A}


def safe(text: str, newline: bool = False) -> str:
    """`text` with every control character, bidi control and undecodable byte escaped
    (`\\x1b`, `\\u202e`); tab is kept, and newline too when `newline` is true."""
    return text.translate(_KEEP_NEWLINE if newline else _ESCAPES)


def width(text: str) -> int:
    """Columns `text` takes on a terminal: East Asian wide and fullwidth characters take two,
    combining marks and zero-width characters none."""
    n = 0
    for ch in text:
        if ch.isascii():
            n += 1
        elif unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
            continue
        else:
            n += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return n


def plural(n: int, word: str, many: str = "") -> str:
    """`1 script`, `2 scripts` (`many` for irregular plurals)."""
    return f"{n} {word if n == 1 else many or word + 's'}"


def use_color(choice: str, stream: TextIO) -> bool:
    """Colour for `--color always|never|auto`; auto: not with NO_COLOR set, else with
    FORCE_COLOR set, else when `stream` is a terminal (the order CPython itself follows)."""
    if choice != "auto":
        return choice == "always"
    if os.environ.get("NO_COLOR"):
        return False
    return bool(os.environ.get("FORCE_COLOR")) or stream.isatty()


def usage_error(message: str) -> int:
    """`verl-lint: error: MESSAGE` on stderr (the message may quote a scanned file); returns the exit code, 2."""
    print(f"verl-lint: error: {safe(message)}", file=sys.stderr)
    return 2
