"""Downloads without pip: the package index's JSON API, sha256-checked, atomic, and safe to race.

Most tests run a real HTTP index on localhost (`index` fixture) that serves a real verl release
(0.9.1 from the cache, packed back into a wheel), so every failure mode is reproducible without
the network; the `network` tests download from PyPI itself.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import threading
import time
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from verl_lint import cache
from verl_lint.download import DownloadError
from verl_lint.engines.wheels import fetch_wheel
from verl_lint.launch.locate import LocateError, release_tree

HINT = "; pass --verl-root DIR with a verl checkout instead"
SCRIPT = "python3 -m verl.trainer.main_ppo trainer.nnodez=4 trainer.nnodes=2 actor_rollout_ref.rollout.name=vllm\n"


def _wheel_bytes(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
        for name, data in sorted(files.items()):
            zf.writestr(name, data)
    return buf.getvalue()


@pytest.fixture(scope="session")
def verl_wheel(verl_trees) -> bytes:
    """verl 0.9.1 (the cached release) packed back into a wheel."""
    root = verl_trees["0.9.1"].root
    files = {}
    for top in ("verl", "verl-0.9.1.dist-info"):
        for p in sorted((root / top).rglob("*")):
            if p.is_file() and "__pycache__" not in p.parts:
                files[p.relative_to(root).as_posix()] = p.read_bytes()
    return _wheel_bytes(files)


class Index:
    """A PEP 691 index on localhost: `projects[name]` is a list of (filename, bytes, sha256 to
    advertise or None for the real one); `barrier` holds file downloads until that many are in
    flight. `sizes`: the pages give each file's size (PEP 700); `lengths`: the files are sent with
    a Content-Length (else the closed connection ends them); `pace`: seconds between the 10
    pieces a file is sent in."""

    def __init__(self):
        self.projects: dict[str, list[tuple[str, bytes, str | None]]] = {}
        self.barrier: threading.Barrier | None = None
        self.requests: list[str] = []
        self.sizes, self.lengths, self.pace = False, True, 0.0
        index = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                index.requests.append(self.path)
                parts = self.path.strip("/").split("/")
                if parts[0] == "simple" and len(parts) == 2 and parts[1] in index.projects:
                    files = [
                        {"filename": n, "url": f"/files/{n}", "hashes": {"sha256": h or hashlib.sha256(b).hexdigest()}}
                        | ({"size": len(b)} if index.sizes else {})
                        for n, b, h in index.projects[parts[1]]
                    ]
                    return self._send(json.dumps({"meta": {"api-version": "1.1"}, "name": parts[1], "files": files}).encode(),
                                      "application/vnd.pypi.simple.v1+json")  # fmt: skip
                if parts[0] == "files" and len(parts) == 2:
                    for n, b, _h in (f for fs in index.projects.values() for f in fs):
                        if n == parts[1]:
                            if index.barrier is not None:
                                index.barrier.wait()
                            return self._send(b, "application/octet-stream", index.lengths, index.pace)
                self.send_error(404)

            def _send(self, body: bytes, ctype: str, length: bool = True, pace: float = 0.0):
                self.send_response(200)
                self.send_header("Content-Type", ctype)
                if length:
                    self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                step = -(-len(body) // 10) if pace else len(body) or 1
                for start in range(0, len(body), step):
                    if start:
                        time.sleep(pace)
                    self.wfile.write(body[start : start + step])
                    self.wfile.flush()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/simple"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def index(monkeypatch, tmp_path):
    """A local index, used by this process and by the CLI processes the tests start; an empty cache."""
    idx = Index()
    monkeypatch.setenv("VERL_LINT_INDEX_URL", idx.url)
    monkeypatch.setenv("VERL_LINT_CACHE_DIR", str(tmp_path / "cache"))
    yield idx
    idx.server.shutdown()
    idx.server.server_close()


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "verl_lint.cli", *args], capture_output=True, text=True, cwd=cwd)


def downloading(index: Index, wheel: bytes, name: str = "verl-0.9.1-py3-none-any.whl") -> str:
    """The note a download from `index` starts with when stderr is not a terminal."""
    return f"verl-lint: downloading verl 0.9.1 ({len(wheel) / 1e6:.1f} MB) from {index.url.removesuffix('/simple')}/files/{name}"


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("tmp") or p.name.endswith(".tmp"))


@pytest.mark.slow
def test_release_from_the_index_runs_nothing_from_the_current_directory(index, verl_wheel, verl_trees, tmp_path):
    """`check --verl 0.9.1` run from inside a hostile repository whose `pip/__main__.py` would run
    under `python -m pip`: the release is downloaded without it, checked and unpacked; the
    findings equal those against the same release given with --verl-root."""
    index.projects["verl"] = [("verl-0.9.1-py3-none-any.whl", verl_wheel, None), ("verl-0.9.1.tar.gz", b"sdist", None)]
    repo = tmp_path / "repo"
    (repo / "pip").mkdir(parents=True)
    ran = tmp_path / "pip-ran"
    (repo / "pip" / "__main__.py").write_text(f"open({str(ran)!r}, 'w').write('ran')\n")
    (repo / "pip" / "__init__.py").write_text("")
    (repo / "run.sh").write_text(SCRIPT)

    got = _cli("check", "run.sh", "--verl", "0.9.1", cwd=repo)
    want = _cli("check", "run.sh", "--verl-root", str(verl_trees["0.9.1"].root), cwd=repo)
    assert not ran.exists()
    releases = Path(os.environ["VERL_LINT_CACHE_DIR"]) / "releases"
    assert (got.returncode, got.stdout, got.stderr.splitlines()) == (1, want.stdout, [
        downloading(index, verl_wheel), f"verl-lint: indexing verl tree at {(releases / 'verl-0.9.1').resolve()} (first run for this tree)",
    ])  # fmt: skip
    assert "VL101" in got.stdout
    assert cache.is_marked(releases / "verl-0.9.1") and (releases / "verl-0.9.1" / "verl" / "trainer").is_dir()
    assert _leftovers(releases) == [] and not list(releases.rglob("*.whl"))
    assert index.requests == ["/simple/verl/", "/files/verl-0.9.1-py3-none-any.whl"]
    assert _cli("check", "run.sh", "--verl", "0.9.1", cwd=repo).stdout == want.stdout  # cached: no new request
    assert len(index.requests) == 2


@pytest.mark.slow
def test_two_first_runs_at_once_both_succeed_with_one_release(index, verl_wheel, tmp_path):
    """Two processes download the same release into an empty cache at the same time (the index
    holds both downloads until both are in flight): both lint, one intact release remains."""
    index.projects["verl"] = [("verl-0.9.1-py3-none-any.whl", verl_wheel, None)]
    index.barrier = threading.Barrier(2, timeout=300)  # only a guard against a hang: as long as the processes get
    (tmp_path / "run.sh").write_text(SCRIPT)
    cmd = [sys.executable, "-m", "verl_lint.cli", "check", "run.sh", "--verl", "0.9.1"]
    procs = [
        subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)
    ]
    outs = [p.communicate(timeout=300) + (p.returncode,) for p in procs]
    assert index.requests.count("/files/verl-0.9.1-py3-none-any.whl") == 2  # both really downloaded
    assert outs[0][::2] == outs[1][::2] and outs[0][2] == 1, outs
    assert all(err.startswith(downloading(index, verl_wheel) + "\n") for _out, err, _rc in outs)
    releases = Path(os.environ["VERL_LINT_CACHE_DIR"]) / "releases"
    assert sorted(p.name for p in releases.iterdir()) == ["CACHEDIR.TAG", "verl-0.9.1"]
    unpacked = sorted(
        p.relative_to(releases / "verl-0.9.1").as_posix() for p in (releases / "verl-0.9.1").rglob("*") if p.is_file()
    )
    with zipfile.ZipFile(io.BytesIO(verl_wheel)) as zf:
        assert unpacked == sorted([*zf.namelist(), "CACHEDIR.TAG"])


TAMPERED = "tampered"


@pytest.mark.parametrize(
    "files, version, message",
    [
        (TAMPERED, "0.9.1", "verl-0.9.1-py3-none-any.whl does not match the sha256 the package index gives ({files}/verl-0.9.1-py3-none-any.whl); not used"),
        ([], "0.9.1", "verl 0.9.1 has no wheel on the package index {url}"),
        ([("verl-0.9.1.tar.gz", b"sdist", None)], "0.9.1", "verl 0.9.1 has no wheel on the package index {url}"),
        ([("verl-0.9.1-py3-none-any.whl", b"x", None)], "0.9.2", "verl 0.9.2 has no wheel on the package index {url} (newest: 0.9.1)"),
        (None, "0.9.1", "verl is not on the package index {url}"),
    ],
)  # fmt: skip
def test_index_failures_are_one_line_and_leave_nothing(index, verl_wheel, tmp_path, files, version, message):
    if files == TAMPERED:  # the index advertises the real wheel's sha256 but serves other bytes
        files = [("verl-0.9.1-py3-none-any.whl", b"PK tampered", hashlib.sha256(verl_wheel).hexdigest())]
    if files is not None:
        index.projects["verl"] = files
    message = message.format(url=index.url, files=index.url.removesuffix("/simple") + "/files")
    (tmp_path / "run.sh").write_text(SCRIPT)
    proc = _cli("check", "run.sh", "--verl", version, cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    tampered = files and files[0][2]  # the one wheel that is downloaded (before its hash is checked)
    started = (
        [f"verl-lint: downloading verl 0.9.1 (0.0 MB) from {index.url.removesuffix('/simple')}/files/{files[0][0]}"]
        if tampered
        else []
    )
    assert proc.stderr.splitlines() == started + [f"verl-lint: error: {message}{HINT}"]
    releases = Path(os.environ["VERL_LINT_CACHE_DIR"]) / "releases"
    assert sorted(p.name for p in releases.iterdir()) == ["CACHEDIR.TAG"]


def test_unreachable_and_non_json_indexes(index, tmp_path, monkeypatch):
    (tmp_path / "run.sh").write_text(SCRIPT)
    index.server.shutdown()
    index.server.server_close()  # nothing listens on that port any more
    proc = _cli("check", "run.sh", "--verl", "0.9.1", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"verl-lint: error: cannot reach {index.url}/verl/ (") and proc.stderr.endswith(
        f"{HINT}\n"
    )
    assert proc.stderr.count("\n") == 1

    html = tmp_path / "html"
    (html / "verl").mkdir(parents=True)
    (html / "verl" / "index.html").write_text("<html><a href='verl-0.9.1-py3-none-any.whl'>x</a></html>")
    server = subprocess.Popen([sys.executable, "-m", "http.server", "0", "--bind", "127.0.0.1", "-d", str(html)],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)  # fmt: skip
    try:
        port = server.stdout.readline().split("port ")[1].split()[0]
        monkeypatch.setenv("VERL_LINT_INDEX_URL", f"http://127.0.0.1:{port}/")
        with pytest.raises(LocateError) as ex:
            release_tree("0.9.1")
        assert str(ex.value) == (
            f"http://127.0.0.1:{port}/verl/ is not a JSON simple API page (PEP 691); set VERL_LINT_INDEX_URL to an index"
            f" that serves one{HINT}"
        )
    finally:
        server.terminate()
        server.wait()
    monkeypatch.setenv("VERL_LINT_INDEX_URL", "file:///etc")
    with pytest.raises(LocateError, match="VERL_LINT_INDEX_URL='file:///etc' is not an http"):
        release_tree("0.9.1")


def test_engine_wheels_choice_and_crafted_names(index, tmp_path):
    """fetch_wheel: the pure-Python wheel when there is one, else the one for this interpreter
    (else any: only sources are read); names from the index that are not this project's wheel,
    or that would leave the folder, are never used; dist and version are validated first."""
    pure = _wheel_bytes({"eng/__init__.py": b"pure = 1\n"})
    native = _wheel_bytes({"eng/__init__.py": b"native = 1\n"})
    index.projects["eng"] = [
        ("eng-1.0-cp38-abi3-manylinux_2_28_x86_64.whl", native, None),
        ("eng-1.0-py3-none-any.whl", pure, None),
        ("other-1.0-py3-none-any.whl", b"x", None),
    ]
    w = fetch_wheel("eng", "1.0")
    assert w == cache.cache_dir() / "wheels" / "eng-1.0-py3-none-any.whl" and w.read_bytes() == pure
    assert cache.is_marked(w.parent) and _leftovers(w.parent) == []
    assert fetch_wheel("eng", "1.0") == w  # already there: no new request
    assert index.requests.count("/simple/eng/") == 1

    from packaging.tags import sys_tags

    mine = next(iter(sys_tags()))
    index.projects["eng"] = [
        ("eng-2.0-cp27-cp27m-win32.whl", pure, None),
        (f"eng-2.0-{mine.interpreter}-{mine.abi}-{mine.platform}.whl", native, None),
    ]
    assert fetch_wheel("eng", "2.0").read_bytes() == native
    index.projects["eng"] = [("eng-3.0-cp27-cp27m-win32.whl", pure, None)]
    assert fetch_wheel("eng", "3.0").name == "eng-3.0-cp27-cp27m-win32.whl"

    index.projects["eng"] = [
        ("../eng-4.0-py3-none-any.whl", pure, None),
        ("eng-4.0-py3-none-any.whl/../../x.whl", pure, None),
    ]
    with pytest.raises(DownloadError, match="eng 4.0 has no wheel"):
        fetch_wheel("eng", "4.0")
    for dist, version, msg in (("../eng", "1.0", "'../eng' is not a package name"),
                               ("eng", "../../x", "'../../x' is not a version"), ("eng", "1.0/../..", "is not a version")):  # fmt: skip
        with pytest.raises(DownloadError, match=msg.replace(".", r"\.")):
            fetch_wheel(dist, version)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache"]  # nothing written beside the cache
    assert {p.name for p in (cache.cache_dir() / "wheels").iterdir()} == {
        "CACHEDIR.TAG", "eng-1.0-py3-none-any.whl", f"eng-2.0-{mine.interpreter}-{mine.abi}-{mine.platform}.whl",
        "eng-3.0-cp27-cp27m-win32.whl",
    }  # fmt: skip


def test_a_damaged_release_is_replaced_and_a_foreign_directory_refused(index, verl_wheel):
    index.projects["verl"] = [("verl-0.9.1-py3-none-any.whl", verl_wheel, None)]
    tree = release_tree("0.9.1")
    assert tree.version == "0.9.1" and tree.root.name == "verl-0.9.1"
    import shutil

    shutil.rmtree(tree.root / "verl" / "trainer")  # damaged, but verl-lint's (tagged)
    assert (release_tree("0.9.1").root / "verl" / "trainer").is_dir()
    shutil.rmtree(tree.root)
    (tree.root / "verl").mkdir(parents=True)  # somebody else's directory by that name
    (tree.root / "verl" / "notes").write_text("mine\n")
    with pytest.raises(
        LocateError, match=f"{tree.root} exists and is not a verl release verl-lint downloaded; remove it"
    ):
        release_tree("0.9.1")
    assert (tree.root / "verl" / "notes").read_text() == "mine\n"
    assert _leftovers(tree.root.parent) == []


# ------------------------------------------------------ the real index ----


@pytest.mark.network
def test_pypi_release_matches_the_cached_one(tmp_path, monkeypatch, verl_trees):
    """verl 0.7.1 from PyPI itself (the JSON API, sha256-checked) unpacks to the same files as the
    release the other tests use."""
    monkeypatch.delenv("VERL_LINT_INDEX_URL", raising=False)
    monkeypatch.setenv("VERL_LINT_CACHE_DIR", str(tmp_path / "cache"))
    try:
        tree = release_tree("0.7.1")
    except LocateError as ex:  # pragma: no cover - no network here
        pytest.skip(str(ex))
    assert tree.version == "0.7.1" and cache.is_marked(tree.root)

    def files(root: Path) -> dict[str, int]:
        return {
            p.relative_to(root).as_posix(): p.stat().st_size
            for p in (root / "verl").rglob("*")
            if p.is_file() and "__pycache__" not in p.parts
        }

    assert files(tree.root) == files(verl_trees["0.7.1"].root)


@pytest.mark.network
def test_pypi_two_first_runs_at_once(tmp_path):
    """Three processes fetch verl 0.7.1 from PyPI into one empty cache at once: all succeed, one release."""
    (tmp_path / "run.sh").write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if k != "VERL_LINT_INDEX_URL"} | {
        "VERL_LINT_CACHE_DIR": str(tmp_path / "cache")
    }
    cmd = [sys.executable, "-m", "verl_lint.cli", "check", "run.sh", "--verl", "0.7.1"]
    procs = [
        subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    outs = [p.communicate(timeout=600) + (p.returncode,) for p in procs]
    if all("cannot reach" in err for _out, err, _rc in outs):  # pragma: no cover - no network here
        pytest.skip(outs[0][1])
    assert outs[0][::2] == outs[1][::2] == outs[2][::2] and outs[0][2] == 1, outs
    assert all(err.startswith("verl-lint: downloading verl 0.7.1 (") for _out, err, _rc in outs), outs
    releases = tmp_path / "cache" / "releases"
    assert sorted(p.name for p in releases.iterdir()) == ["CACHEDIR.TAG", "verl-0.7.1"]
