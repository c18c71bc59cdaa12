"""Which files `check DIR` lints: git's ignore rules, `exclude`, and paths the walker cannot read.

Every run is a real CLI subprocess with a time limit and an address-space limit, so a
regression that blocks on a FIFO or reads /dev/zero fails instead of hanging the suite.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import json_findings

# Each script carries an unused suppression, so each linted script shows up in the JSON report
# as one VL003 finding: the report's paths are the set of scripts that were linted.
SCRIPT = "echo hi  # verl-lint: disable=VL101\n"
MARK = ("--select", "VL003", "--fail-on", "never", "--no-cache", "--format", "json")


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))


def run_cli(
    *args: str, cwd: Path | None = None, prefix: tuple[str, ...] = (), timeout: float = 120
) -> subprocess.CompletedProcess:
    """`verl-lint ARGS` in a subprocess that cannot hang the suite or eat the machine's memory."""
    env = dict(os.environ, NO_COLOR="1")
    return subprocess.run(
        [*prefix, sys.executable, "-m", "verl_lint.cli", *args],
        capture_output=True, text=True, cwd=cwd, env=env, timeout=timeout, preexec_fn=_limit_memory,
    )  # fmt: skip


def linted(*args: str, cwd: Path, prefix: tuple[str, ...] = ()) -> tuple[set[str], subprocess.CompletedProcess]:
    """The scripts `check ARGS` lints, relative to cwd, and the process."""
    r = run_cli("check", *MARK, *args, cwd=cwd, prefix=prefix)
    assert "Traceback" not in r.stderr, r.stderr
    return {os.path.normpath(d["path"]) for d in json_findings(r.stdout)}, r


def git(repo: Path, *args: str) -> str:
    env = dict(os.environ, HOME=str(repo.parent), GIT_CONFIG_NOSYSTEM="1", XDG_CONFIG_HOME=str(repo.parent))
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, env=env).stdout


def git_scripts(repo: Path, *where: str) -> set[str]:
    out = git(repo, "ls-files", "--cached", "--others", "--exclude-standard", "--", *(where or ("*.sh",)))
    return {line for line in out.splitlines() if line.endswith(".sh")}


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


# ------------------------------------------------------------------ git's ignore rules ----

IGNORES = {
    # anchored (only at the top), negation, a dir-only pattern, `**`, a glob whose `*` must not cross `/`
    ".gitignore": "/*.sh\n!/keep.sh\nbuild/\n**/gen/*.sh\nout.sh/\nlogs/*.sh\n# a comment\n\n",
    # nested: patterns relative to sub/, overriding the top's for files below sub/
    "sub/.gitignore": "x.sh\n/local.sh\n*.tmp.sh\n",
    "sub/deep/.gitignore": "!*.tmp.sh\n",
}
SCRIPTS = [
    "top.sh",
    "keep.sh",  # /*.sh ignores top.sh only at the top; !/keep.sh takes keep.sh back
    "a/top.sh",
    "a/b/c.sh",  # /*.sh is anchored: not these
    "build/x.sh",
    "a/build/y.sh",  # build/ at any depth
    "gen/g.sh",
    "a/b/gen/g.sh",
    "a/b/gen/more/g.sh",  # **/gen/*.sh: the first two only
    "b/out.sh",
    "a/out.sh/z.sh",  # out.sh/ matches the directory, not the file
    "logs/l.sh",
    "logs/old/l.sh",  # logs/*.sh: `*` does not cross `/`
    "sub/x.sh",
    "sub/run.sh",
    "sub/local.sh",
    "sub/other/local.sh",
    "sub/a.tmp.sh",  # sub/.gitignore
    "sub/deep/d.tmp.sh",
    "sub/deep/er/e.tmp.sh",  # sub/deep/.gitignore re-includes
    "secret_key.sh",
    "a/secret_b.sh",  # .git/info/exclude
]


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    write(root, IGNORES)
    write(root, {s: SCRIPT for s in SCRIPTS})
    (root / ".git" / "info").mkdir(exist_ok=True)
    (root / ".git" / "info" / "exclude").write_text("secret_*.sh\n")
    return root


