"""Files verl-lint writes (--output, --write-baseline, --fix) are replaced whole or not at all."""

from __future__ import annotations

import os
import random
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import NEWEST
from test_cli import cli
from test_fix import OLD_STYLE

BAD = "#!/bin/bash\npython3 -m verl.trainer.main_ppo trainer.nnodez=1\n"


@pytest.fixture(scope="module")
def root(verl_trees) -> str:
    return str(verl_trees[NEWEST].root)


def one_error_line(r, *needles: str) -> None:
    """Exit 2, one `verl-lint: error:` line on stderr that mentions each of `needles`, no traceback."""
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr, r.stderr
    [line] = r.stderr.splitlines()
    assert line.startswith("verl-lint: error: ") and all(n in line for n in needles), line


@pytest.mark.slow
def test_output_writes_into_the_existing_file_through_a_symlink(tmp_path, root):
    s = tmp_path / "bad.sh"
    s.write_text(BAD)
    shared = tmp_path / "shared"
    shared.mkdir()
    real = shared / "report.json"
    real.write_text("old\n")
    real.chmod(0o640)
    if os.geteuid() == 0:
        os.chown(real, 1234, 5678)
    link = tmp_path / "report.json"
    link.symlink_to(real)
    r = cli("check", "--verl-root", root, "--format", "json", "--output", str(link), str(s))
    assert r.returncode == 1, r.stderr
    # The link is followed (as editors and `>` do) and stays a link.
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert '"code": "VL101"' in real.read_text()
    st = real.stat()
    assert stat.S_IMODE(st.st_mode) == 0o640
    if os.geteuid() == 0:
        assert (st.st_uid, st.st_gid) == (1234, 5678)
    assert sorted(p.name for p in shared.iterdir()) == ["report.json"]  # no temp file left


@pytest.mark.slow
def test_output_to_a_directory_or_a_missing_directory_is_one_line(tmp_path, root):
    s = tmp_path / "bad.sh"
    s.write_text(BAD)
    r = cli("check", "--verl-root", root, "--format", "json", "--output", str(tmp_path), str(s))
    one_error_line(r, f"cannot write {tmp_path}: it is a directory")
    r = cli("check", "--verl-root", root, "--format", "json", "--output", str(tmp_path / "nope" / "r.json"), str(s))
    one_error_line(r, "no such directory")
    assert not (tmp_path / "nope").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.sh"]
    # `run` refuses the same way and runs nothing.
    marker = tmp_path / "ran"
    r = cli("run", "--verl-root", root, "--output", str(tmp_path / "nope" / "r.json"), "--", "touch", str(marker))
    assert r.returncode == 2 and "cannot write" in r.stderr and "Traceback" not in r.stderr
    assert not marker.exists()


