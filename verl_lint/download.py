"""Wheels from the package index, without pip: no process is started and nothing is read from
the current directory (a `pip/` package in a scanned repository is never what runs).

The index's JSON simple API (PEP 691) lists a project's files with their sha256. The wheel of
the exact version asked for is downloaded with urllib to a temp file next to its destination,
checked against that hash and renamed into place. `VERL_LINT_INDEX_URL` names another index
(default https://pypi.org/simple); it must serve the JSON API, as PyPI does.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from urllib.parse import urljoin

from packaging.version import InvalidVersion, Version

from .files import WriteError, replacing
from .terminal import Progress

INDEX_ENV = "VERL_LINT_INDEX_URL"
DEFAULT_INDEX = "https://pypi.org/simple"
_JSON = "application/vnd.pypi.simple.v1+json"
_TIMEOUT = 60  # seconds without an answer before giving up
_NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$")  # a project name (PEP 508)


class DownloadError(RuntimeError):
    """A wheel cannot be downloaded; a clear one-line message."""


def exact_version(text: str) -> str:
    """`text` as a normalized version ('0.9.1'), safe to put in a file name; else DownloadError."""
    try:
        return str(Version(text))
    except (InvalidVersion, TypeError):
        raise DownloadError(f"{text!r} is not a version (e.g. 0.9.1)") from None


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def index_url() -> str:
    return (os.environ.get(INDEX_ENV) or DEFAULT_INDEX).rstrip("/")


def _get(url: str, accept: str | None = None, missing: str | None = None):
    """An open urllib response; network and HTTP failures become DownloadError (`missing` is the
    message for HTTP 404)."""
    import urllib.error  # the network stack (~30 ms, ssl, email) only when something is downloaded
    import urllib.request  # with urllib.error above: only when something is downloaded

    req = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    try:
        return urllib.request.urlopen(req, timeout=_TIMEOUT)  # noqa: S310 - http(s) only, checked by the callers
    except urllib.error.HTTPError as ex:
        raise DownloadError(
            missing if missing and ex.code == 404 else f"{url} answered HTTP {ex.code} {ex.reason}"
        ) from None
    except (urllib.error.URLError, OSError, ValueError) as ex:
        raise DownloadError(f"cannot reach {url} ({getattr(ex, 'reason', None) or ex})") from None


def _files(dist: str) -> tuple[str, list[dict]]:
    """(page URL, file entries) of `dist` on the index."""
    import http.client  # with the network stack, only when downloading (see _get)

    page = f"{index_url()}/{_canonical(dist)}/"
    if not page.startswith(("https://", "http://")):
        raise DownloadError(f"{INDEX_ENV}={index_url()!r} is not an http(s) URL")
    try:
        with _get(page, _JSON, missing=f"{dist} is not on the package index {index_url()}") as r:
            body = r.read()
    except (OSError, http.client.HTTPException) as ex:
        raise DownloadError(f"cannot read {page} ({ex})") from None
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, list):
        raise DownloadError(
            f"{page} is not a JSON simple API page (PEP 691); set {INDEX_ENV} to an index that serves one"
        )
    return page, [f for f in files if isinstance(f, dict)]


def _pick(dist: str, version: str, files: list[dict]) -> dict:
    """The wheel entry of dist==version: a pure-Python one, else one for this interpreter, else
    any (only its Python sources are read, which are the same in every platform's wheel)."""
    from packaging.tags import sys_tags  # ~13 ms and subprocess: only to choose among platform wheels
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename  # imports packaging.tags

    want = Version(version)
    wheels: list[tuple[dict, frozenset]] = []
    seen: set[Version] = set()
    for f in files:
        name = f.get("filename")
        if not isinstance(name, str) or not name.endswith(".whl") or "/" in name or "\\" in name:
            continue
        try:
            project, ver, _build, tags = parse_wheel_filename(name)
        except (InvalidWheelFilename, InvalidVersion):
            continue
        if project != _canonical(dist):
            continue
        seen.add(ver)
        if ver == want and isinstance(f.get("url"), str):
            wheels.append((f, tags))
    if not wheels:
        newest = f" (newest: {max(seen)})" if seen else ""
        raise DownloadError(f"{dist} {version} has no wheel on the package index {index_url()}{newest}")
    for f, tags in wheels:
        if any(t.abi == "none" and t.platform == "any" for t in tags):
            return f
    rank = {t: i for i, t in enumerate(sys_tags())}
    best = min(wheels, key=lambda w: (min(rank.get(t, len(rank)) for t in w[1]), w[0]["filename"]))
    return best[0]


def _size(value: object) -> int | None:
    """A byte count from a Content-Length header or the index's `size` (PEP 700), if it is one."""
    try:
        n = int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return None
    return n if n > 0 else None


def wheel(dist: str, version: str, into: Path) -> Path:
    """The wheel of `dist==version` (no dependencies) in the directory `into`: the one already
    there, else downloaded, its sha256 checked against the index. Raises DownloadError."""
    import http.client  # with the network stack, only when downloading (see _get)

    if not _NAME.match(dist):
        raise DownloadError(f"{dist!r} is not a package name")
    version = exact_version(version)
    into = Path(into)
    for w in sorted(into.glob(f"{_canonical(dist).replace('-', '_')}-{version}-*.whl")):
        return w
    page, files = _files(dist)
    chosen = _pick(dist, version, files)
    name = chosen["filename"]
    expected = (chosen.get("hashes") or {}).get("sha256") if isinstance(chosen.get("hashes"), dict) else None
    if not isinstance(expected, str):
        raise DownloadError(f"the package index gives no sha256 for {name}; not downloaded")
    url = urljoin(page, chosen["url"])
    if not url.startswith(("https://", "http://")):
        raise DownloadError(f"the package index links {name} to {url!r}, not an http(s) URL")
    target = into / name
    try:
        with replacing(target, durable=False) as out, _get(url) as r:  # re-downloaded if lost: no fsync
            digest = hashlib.sha256()
            total = _size(r.headers.get("Content-Length")) or _size(chosen.get("size"))
            what = f"downloading {dist} {version}"
            with Progress(
                what, total, "bytes", note=f"{what}{f' ({total / 1e6:.1f} MB)' if total else ''} from {url}"
            ) as shown:
                while chunk := r.read(1 << 16):  # 64 KiB: a progress line that moves on slow links
                    digest.update(chunk)
                    out.write(chunk)
                    shown.update(shown.done + len(chunk))
            if digest.hexdigest() != expected.lower():
                raise DownloadError(f"{name} does not match the sha256 the package index gives ({url}); not used")
        return target
    except WriteError as ex:
        raise DownloadError(f"cannot write into {into} ({ex.reason})") from None
    except (OSError, http.client.HTTPException) as ex:
        raise DownloadError(f"cannot download {url} ({getattr(ex, 'strerror', None) or ex})") from None


def releases(dist: str) -> list[Version]:
    """The final releases of `dist` that have a wheel on the index, oldest first."""
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename  # as in _pick

    _page, files = _files(dist)
    out: set[Version] = set()
    for f in files:
        name = f.get("filename")
        if isinstance(name, str) and name.endswith(".whl"):
            try:
                v = parse_wheel_filename(name)[1]
            except (InvalidWheelFilename, InvalidVersion):
                continue
            if not (v.is_prerelease or v.is_devrelease):
                out.add(v)
    return sorted(out)


__all__ = ["DownloadError", "INDEX_ENV", "DEFAULT_INDEX", "exact_version", "index_url", "releases", "wheel"]


HUB_ENV = "HF_ENDPOINT"  # huggingface_hub's own setting for another hub (a mirror)
DEFAULT_HUB = "https://huggingface.co"
_ABSENT = "no such model on the hub"
_REPO = re.compile(r"^[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*$")  # ORG/NAME, no `..` path games below


def hub_url() -> str:
    return (os.environ.get(HUB_ENV) or DEFAULT_HUB).rstrip("/")


def hub_config(repo_id: str, into: Path, limit: int) -> Path | None:
    """The `config.json` of hub model `repo_id` (its main revision) in the directory `into`:
    the one already there, else downloaded (that file alone: no weights, no token sent), at
    most `limit` bytes and a JSON object, then renamed into place. None when the hub has no
    such model (HTTP 404, or 401 for a gated or private one). Raises DownloadError."""
    import http.client  # with the network stack, only when downloading (see _get)

    if not _REPO.match(repo_id) or ".." in repo_id:
        raise DownloadError(f"{repo_id!r} is not a hub model id (ORG/NAME)")
    target = Path(into) / ("models--" + repo_id.replace("/", "--")) / "config.json"
    if target.is_file():
        return target
    base = hub_url()
    if not base.startswith(("https://", "http://")):
        raise DownloadError(f"{HUB_ENV}={base!r} is not an http(s) URL")
    url = f"{base}/{repo_id}/resolve/main/config.json"
    try:
        with _get(url, missing=_ABSENT) as r:
            raw = r.read(limit + 1)
    except DownloadError as ex:
        if str(ex) == _ABSENT or " HTTP 401 " in str(ex):
            return None
        raise
    except (OSError, http.client.HTTPException) as ex:
        raise DownloadError(f"cannot download {url} ({getattr(ex, 'strerror', None) or ex})") from None
    if len(raw) > limit:
        raise DownloadError(f"{url} is larger than {limit >> 20} MiB: not a model config; not kept")
    try:
        if not isinstance(json.loads(raw), dict):
            raise ValueError("not a JSON object")
    except ValueError as ex:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise DownloadError(f"{url} is not a JSON config ({ex}); not kept") from None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with replacing(target, durable=False) as out:
            out.write(raw)
    except (WriteError, OSError) as ex:
        raise DownloadError(f"cannot write into {target.parent} ({getattr(ex, 'reason', None) or ex})") from None
    return target