def test_ignore_files_are_read_as_git_reads_them(repo):
    expected = git_scripts(repo)
    # The fixture exercises every rule: git keeps some scripts and drops others.
    kept = {
        "keep.sh",
        "a/top.sh",
        "b/out.sh",
        "a/b/gen/more/g.sh",
        "logs/old/l.sh",
        "sub/other/local.sh",
        "sub/deep/er/e.tmp.sh",
    }
    assert kept <= expected
    dropped = {
        "top.sh",
        "build/x.sh",
        "a/b/gen/g.sh",
        "a/out.sh/z.sh",
        "logs/l.sh",
        "sub/local.sh",
        "sub/a.tmp.sh",
        "a/secret_b.sh",
    }
    assert not dropped & expected
    got, r = linted(".", cwd=repo)
    assert got == expected, r.stderr
    # From a subdirectory, the top's and sub/'s rules still apply, relative to their own directories.
    got, r = linted("sub", cwd=repo)
    assert got == git_scripts(repo, "sub/*.sh"), r.stderr
    got, r = linted(".", cwd=repo / "sub")
    assert got == {s.removeprefix("sub/") for s in git_scripts(repo, "sub/*.sh")}, r.stderr


@pytest.mark.slow
@pytest.mark.parametrize("index_version", ["2", "3", "4"])
def test_tracked_files_are_never_ignored(repo, index_version):
    """`git add -f` tracks a file despite the ignore files; git lists it, read from git's index."""
    git(repo, "add", "-f", "top.sh", "build/x.sh", "sub/deep/d.tmp.sh")
    if index_version != "2":  # intent to add: the first entry gets the extended flags of v3+
        git(repo, "add", "-N", "a/b/c.sh")
    git(repo, "update-index", "--index-version", index_version)
    assert (repo / ".git" / "index").read_bytes()[4:8] == int(index_version).to_bytes(4, "big")
    expected = git_scripts(repo)
    assert {"top.sh", "build/x.sh"} <= expected and "build" not in {s.split("/")[0] for s in expected - {"build/x.sh"}}
    got, r = linted(".", cwd=repo)
    assert got == expected, r.stderr
    got, r = linted("build", cwd=repo)
    assert got == {"build/x.sh"}, r.stderr


def test_no_ignore_lints_everything(repo):
    got, r = linted("--no-ignore", ".", cwd=repo)
    assert got == set(SCRIPTS), r.stderr


def test_an_explicit_path_is_linted_even_if_ignored(repo):
    got, _ = linted("top.sh", "build/x.sh", cwd=repo)
    assert got == {"top.sh", "build/x.sh"}


def test_an_ignored_directory_given_explicitly_says_so(repo):
    r = run_cli("check", *MARK, "build", cwd=repo)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "build: error: this directory is ignored by git's ignore files (--no-ignore lints it)" in r.stderr
    got, _ = linted("--no-ignore", "build", cwd=repo)
    assert got == {"build/x.sh"}


