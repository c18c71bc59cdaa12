"""Text from scanned files made safe to print: control characters shown, never obeyed.

A hostile script (or its file name, or a key or value in it) may carry ESC sequences that
recolour, move the cursor, rewrite the title or hide lines, BEL, backspace or carriage return
that overwrite what was printed, C1 controls (8-bit CSI), or bidi overrides that display
code in another order than it runs. Every one of them is printed as a visible escape instead.

Also what else goes to the terminal: the colour choice, usage errors, and `Progress`, the one
progress reporter (downloads, a cold reader index, many files), on stderr.
"""

from __future__ import annotations

import os
import sys
import time
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


def shorten(text: str, n: int = 40) -> str:
    """`text` on one line, cut to `n` characters, for quoting a script's text in a message."""
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


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


_progress = False  # turned on by the command line (not with -q): library callers (the Hydra callback) stay silent
_REDRAW = 0.1  # seconds between redraws of a progress line
_drawn_width = 0  # columns of the progress line on the terminal now (one line, whichever task drew it)


def show_progress(on: bool) -> None:
    """Let `Progress` report (the command line, unless -q) or not (the default; worker processes)."""
    global _progress
    _progress = on


class Progress:
    """A long task's progress on stderr, never stdout (reports go there). On a terminal one line
    `LABEL: done/total UNIT` rewritten with "\\r" at most 10 times a second, ended with a newline
    (erased instead with `keep=False`, or when the task fails); elsewhere `note` once, at the
    start, and nothing else. `unit="bytes"` shows MB and the rate. Silent unless `show_progress`."""

    def __init__(
        self, label: str, total: int | None = None, unit: str = "files", note: str | None = None, keep: bool = True
    ):
        self.label, self.total, self.unit, self.keep = safe(label), total, unit, keep
        self.done = 0
        self._start, self._drawn = time.monotonic(), 0.0
        try:
            self._tty = _progress and sys.stderr.isatty()
        except (AttributeError, ValueError):  # no stderr, or a closed one
            self._tty = False
        if _progress and not self._tty and note:
            self._write(f"verl-lint: {safe(note)}\n")

    def __enter__(self) -> Progress:
        if self._tty and self.total:  # (an unknown total is shown from the first update on)
            self._draw()
        return self

    def update(self, done: int, total: int | None = None) -> None:
        self.done = done
        if total is not None:
            self.total = total
        if self._tty and time.monotonic() - self._drawn >= _REDRAW:
            self._draw()

    def __exit__(self, kind, value, tb) -> None:
        if not self._tty:
            return
        global _drawn_width
        if self.keep and kind is None:
            self._draw()
            self._write("\n")
        elif _drawn_width:
            self._write("\r" + " " * _drawn_width + "\r")
        _drawn_width = 0

    def line(self) -> str:
        """`LABEL: 1.2/3.4 MB, 5.6 MB/s` or `LABEL: 12/40 files`."""
        if self.unit != "bytes":
            return f"{self.label}: {self.done}{f'/{self.total}' if self.total is not None else ''} {self.unit}"
        seconds = time.monotonic() - self._start
        total = f"/{self.total / 1e6:.1f}" if self.total else ""
        rate = f", {self.done / 1e6 / seconds:.1f} MB/s" if seconds > 0 and self.done else ""
        return f"{self.label}: {self.done / 1e6:.1f}{total} MB{rate}"

    def _draw(self) -> None:
        global _drawn_width
        text = self.line()
        try:
            columns = os.get_terminal_size(sys.stderr.fileno()).columns
        except (OSError, ValueError):
            columns = 0
        if columns > 1 and width(text) >= columns:  # a wrapped line cannot be rewritten with \r: keep the numbers
            text = "..." + text[-(columns - 4) :]
        self._write("\r" + text + " " * max(_drawn_width - width(text), 0))  # blank the rest of a longer line
        _drawn_width = width(text)
        self._drawn = time.monotonic()

    @staticmethod
    def _write(text: str) -> None:
        try:
            sys.stderr.write(text)
            sys.stderr.flush()
        except (OSError, ValueError):  # progress is never worth failing the run for
            pass


def usage_error(message: str) -> int:
    """`verl-lint: error: MESSAGE` on stderr (the message may quote a scanned file); returns the exit code, 2."""
    print(f"verl-lint: error: {safe(message)}", file=sys.stderr)
    return 2