@pytest.mark.slow
def test_fifo_and_devices_are_refused_never_replaced(tmp_path, root):
    s = tmp_path / "bad.sh"
    s.write_text(BAD)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for flag in ("--output", "--write-baseline"):
        # A FIFO with no reader would block an open(); the timeout proves it is never opened.
        r = subprocess.run(
            [sys.executable, "-m", "verl_lint.cli", "check", "--verl-root", root, flag, str(fifo), str(s)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        one_error_line(r, "it is a FIFO")
        assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    r = subprocess.run(
        [sys.executable, "-m", "verl_lint.cli", "check", "--verl-root", root, "--baseline", str(fifo), str(s)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    one_error_line(r, f"cannot read baseline {fifo}: not a regular file (FIFO)")
    if os.geteuid() == 0:
        # First a private copy of /dev/null's device node, so a regression cannot take the real one.
        dev = tmp_path / "null"
        os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        r = cli("check", "--verl-root", root, "--output", str(dev), str(s))
        one_error_line(r, "it is a character device")
        assert stat.S_ISCHR(os.lstat(dev).st_mode)
    r = cli("check", "--verl-root", root, "--format", "sarif", "--output", "/dev/null", str(s))
    one_error_line(r, "cannot write /dev/null: it is a character device")
    assert stat.S_ISCHR(os.lstat("/dev/null").st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["bad.sh", "pipe"] + (["null"] if os.geteuid() == 0 else [])
    )


@pytest.mark.parametrize(
    "content, problem",
    [
        ("[1, 2]", "found a JSON array"),
        ("5", "found a JSON number"),
        ('{"version": 1}', "found an object without a `findings` list"),
        ('{"findings": {"a": 1}}', "found an object without a `findings` list"),
        ('{"findings": ["x"]}', "findings[0] is not an object"),
        (
            '{"findings": [{"path": "a.sh"}]}',
            "findings[0] is not an object with string fields path, code, key, fingerprint",
        ),
        ("{not json", "not JSON"),
    ],
)
@pytest.mark.slow
def test_baseline_of_the_wrong_shape_is_one_line(tmp_path, root, content, problem):
    s = tmp_path / "bad.sh"
    s.write_text(BAD)
    baseline = tmp_path / "baseline.json"
    baseline.write_text(content)
    r = cli("check", "--verl-root", root, "--baseline", str(baseline), str(s))
    one_error_line(r, f"cannot read baseline {baseline}: ", problem)


# Runs the real CLI; only the moment between analysis and write is hooked, and the edit made
# there is a real write to the file (as an editor saving it would be).
EDIT_DURING_FIX = """
import sys
import verl_lint.report.fix as fix

real = fix.write_atomic

def edited_meanwhile(path, *args, **kwargs):
    if str(path).endswith("edited.sh"):
        with open(path, "a") as f:
            f.write("# saved by an editor\\n")
    return real(path, *args, **kwargs)

fix.write_atomic = edited_meanwhile
from verl_lint.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow
def test_fix_refuses_a_file_changed_between_analysis_and_write(tmp_path, root):
    edited, other = tmp_path / "edited.sh", tmp_path / "other.sh"
    edited.write_text(OLD_STYLE)
    other.write_text(OLD_STYLE)
    r = subprocess.run(
        [sys.executable, "-c", EDIT_DURING_FIX, "check", "--verl-root", root, "--fix", str(edited), str(other)],
        capture_output=True,
        text=True,
        env=dict(os.environ, NO_COLOR="1"),
    )
    assert edited.read_text() == OLD_STYLE + "# saved by an editor\n"  # the editor's save is kept, unfixed
    assert "ray_kwargs.ray_init.num_cpus=32" in other.read_text()  # the rest is still fixed
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    [line] = [l for l in r.stderr.splitlines() if "edited.sh" in l]
    assert line == f"{edited}: error: not fixed: the file changed since it was read; left as it is"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["edited.sh", "other.sh"]


# ----------------------------------------------------------- kill -9 ----

HIDDEN_TEMP = "hidden temp file `.NAME.<random>.tmp`"  # what files.py documents a kill may leave


def _start(args: list[str], cwd: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "verl_lint.cli", *args],
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=dict(os.environ, NO_COLOR="1"),
    )


def _kill_once_writing(proc: subprocess.Popen, directory: Path, target: Path, extra: float) -> None:
    """SIGKILL `proc` `extra` seconds after the first sign of a write in `directory` (an entry or the target changes)."""

    def state():
        st = target.stat()
        return sorted(os.listdir(directory)), st.st_ino, st.st_size, st.st_mtime_ns

    before = state()
    while proc.poll() is None and state() == before:
        pass
    time.sleep(extra)
    proc.send_signal(signal.SIGKILL)


def _leftovers(directory: Path, names: set[str]) -> list[str]:
    """Entries that are neither a target nor a documented hidden temp file of one; asserts that."""
    temps = []
    for p in directory.iterdir():
        if p.name in names:
            continue
        assert any(p.name.startswith(f".{n}.") and p.name.endswith(".tmp") for n in names), (
            f"{p.name} is no {HIDDEN_TEMP}"
        )
        temps.append(p.name)
    return temps


@pytest.mark.slow
def test_sigkill_at_random_moments_leaves_old_or_new_content(tmp_path, root):
    """--fix and --output killed at 40 moments around their write: each target is whole, old or new."""
    work = tmp_path / "work"
    work.mkdir()
    script, report = work / "run.sh", work / "report.json"
    old_report = b'{"old": "report"}\n'
    modes = {
        "fix": (["check", "--verl-root", root, "--fix", "run.sh"], script, OLD_STYLE.encode()),
        "output": (
            ["check", "--verl-root", root, "--format", "json", "--output", "report.json", "run.sh"],
            report,
            old_report,
        ),
    }

    def reset() -> None:
        script.write_bytes(OLD_STYLE.encode())
        script.chmod(0o755)
        report.write_bytes(old_report)

    # The complete result of each mode, and how long a run takes.
    new, duration = {}, {}
    for name, (args, target, _) in modes.items():
        reset()
        start = time.monotonic()
        assert _start(args, work).wait() in (0, 1), args
        duration[name] = time.monotonic() - start
        new[name] = target.read_bytes()
    assert new["fix"] != OLD_STYLE.encode() and new["output"].startswith(b"[")

    rng = random.Random(18)
    # Counted in attempts, not against a wall clock: on a busy machine a run takes longer, and
    # the same number of attempts (each a kill at a moment within the run) is made.
    kills, attempts, outcomes = 0, 0, {"old": 0, "new": 0}
    while kills < 40 and attempts < 200:
        attempts += 1
        name = ("fix", "output")[kills % 2]
        args, target, old = modes[name]
        reset()
        proc = _start(args, work)
        # Half the kills at a random moment of the run, half within 3 ms of the first sign of
        # the write (a non-atomic writer is caught there with a truncated or partial file).
        if rng.random() < 0.5:
            time.sleep(rng.uniform(0, duration[name]))
            proc.send_signal(signal.SIGKILL)
        else:
            _kill_once_writing(proc, work, target, rng.uniform(0, 0.003))
        proc.wait()
        if proc.returncode != -signal.SIGKILL:
            continue  # finished before the kill: not a kill
        kills += 1
        content = target.read_bytes()
        assert content in (old, new[name]), f"{name}: a kill left the file neither old nor new: {content[:200]!r}"
        outcomes["old" if content == old else "new"] += 1
        if name == "fix":
            assert stat.S_IMODE(script.stat().st_mode) == 0o755
        _leftovers(work, {"run.sh", "report.json"})
    assert kills >= 20, f"only {kills} runs were killed before they finished"
    print(f"{kills} kills: {outcomes}")

    # A finished run leaves no temp file of its own.
    for name, (args, target, _) in modes.items():
        reset()
        before = set(_leftovers(work, {"run.sh", "report.json"}))
        proc = _start(args, work)
        proc.wait(timeout=120)
        assert target.read_bytes() == new[name]
        assert set(_leftovers(work, {"run.sh", "report.json"})) == before