def test_a_whitelisting_gitignore(tmp_path):
    """`/*` then `!/*/`: ignore the top's files, keep every directory (Reasoning360's layout).
    fnmatch's `*` crossed `/`, so every script was ignored."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    write(root, {".gitignore": "/*\n!/*/\n!/README*\n**/outputs\n", "README.md": "x\n"})
    write(root, {s: SCRIPT for s in ("run.sh", "scripts/train.sh", "scripts/deep/a.sh", "scripts/outputs/b.sh")})
    expected = git_scripts(root)
    assert expected == {"scripts/train.sh", "scripts/deep/a.sh"}
    got, r = linted(".", cwd=root)
    assert got == expected, r.stderr


def test_a_worktree_reads_the_common_info_exclude(repo):
    """In a `git worktree` checkout `.git` is a file; info/exclude lives in the main repository."""
    git(repo, "add", ".gitignore", "sub/.gitignore", "sub/deep/.gitignore")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "ignores")
    wt = repo.parent / "wt"
    git(repo, "worktree", "add", "-q", str(wt))
    write(wt, {s: SCRIPT for s in SCRIPTS})
    expected = git_scripts(wt)
    assert "keep.sh" in expected and "secret_key.sh" not in expected
    got, r = linted(".", cwd=wt)
    assert got == expected, r.stderr


def test_exclude_setting_uses_gitignore_patterns(tmp_path):
    """`exclude` patterns are relative to the settings file; `*` does not cross `/`."""
    write(
        tmp_path,
        {s: SCRIPT for s in ("third_party/t.sh", "a/third_party/t.sh", "legacy/x.sh", "legacy/keep/y.sh", "main.sh")},
    )
    (tmp_path / "pyproject.toml").write_text('[tool.verl-lint]\nexclude = ["third_party/", "legacy/*.sh"]\n')
    got, r = linted(".", cwd=tmp_path)
    assert got == {"main.sh", "legacy/keep/y.sh"}, r.stderr


# ------------------------------------------------------------------ bad paths ----


def test_bad_paths_each_get_one_line_and_the_rest_is_linted(tmp_path):
    write(tmp_path, {"ok.sh": SCRIPT, "notes.txt": "just text\n", "job.slurm": "#!/bin/bash\n" + SCRIPT})
    os.symlink("loop", tmp_path / "loop")
    os.symlink("missing.sh", tmp_path / "dangling.sh")
    got, r = linted("ok.sh", "loop", "dangling.sh", "notes.txt", "job.slurm", "nope.sh", cwd=tmp_path)
    assert got == {"ok.sh", "job.slurm"}
    assert r.returncode == 2
    errors = [line for line in r.stderr.splitlines() if ": error: " in line]
    assert errors == [
        "loop: error: symlink loop",
        "dangling.sh: error: broken symlink (its target missing.sh does not exist)",
        "notes.txt: error: not a shell script (a .txt file without an sh shebang)",
        "nope.sh: error: no such file or directory",
    ]


def test_broken_symlinks_in_a_tree_are_noted_not_errors(tmp_path):
    write(tmp_path, {"t/ok.sh": SCRIPT})
    os.symlink("missing.sh", tmp_path / "t" / "dangling.sh")
    os.symlink("self", tmp_path / "t" / "self")  # a loop, extension-less: could have been a script
    os.symlink("gone", tmp_path / "t" / "gone.py")  # not a script by name: not worth a line
    got, r = linted("t", cwd=tmp_path)
    assert got == {"t/ok.sh"} and r.returncode == 0
    assert r.stderr.splitlines() == [
        "t/dangling.sh: skipped: broken symlink (its target missing.sh does not exist)",
        "t/self: skipped: symlink loop",
    ]


def _without_dac_override() -> tuple[str, ...]:
    """A command prefix under which even root gets EACCES from a mode-000 directory."""
    if os.geteuid() != 0:
        return ()
    if not shutil.which("setpriv"):
        pytest.skip("running as root without setpriv: cannot make a directory unreadable")
    # Root reads a mode-000 directory through these two capabilities; drop them for the run.
    return ("setpriv", "--bounding-set=-dac_override,-dac_read_search", "--")


def test_unreadable_directory_is_one_line_and_the_rest_is_linted(tmp_path):
    write(tmp_path, {"t/ok.sh": SCRIPT, "t/locked/a.sh": SCRIPT, "locked2/b.sh": SCRIPT})
    for d in ("t/locked", "locked2"):
        (tmp_path / d).chmod(0)
    try:
        prefix = _without_dac_override()
        got, r = linted("t", "locked2", "locked2/b.sh", cwd=tmp_path, prefix=prefix)
    finally:
        for d in ("t/locked", "locked2"):
            (tmp_path / d).chmod(0o755)
    assert got == {"t/ok.sh"} and r.returncode == 2
    assert [line for line in r.stderr.splitlines() if ": error: " in line] == [
        "t/locked: error: cannot read directory: Permission denied",
        "locked2: error: cannot read directory: Permission denied",
        "locked2/b.sh: error: cannot read: Permission denied",
    ]
