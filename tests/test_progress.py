"""Progress where work is long: the first download of a verl release, a cold reader index and a
run over many files. On a terminal stderr gets one line rewritten with "\\r" (ended with a
newline, or erased for the files line); elsewhere one note at the start of a download or an
index build and nothing else; -q silences both; stdout (the report) never gets any of it.

The CLI runs in a subprocess with stderr on a real pseudo-terminal, against the local package
index of test_download.py (a real HTTP server on localhost serving the real verl 0.9.1 wheel).
"""

from __future__ import annotations

import fcntl
import io
import json
import os
import pty
import re
import shutil
import struct
import subprocess
import sys
import termios
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import EXAMPLES, json_findings
from test_download import SCRIPT, _cli, downloading, index, verl_wheel  # noqa: F401 - fixtures used by name

from verl_lint import download, terminal
from verl_lint.terminal import Progress, show_progress

WHEEL = "verl-0.9.1-py3-none-any.whl"


def on_terminal(*args: str, cwd: Path, columns: int = 200) -> tuple[int, str, str]:
    """Run the CLI with stderr on a pseudo-terminal `columns` wide and stdout on a pipe:
    (exit code, stdout, what the terminal received; "\\n" kept as is)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    attrs = termios.tcgetattr(slave)
    attrs[1] &= ~termios.OPOST  # no "\n" -> "\r\n": the "\r"s seen are the ones verl-lint wrote
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    got: list[bytes] = []

    def read() -> None:
        while True:
            try:
                data = os.read(master, 1 << 16)
            except OSError:  # EIO: every writer closed the terminal
                return
            if not data:
                return
            got.append(data)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "verl_lint.cli", *args],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=slave,
            text=True,
            timeout=300,
        )
    finally:
        os.close(slave)
        reader.join(timeout=30)
        os.close(master)
    return proc.returncode, proc.stdout, b"".join(got).decode()


def frames(line: str) -> list[str]:
    """The successive states of one terminal line drawn with "\\r", trailing blanks dropped."""
    assert line.startswith("\r"), repr(line)
    return [f.rstrip(" ") for f in line.split("\r")[1:]]


@pytest.mark.parametrize(
    "known", [True, pytest.param(False, marks=pytest.mark.slow)], ids=["size-known", "size-unknown"]
)
@pytest.mark.slow
def test_download_index_and_files_on_a_terminal(index, verl_wheel, tmp_path, known):
    """The wheel arrives in 10 pieces over ~0.5 s: the download line is redrawn as it comes and
    finished at the full size; then the cold index's line, finished; then the files line, erased
    before the report."""
    index.projects["verl"] = [(WHEEL, verl_wheel, None)]
    index.pace, index.lengths = 0.05, known
    (tmp_path / "run.sh").write_text(SCRIPT)
    code, out, err = on_terminal("check", "run.sh", "--verl", "0.9.1", "--format", "json", cwd=tmp_path)
    assert code == 1 and {d["code"] for d in json_findings(out)} == {"VL101"}, err  # the report alone on stdout
    loading, indexing, linting = err.split("\n")
    mb = f"{len(verl_wheel) / 1e6:.1f}"
    shown = frames(loading)
    pattern = rf"downloading verl 0\.9\.1: (\d+\.\d){'/' + re.escape(mb) if known else ''} MB(, \d+\.\d MB/s)?"
    assert all(re.fullmatch(pattern, f) for f in shown), shown
    amounts = [float(re.fullmatch(pattern, f).group(1)) for f in shown]
    # Redrawn as it comes (how often depends on the clock: test_redraws_are_throttled_by_the_clock)
    assert amounts == sorted(amounts) and len(shown) >= 2, shown
    assert re.fullmatch(rf"downloading verl 0\.9\.1: {mb}{'/' + mb if known else ''} MB, \d+\.\d MB/s", shown[-1]), (
        shown
    )
    release = (tmp_path / "cache" / "releases" / "verl-0.9.1").resolve()
    first, *_, done = frames(indexing)  # the files line came first; the index, built in the first file, drew over it
    assert first == "linting: 0/1 files"
    assert re.fullmatch(rf"indexing verl tree at {re.escape(str(release))}: (\d+)/\1 files", done), done
    assert frames(linting)[-2:] == ["", ""] and linting.endswith("\r")  # erased


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_redraws_are_throttled_by_the_clock(monkeypatch):
    """At most 10 redraws a second, not one per update (a download reads 64 KiB at a time), with
    the first and the last state always drawn: counted on a clock the test moves, so the answer
    does not depend on how fast the machine is."""
    now = [1000.0]
    monkeypatch.setattr(terminal, "time", SimpleNamespace(monotonic=lambda: now[0]))
    screen = _Terminal()
    monkeypatch.setattr(sys, "stderr", screen)
    show_progress(True)
    try:
        with Progress("reading", 40) as shown:
            for n in range(1, 41):  # 40 updates, 1/32 s apart (exact in binary): 1.25 s
                now[0] += 1 / 32
                shown.update(n)
    finally:
        show_progress(False)
    drawn = [f.rstrip(" ") for f in screen.getvalue().rstrip("\n").split("\r")[1:]]
    assert drawn[0] == "reading: 0/40 files" and drawn[-1] == "reading: 40/40 files"
    assert len(drawn) == 1 + 10 + 1, drawn  # the first state, one per 0.1 s (each 4th update), the last


@pytest.mark.slow
def test_notes_when_stderr_is_not_a_terminal(index, verl_wheel, tmp_path):
    """Not a terminal: one note when the download starts (its size from the index page when the
    server sends no Content-Length) and one when the index is built, though two entry points
    with their own config dirs use it; no "\\r"; a warm run says nothing; the SARIF report on
    stdout is untouched."""
    index.projects["verl"] = [(WHEEL, verl_wheel, None)]
    index.lengths, index.sizes = False, True
    (tmp_path / "run.sh").write_text(SCRIPT)
    shutil.copy(EXAMPLES / "good" / "fully_async_qwen2_7b.sh", tmp_path)  # verl/experimental/fully_async_policy/config
    first = _cli("check", ".", "--verl", "0.9.1", "--format", "sarif", cwd=tmp_path)
    release = (tmp_path / "cache" / "releases" / "verl-0.9.1").resolve()
    assert first.returncode == 1 and json.loads(first.stdout)["runs"][0]["results"]
    assert first.stderr.splitlines() == [
        downloading(index, verl_wheel),
        f"verl-lint: indexing verl tree at {release} (first run for this tree)",
    ]
    again = _cli("check", ".", "--verl", "0.9.1", "--format", "sarif", cwd=tmp_path)
    assert (again.returncode, again.stdout, again.stderr) == (1, first.stdout, "")


def test_download_of_unknown_size_notes_no_size(index, verl_wheel, tmp_path, capsys):
    """Neither a Content-Length nor a size on the index page: the note gives no size."""
    index.projects["verl"] = [(WHEEL, verl_wheel, None)]
    index.lengths = False
    show_progress(True)  # as the command line does
    try:
        got = download.wheel("verl", "0.9.1", tmp_path)
    finally:
        show_progress(False)
    assert got.read_bytes() == verl_wheel
    assert capsys.readouterr() == (
        "",
        f"verl-lint: downloading verl 0.9.1 from {index.url.removesuffix('/simple')}/files/{WHEEL}\n",
    )


@pytest.mark.slow
def test_quiet_shows_nothing_on_a_terminal(verl_trees, tmp_path, monkeypatch):
    """-q with an empty cache (the index is built cold) and stderr on a terminal: stderr gets nothing."""
    (tmp_path / "run.sh").write_text(SCRIPT)
    monkeypatch.setenv("VERL_LINT_CACHE_DIR", str(tmp_path / "cache"))
    code, out, err = on_terminal("check", "run.sh", "--verl-root", str(verl_trees["0.9.1"].root), "-q", cwd=tmp_path)
    assert (code, err) == (1, "") and "VL101" in out
    assert list((tmp_path / "cache" / "reader").glob("*.pickle"))  # it was built, silently


@pytest.mark.slow
def test_a_narrow_terminal_keeps_the_numbers(verl_trees, tmp_path, monkeypatch):
    """A line wider than the terminal would wrap, and "\\r" could not rewrite it: it is cut on
    the left, keeping the counts."""
    (tmp_path / "run.sh").write_text(SCRIPT)
    monkeypatch.setenv("VERL_LINT_CACHE_DIR", str(tmp_path / "cache"))
    code, _out, err = on_terminal(
        "check", "run.sh", "--verl-root", str(verl_trees["0.9.1"].root), cwd=tmp_path, columns=40
    )
    indexing = frames(err.split("\n")[0])
    assert code == 1 and all(len(f) <= 39 for f in frames(err.replace("\n", ""))), err
    assert re.fullmatch(r"\.\.\..*: (\d+)/\1 files", indexing[-1]), indexing


def test_jobs_show_files_done_on_a_terminal_only(tmp_path):
    """24 scripts on 2 worker processes: on a terminal `linting: done/24 files`, counting up and
    erased at the end; not on a terminal, nothing."""
    for i in range(24):
        (tmp_path / f"s{i:02}.sh").write_text(f"echo {i}\n")
    code, out, err = on_terminal("check", ".", "--jobs", "2", cwd=tmp_path)
    assert code == 0 and "24 scripts" in out and "\n" not in err, err
    shown = frames(err)
    counts = [int(m.group(1)) for f in shown if (m := re.fullmatch(r"linting: (\d+)/24 files", f))]
    assert shown[0] == "linting: 0/24 files" and counts == sorted(counts) and shown[-2:] == ["", ""], shown
    piped = _cli("check", ".", "--jobs", "2", cwd=tmp_path)
    assert (piped.returncode, piped.stdout, piped.stderr) == (0, out, "")
